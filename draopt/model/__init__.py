"""The CP-SAT model: the encodings of every DRA rule (encodings/), the one model builder
(placement.build, for `place` and, on one candidate node, for `allocate`: single_node), its
objectives (objective), its reductions (reductions/, assembled by reductions/chain), patterns
and colgen.
"""
