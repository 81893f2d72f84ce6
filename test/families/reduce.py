"""Test parameters of the reduce family."""
from fuzz_cases import fuzz_reduce
from op_cases_nn import gen_argreduce, gen_reduce

GENERATORS = {"reduce_values": gen_reduce, "reduce_indices": gen_argreduce}

# Fuzz case builders (test/test_fuzz.py); a function missing here is fuzzed from GENERATORS' cases.
FUZZ = {"reduce_values": fuzz_reduce, "reduce_indices": fuzz_reduce}
