"""Names draopt adds to the CEL environment.

Expressions are rewritten before compiling (see draopt.cel.rewrite, draopt.cel.cost): these
variables and functions are what the rewritten forms call.  Messages name them back as the
user wrote them (``_RENAMED_BACK``).
"""

from __future__ import annotations

# unknown domain -> empty map (draopt.cel.rewrite._rewrite)
_EMPTY_ATTRS = "__dra_empty_attributes"
_EMPTY_CAP = "__dra_empty_capacity"
_BIND_VAR = "__dra_domain"

# the cost counter (draopt.cel.cost) and comprehensions run from Python (draopt.cel.loops)
_TICK = "__dra_tick"
_LOOP_FN = "__dra_loop"

# transformMap / transformMapEntry built from transformList (draopt.cel.cost._instrument)
_TO_MAP = "__dra_to_map"
_MERGE_MAPS = "__dra_merge_maps"

# format.named() / <Format>.validate(), which return optionals (draopt.cel.rewrite._rewrite_format)
_FORMAT_KNOWN = "__dra_format_known"
_FORMAT_NAMED = "__dra_format_named"
_FORMAT_ERRORS = "__dra_format_errors"

# member calls in both the strings extension and the lists library (draopt.cel.rewrite._rename_members)
# and format, which runs cel-go's formatter (draopt.cel.formatting) rather than cel-cpp's
_FORMAT = "__dra_string_format"
_RENAMED = {"indexOf": "__dra_indexOf", "lastIndexOf": "__dra_lastIndexOf", "format": _FORMAT}
_RENAMED_BACK = {v: k for k, v in _RENAMED.items()}
_RENAMED_BACK.update({_FORMAT_ERRORS: "validate"})
