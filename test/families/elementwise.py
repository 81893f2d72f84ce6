"""Test parameters of the elementwise family: a case generator per aten-side function (ATEN column)."""
from fuzz_cases import fuzz_elementwise
from op_cases import (gen_addcdiv, gen_addcmul, gen_binary, gen_clamp, gen_compare, gen_fill, gen_grad_bwd, gen_lerp,
                      gen_masked_fill, gen_threshold_bwd, gen_unary, gen_where)

GENERATORS = {
    "ew_unary": gen_unary, "ew_unary_float": gen_unary, "ew_bitwise_not": gen_unary,
    "ew_binary": gen_binary, "ew_binary_float": gen_binary, "ew_compare": gen_compare,
    "ew_threshold_bwd": gen_threshold_bwd, "ew_grad_bwd": gen_grad_bwd, "ew_masked_fill": gen_masked_fill,
    "ew_clamp": gen_clamp, "ew_where": gen_where, "ew_fill": gen_fill,
    "ew_addcmul": gen_addcmul, "ew_addcdiv": gen_addcdiv, "ew_lerp": gen_lerp,
}

# Fuzz case builders (test/test_fuzz.py); a function missing here is fuzzed from GENERATORS' cases.
FUZZ = {a: fuzz_elementwise for a in GENERATORS}
