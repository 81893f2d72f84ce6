"""Test parameters of the softmax family."""
from fuzz_cases import fuzz_softmax
from op_cases_nn import gen_softmax, gen_softmax_bwd

GENERATORS = {"softmax_forward": gen_softmax, "softmax_backward": gen_softmax_bwd}

# Fuzz case builders (test/test_fuzz.py); a function missing here is fuzzed from GENERATORS' cases.
FUZZ = {"softmax_forward": fuzz_softmax, "softmax_backward": fuzz_softmax}
