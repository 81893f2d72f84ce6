"""Test parameters of the softmax family."""
from op_cases_nn import gen_softmax, gen_softmax_bwd

GENERATORS = {"softmax_forward": gen_softmax, "softmax_backward": gen_softmax_bwd}
