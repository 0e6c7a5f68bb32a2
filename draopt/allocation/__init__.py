"""allocate and explain: the one-node front (allocate a set of ResourceClaims on a node, as the
scheduler's DRA plugin does) and the explanations of why claims or pods do not fit.
"""
