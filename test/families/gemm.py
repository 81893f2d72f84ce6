"""Test parameters of the gemm family."""
from op_cases_nn import gen_gemm

GENERATORS = {"gemm": gen_gemm}
