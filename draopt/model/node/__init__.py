"""Build the CP-SAT model from a Problem, solve it under a policy, decode the solution."""
from draopt.model.node.build import apply, invert
from draopt.model.node.solve import solve_problem

__all__ = ["apply", "invert", "solve_problem"]
