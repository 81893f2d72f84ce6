"""Test parameters of the reduce family."""
from op_cases_nn import gen_argreduce, gen_reduce

GENERATORS = {"reduce_values": gen_reduce, "reduce_indices": gen_argreduce}
