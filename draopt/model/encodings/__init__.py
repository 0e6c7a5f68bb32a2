"""CP-SAT encodings, one module per constraint family.

Every module exposes `encode(model: ModelData) -> None`, adding its variables and
constraints to `model.cp`; `draopt.model.node.build` calls them in order. Each is testable
alone (tests/test_encodings.py) against the checker and the reference search.
"""
