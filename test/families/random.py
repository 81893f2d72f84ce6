"""Test parameters of the random family: none for test_ops. Its rows are internal (aten/random.cpp
registers the random ops, which take generators); test/test_random.py tests them against the
oracle's stream, statistics and torch's semantics."""
GENERATORS = {}
