"""`draopt validate`: what a Kubernetes API server would reject, before you apply it.

Mirrors `pkg/apis/resource/validation/validation.go` (kubernetes/kubernetes), one module per
object kind: device_class, resource_slice, resource_claim (and ResourceClaimTemplate),
device_taint_rule, pod; with node_selector and quantities (shared field checks), limits
(resource.k8s.io/v1's), findings (the report), context (the per-object collector), expressions
(CEL fields, compiled with draopt.cel), documents (the entry point: decoding, conversion, the
rules per kind) and command (`draopt validate`).  The name formats are draopt.kube.names.

Layer: above draopt.cel, below the DRA rules (draopt.dra).
"""

from draopt.validation.command import cmd_validate, format_text, register
from draopt.validation.documents import object_ref, read_documents, validate_documents, validate_files
from draopt.validation.findings import Finding, Note, Report

__all__ = [
    "Finding",
    "Note",
    "Report",
    "read_documents",
    "validate_documents",
    "validate_files",
    "register",
    "cmd_validate",
    "object_ref",
    "format_text",
]
