"""The CP-SAT model: the encodings of every DRA rule (encodings/), the one placement model (placement),
its reductions (reductions, patterns, colgen) and the per-node model that allocate still uses (node/).
"""
