"""The generator for each op-table kind. A kind missing here fails test_ops loudly."""
from op_cases import gen_binary, gen_clamp, gen_compare, gen_fill, gen_grad_bwd, gen_masked_fill, gen_threshold_bwd, gen_unary, gen_where
from op_cases_nn import (gen_argreduce, gen_gemm, gen_nll, gen_nll_bwd, gen_reduce, gen_softmax,
                         gen_softmax_bwd)

GENERATORS = {
    "K_UNARY": gen_unary, "K_UNARY_FLOAT": gen_unary, "K_BINARY": gen_binary, "K_BINARY_FLOAT": gen_binary,
    "K_COMPARE": gen_compare, "K_THRESHOLD_BWD": gen_threshold_bwd, "K_GRAD_BWD": gen_grad_bwd, "K_MASKED_FILL": gen_masked_fill, "K_CLAMP": gen_clamp, "K_WHERE": gen_where, "K_FILL": gen_fill,
    "K_REDUCE": gen_reduce, "K_ARGREDUCE": gen_argreduce, "K_GEMM": gen_gemm, "K_SOFTMAX": gen_softmax,
    "K_SOFTMAX_BWD": gen_softmax_bwd, "K_NLL": gen_nll, "K_NLL_BWD": gen_nll_bwd,
}
