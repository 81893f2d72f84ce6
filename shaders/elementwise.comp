// variants: f32 f64 i64
// Every elementwise op row of graph/ops.def: out[i] = OP(a[i], b[i]) in the compute type T.
#version 460
#define PC_EW
#include "common.glsl"
#include "ew_ops.glsl"

layout(local_size_x = 128) in;

void main() {
  uint64_t i = global_index();
  if (i >= uint64_t(pc.numel)) return;
  uint dto = pc.dtypes & 0xffu, dta = (pc.dtypes >> 8) & 0xffu, dtb = (pc.dtypes >> 16) & 0xffu;
  uint dtc = pc.dtypes >> 24;  // the dtype the op computes in
  uint64_t oo, oa, ob;
  if ((pc.flags & EW_CONTIGUOUS) != 0u) {
    oo = i * dsize(dto);
    oa = i * dsize(dta);
    ob = i * dsize(dtb);
  } else {  // byte offsets fit in 32 bits (lower checks)
    uint rem = uint(i);
    int so = 0, sa = 0, sb = 0;
    for (uint d = 0u; d < pc.ndim; ++d) {
      uint n = uint(pc.shape[d]);
      int c = int(rem % n);
      rem /= n;
      so += c * pc.st_out[d];
      sa += c * pc.st_a[d];
      sb += c * pc.st_b[d];
    }
    oo = uint64_t(int64_t(so));
    oa = uint64_t(int64_t(sa));
    ob = uint64_t(int64_t(sb));
  }
  if (OP == OP_COPY && dto == dta) {  // same dtype: raw bits, in every variant (f64 without fp64)
    uint sz = dsize(dto);
    if (sz == 8u) st_u64(pc.dst + oo, ld_u64(pc.a + oa));
    else if (sz == 4u) st_word(pc.dst + oo, ld_word(pc.a + oa));
    else st_bits(pc.dst + oo, bitfieldExtract(ld_word((pc.a + oa) & ~3UL), int((pc.a + oa) & 3UL) * 8, int(sz) * 8), sz);
    return;
  }
#if !defined(CT_F64)
  if (OP == OP_COPY && dta == DT_F64 && dto == DT_BOOL) {  // any nonzero double, however small
    st_bits(pc.dst + oo, (ld_u64(pc.a + oa) << 1) != 0UL ? 1u : 0u, 1u);
    return;
  }
#endif
#if defined(CT_I64)
  if (OP == OP_COPY && dta == DT_F64 && dsize(dto) < 8u) {  // narrow targets: x86's 32-bit convert
    int64_t v = f64bits_to_i64(ld_u64(pc.a + oa));
    store_T(pc.dst + oo, dto, (v >= -2147483648L && v <= 2147483647L) ? v : -2147483648L);
    return;
  }
#endif
  T a = T(0), b = T(0);
  if (pc.a != 0UL) a = load_T(pc.a + oa, dta);
  if ((pc.flags & EW_SCALAR_B) != 0u) b = from_raw(pc.bscalar);
  else if (pc.b != 0UL) b = load_T(pc.b + ob, dtb);
  if (pc.a != 0UL && dta != dtc) a = round_T(a, dtc);
  if ((pc.flags & EW_SCALAR_B) == 0u && pc.b != 0UL && dtb != dtc) b = round_T(b, dtc);
  T old = T(0);
  if (OP == OP_WHERE) old = load_T(pc.dst + oo, dto);
  T r = ew_apply(OP, a, b, pc.alpha, pc.bscalar, old, pc.a != 0UL, dto, dtc);
  if (dto != dtc) r = round_T(r, dtc);
  store_T(pc.dst + oo, dto, r);
}
