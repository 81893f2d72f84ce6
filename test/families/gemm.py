"""Test parameters of the gemm family."""
from fuzz_cases import fuzz_gemm
from op_cases_nn import gen_gemm

GENERATORS = {"gemm": gen_gemm}

# Fuzz case builders (test/test_fuzz.py); a function missing here is fuzzed from GENERATORS' cases.
FUZZ = {"gemm": fuzz_gemm}
