"""Build the per-node CP-SAT model from a Problem (allocate's; being replaced by the cluster model)."""
from draopt.model.node.build import apply, invert

__all__ = ["apply", "invert"]
