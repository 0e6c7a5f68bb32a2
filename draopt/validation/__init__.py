"""`draopt validate`'s rules: what a Kubernetes API server would reject (public names: draopt.validate).

Mirrors `pkg/apis/resource/validation/validation.go` (kubernetes/kubernetes), one module per
object kind: device_class, resource_slice, resource_claim (and ResourceClaimTemplate),
device_taint_rule, pod; with node_selector and quantities (shared field checks), names
(apimachinery's name formats), limits (resource.k8s.io/v1's), findings (the report), context
(the per-object collector), documents (the entry point: decoding, conversion, the rules per kind)
and command (`draopt validate`).

Layers: the rules belong to the Kubernetes objects layer and import no CEL.  A CEL expression
field is compiled through the ExpressionCheck the collector is given
(draopt.validation.context); draopt.validation.expressions implements it on draopt.cel, and only
it and the modules above it (documents, command) import draopt.cel.  draopt.cel in turn imports
draopt.validation.names (its format library checks the name formats), which imports nothing of
draopt.  This ``__init__`` imports nothing, so importing draopt.validation.names loads no CEL;
tests/test_import_layers.py keeps these directions.
"""
