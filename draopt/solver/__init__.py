"""Build the CP-SAT model from a Problem, solve it under a policy, decode the solution."""
from .build import apply, invert
from .solve import solve_problem

__all__ = ["apply", "invert", "solve_problem"]
