"""The DRA rules on one node: the device inventory a node sees, a claim set prepared as a problem, the
plain-Python first-fit search (reference), the solver-independent checker, decoding into
AllocationResults, and what a DeviceTaintRule would evict.  Below the CP-SAT model.
"""
