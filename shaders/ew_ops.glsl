// The elementwise ops, shared by elementwise.comp (op = its specialization constant, so the switch
// folds to one case) and fused.comp (op read from the fused program): one definition, so a fused
// chain computes the same bits as the nodes run one by one. OP_* tokens here are numbered with
// those of the .comp files (setup.py scans both).
// a, b: operands already rounded to the compute dtype dtc; old: the output's previous value
// (where, addcmul_, addcdiv_, lerp_: ew_reads_old);
// s0, s1: the node's raw scalars (ElementwiseArgs); has_a: the node has operand a.
T ew_apply(int op, T a, T b, uint64_t s0, uint64_t s1, T old, bool has_a, uint dto, uint dtc) {
  T alpha = from_raw(s0);
  // threshold_backward of float16/bfloat16 compares in float, as torch's CPU kernel (aten: the scalar)
  if (op == OP_THRESHOLD_BWD || op == OP_CLAMP)
    alpha = round_T(alpha, op == OP_THRESHOLD_BWD && (dtc == DT_F16 || dtc == DT_BF16) ? DT_F32 : dtc);
  precise T r = T(0);  // precise: a + alpha*b must not become an fma (Vulkan leaves fma unfused)
  switch (op) {
    case OP_FILL: r = alpha; break;
    case OP_COPY: r = a; break;
    case OP_NEG: r = -a; break;
#if defined(CT_I64)
    case OP_ABS: r = a < T(0) ? -a : a; break;
#else
    case OP_ABS: r = abs(a); break;  // clears the sign bit: abs(-0) = 0
#endif
    case OP_RELU: r = a < T(0) ? T(0) : a; break;  // relu(-0) = -0, relu(NaN) = NaN as torch
    case OP_SIGN: r = T(T(0) < a ? 1 : 0) - T(a < T(0) ? 1 : 0); break;  // sign(NaN) = sign(-0) = +0
#if defined(CT_I64)
    case OP_CEIL: case OP_FLOOR: r = a; break;
#else
    case OP_CEIL: r = ceil(a); break;
    case OP_FLOOR: r = floor(a); break;
    case OP_EXP: r = exp_T(a); break;
    case OP_LOG: r = log_T(a); break;
    case OP_SQRT: r = sqrt_T(a); break;
    case OP_SIGMOID: r = div_ieee(T(1), T(1) + exp_T(-a)); break;
    case OP_SIGMOID_BWD: r = a * (T(1) - b) * b; break;  // a = grad_output, b = output
    case OP_SILU: r = div_ieee(a, T(1) + exp_T(-a)); break;
    case OP_TANH: r = tanh_T(a); break;
    case OP_ERF: r = erf_T(a); break;
    // a = grad_output, b = output. 1 - b*b as (1 - b)(1 + b): no cancellation where b is near 1
    // (torch CPU's fma rounds 1 - b*b once; Vulkan promises no fused fma): TOL_TANH_BWD
    case OP_TANH_BWD: r = a * ((T(1) - b) * (T(1) + b)); break;
    case OP_RECIPROCAL: r = div_ieee(T(1), a); break;
    case OP_RSQRT: r = div_ieee(T(1), sqrt_T(a)); break;
    case OP_DIV: r = div_ieee(a, b); break;
#endif
    case OP_ADD: r = a + alpha * b; break;
    case OP_SUB: r = a - alpha * b; break;
    case OP_MUL: r = a * b; break;
    case OP_MAX: r = max_nan(a, b); break;
    case OP_MIN: r = min_nan(a, b); break;
#if defined(CT_I64)
    case OP_AND: r = a & b; break;
    case OP_OR: r = a | b; break;
    case OP_XOR: r = a ^ b; break;
    case OP_NOT: r = a ^ alpha; break;  // alpha: -1 for integers, 1 for bool (aten/elementwise.cpp)
#endif
    case OP_EQ: r = (a == b) ? T(1) : T(0); break;
    case OP_NE: r = (a == b) ? T(0) : T(1); break;  // NaN != x is true
    case OP_LT: r = (a < b) ? T(1) : T(0); break;
    case OP_LE: r = (a <= b) ? T(1) : T(0); break;
    case OP_GT: r = (a > b) ? T(1) : T(0); break;
    case OP_GE: r = (a >= b) ? T(1) : T(0); break;
    case OP_CLAMP: {  // std::min(std::max(a, lo), hi), NaN self kept; lo = alpha, hi = s1
      T hi = round_T(from_raw(s1), dtc);
      T x = a < alpha ? alpha : a;
      r = is_nan(a) ? a : (hi < x ? hi : x);
      break;
    }
    // a = self, b = condition; else the output's value (aten copied `other` there)
    case OP_WHERE: r = nonzero(b) ? a : (dto != dtc ? round_T(old, dtc) : old); break;
    case OP_MASKED_FILL: r = nonzero(b) ? alpha : a; break;  // a = self, b = mask, alpha = value
    // In place on self, the output's old value (reads_out), in torch CPU's order, each operation
    // rounded in T and the first operand's NaN kept, as OP_ADD / OP_MUL do:
    // addcmul_: self + (value * t1) * t2 (a = t1, b = t2, alpha = value)
    case OP_ADDCMUL: {
      const T o = dto != dtc ? round_T(old, dtc) : old;
      precise T m = alpha * a;
      if (is_nan(alpha)) m = alpha;
      precise T p = m * b;
      if (is_nan(m)) p = m;
      r = o + p;
      if (is_nan(o)) r = o;
      break;
    }
#if !defined(CT_I64)
    // addcdiv_: self + (value * t1) / t2 (a = t1, b = t2, alpha = value); the division as OP_DIV's
    case OP_ADDCDIV: {
      const T o = dto != dtc ? round_T(old, dtc) : old;
      precise T m = alpha * a;
      if (is_nan(alpha)) m = alpha;
      const T q = div_ieee(m, b);
      r = o + q;
      if (is_nan(o)) r = o;
      break;
    }
    // lerp_: |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)  (a = end, alpha = w)
    case OP_LERP: {
      const T o = dto != dtc ? round_T(old, dtc) : old;
      precise T d = a - o;
      if (is_nan(a)) d = a;
      if (abs(alpha) < T(0.5)) {
        precise T m = alpha * d;
        if (is_nan(alpha)) m = alpha;
        r = o + m;
        if (is_nan(o)) r = o;
      } else {
        precise T m = d * (T(1) - alpha);
        if (is_nan(d)) m = d;
        r = a - m;
        if (is_nan(a)) r = a;
      }
      break;
    }
#endif
    case OP_THRESHOLD_BWD: r = (a <= alpha) ? T(0) : b; break;  // TensorIterator order: a = self, b = grad
  }
  // Two NaN operands: which one the hardware returns depends on the operand order the compiler
  // picked (it may commute), so the fused and unfused pipelines differed in the NaN's sign. Keep
  // a's, as x86 (torch CPU) does.
  if ((op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_SIGMOID_BWD) && is_nan(a)) r = a;
  return r;
}

// The ops that read the output's previous value (ElementwiseArgs::reads_out).
bool ew_reads_old(int op) { return op == OP_WHERE || op == OP_ADDCMUL || op == OP_ADDCDIV || op == OP_LERP; }

// v as a load would give it back after store_T(v) to dtype dt: what a later node reads. Unlike
// round_T, exact for every dtype and variant (integers through int64 and float64 through its bits).
T reload_T(T v, uint dt) {
  switch (dt) {
    case DT_I64: return T(to_int(v, true));
    case DT_F16: return FROM_F32(f16_to_f32(f32_to_f16(to_f32(v))));
    case DT_BF16: return FROM_F32(uintBitsToFloat(f32_to_bf16(to_f32(v)) << 16));
    case DT_F32: return FROM_F32(uintBitsToFloat(floatBitsToUint(to_f32(v))));
    case DT_F64:
#if defined(CT_F64)
      return v;
#elif defined(CT_F32)
      return f64bits_to_f32(f32_to_f64bits(v));
#else
      return f64bits_to_i64(i64_to_f64bits(v));
#endif
  }
  return round_T(v, dt);  // bool and the narrow integers: round_T is the reload
}
