"""Test parameters of the nll family."""
from fuzz_cases import fuzz_nll
from op_cases_nn import gen_nll, gen_nll_bwd

GENERATORS = {"nll_forward": gen_nll, "nll_backward": gen_nll_bwd}

# Fuzz case builders (test/test_fuzz.py); a function missing here is fuzzed from GENERATORS' cases.
FUZZ = {"nll_forward": fuzz_nll, "nll_backward": fuzz_nll}
