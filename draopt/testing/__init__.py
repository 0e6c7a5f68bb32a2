"""Test instances: generators of random clusters, claims and planning scenarios used by the tests and
benchmarks.  Not part of the product; nothing in draopt but draopt.testing imports it.
"""
