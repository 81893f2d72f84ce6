// What the weight gradient's two kernels share (shaders/conv_wgrad.comp, conv_wtile.comp): the
// term order and addressing, which must agree for the two to give the same bytes, and the partial
// sums conv_wtile.comp writes and conv_wgrad.comp's CONV_FROM_PARTIALS reads: [128 lanes][result
// elements] in the compute type. Include after common.glsl and conv.h.
#if defined(CT_F64)
#define DT_PARTIAL DT_F64
#define PSIZE 8UL
#else
#define DT_PARTIAL DT_F32
#define PSIZE 4UL
#endif

// Element offset of [n, c, p] under the strides st ([n, c, d0, d1, d2]).
int64_t at5(const int st[8], int n, int c, ivec3 p) {
  return int64_t(n) * st[0] + int64_t(c) * st[1] + int64_t(p.x) * st[2] + int64_t(p.y) * st[3] + int64_t(p.z) * st[4];
}

// Term j of a result element's sum, terms (n, o) over [N, Ps] with o innermost: its batch index n
// (returned) and position o.
int term_at(uint j, uint per_n, ivec3 ps, out ivec3 o) {
  uint rem = j % per_n;
  o.z = int(rem % uint(ps.z)); rem /= uint(ps.z);
  o.y = int(rem % uint(ps.y));
  o.x = int(rem / uint(ps.y));
  return int(j / per_n);
}
