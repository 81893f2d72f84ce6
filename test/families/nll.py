"""Test parameters of the nll family."""
from op_cases_nn import gen_nll, gen_nll_bwd

GENERATORS = {"nll_forward": gen_nll, "nll_backward": gen_nll_bwd}
