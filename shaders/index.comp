// variants: f32 f64 i64
// The index family (csrc/graph/families/index.h): gathers, puts, deterministic accumulation,
// nonzero / masked_select. One pass per opcode; lower_index.cpp chains them. Gathers and puts
// move raw bits (any dtype, float64 without shaderFloat64); only OP_IX_ACCUM computes in T.
// Nothing here uses float atomics: integer atomics count and place, and each destination sums
// its contributions alone, in ascending source position.
#version 460
#include "common.glsl"
#include "index.h"

layout(local_size_x = 128) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer AssertRec {
  uint code; uint dim; int64_t value; int64_t size;  // csrc/graph/device_assert.h
};

IxParams P;

uint esz(uint slot) { return dsize(P.dt[slot]); }
uint64_t elem(uint slot, int64_t i) { return P.addr[slot] + uint64_t(i * int64_t(esz(slot))); }

uint64_t ld_bits(uint64_t a, uint sz) {
  if (sz == 8u) return ld_u64(a);
  if (sz == 4u) return uint64_t(ld_word(a));
  return uint64_t(bitfieldExtract(ld_word(a & ~3UL), int(a & 3UL) * 8, int(sz) * 8));
}
void st_raw(uint64_t a, uint64_t bits, uint sz) {
  if (sz == 8u) st_u64(a, bits);
  else if (sz == 4u) st_word(a, uint(bits));
  else st_bits(a, uint(bits), sz);
}
// Nonzero as torch's nonzero and masked_select read it: -0.0 is zero, NaN is not.
bool nz_bits(uint64_t b, uint dt) {
  if (dt == DT_F64) return (b & 0x7fffffffffffffffUL) != 0UL;
  if (dt == DT_F32) return (b & 0x7fffffffUL) != 0UL;
  if (dt == DT_F16 || dt == DT_BF16) return (b & 0x7fffUL) != 0UL;
  return b != 0UL;
}

void report(uint k, int64_t v) {
  if (P.error == 0u || P.assert_addr == 0UL) return;
  AssertRec r = AssertRec(P.assert_addr);
  if (atomicCompSwap(r.code, 0u, P.error) == 0u) {
    r.dim = P.idim[k];
    r.value = v;
    r.size = P.isize[k];
  }
}

// Element offset of iteration element j in the operand whose strides are st_other.
int64_t other_of(uint j) {
  uint rem = j;
  int64_t o = 0;
  for (uint d = 0u; d < P.ndim; ++d) {
    uint n = P.shape[d];
    o += int64_t(rem % n) * P.st_other[d];
    rem /= n;
  }
  return o;
}

// Element offset of iteration element j in the indexed tensor; false when an index is out of
// range (reported when `rep`) or skipped.
bool self_of(uint j, bool rep, out int64_t off) {
  int64_t io[IX_MAX_IDX];
  for (uint k = 0u; k < P.nidx; ++k) io[k] = 0L;
  uint rem = j;
  int64_t so = 0L;
  for (uint d = 0u; d < P.ndim; ++d) {
    uint n = P.shape[d];
    int64_t c = int64_t(rem % n);
    rem /= n;
    so += c * P.st_self[d];
    for (uint k = 0u; k < P.nidx; ++k) io[k] += c * int64_t(P.st_idx[k][d]);
  }
  off = 0L;
  for (uint k = 0u; k < P.nidx; ++k) {
    uint s = P.slot_idx + k;
    uint64_t a = elem(s, io[k]);
    int64_t v = P.dt[s] == DT_I32 ? int64_t(int(ld_word(a))) : int64_t(ld_u64(a));
    if ((P.flags & IX_SKIP) != 0u && v == P.skip) return false;
    int64_t w = (v < 0L && (P.flags & IX_WRAP) != 0u) ? v + P.isize[k] : v;
    if (w < 0L || w >= P.isize[k]) {
      if (rep) report(k, v);
      return false;
    }
    so += w * P.istride[k];
  }
  off = so;
  return true;
}

bool mutated() { return (P.flags & IX_MUTATE) != 0u; }

// ---- gathers and puts ---------------------------------------------------------------------------
void gather(uint j) {
  int64_t so;
  uint src = mutated() ? (j + 1u) % P.numel : j;
  if (!self_of(src, true, so)) return;
  uint sz = esz(P.slot_self);
  st_raw(elem(P.slot_other, other_of(j)), ld_bits(elem(P.slot_self, so), sz), sz);
}

void claim(uint j) {
  int64_t so;
  if (self_of(j, true, so)) atomicMax(Word(P.addr[P.slot_aux] + uint64_t(so) * 4UL).w, j + 1u);
}

void put(uint j) {
  int64_t so;
  if (!self_of(j, false, so) || ld_word(P.addr[P.slot_aux] + uint64_t(so) * 4UL) != j + 1u) return;
  uint sz = esz(P.slot_self);
  uint src = mutated() ? (j + 1u) % P.numel : j;
  uint64_t bits = (P.flags & IX_SCALAR) != 0u ? P.value : ld_bits(elem(P.slot_other, other_of(src)), sz);
  st_raw(elem(P.slot_self, so), bits, sz);
}

// ---- counting, prefix sums, placing -------------------------------------------------------------
shared uint64_t sh[128];

// Exclusive prefix of v over the workgroup (every invocation must call it); total in `all`.
uint64_t wg_exclusive(uint64_t v, out uint64_t all) {
  uint t = gl_LocalInvocationID.x;
  sh[t] = v;
  barrier();
  for (uint o = 1u; o < 128u; o <<= 1) {
    uint64_t add = t >= o ? sh[t - o] : 0UL;
    barrier();
    sh[t] += add;
    barrier();
  }
  uint64_t incl = sh[t];
  all = sh[127];
  barrier();
  return incl - v;
}

uint64_t ld_count(uint slot, uint64_t i) {
  return P.dt[slot] == DT_I64 ? ld_u64(P.addr[slot] + i * 8UL) : uint64_t(ld_word(P.addr[slot] + i * 4UL));
}
void st_count(uint slot, uint64_t i, uint64_t v) {
  if (P.dt[slot] == DT_I64) st_u64(P.addr[slot] + i * 8UL, v);
  else st_word(P.addr[slot] + i * 4UL, uint(v));
}

void count(uint j) {
  int64_t so;
  if (self_of(j, true, so)) atomicAdd(Word(P.addr[P.slot_aux] + uint64_t(so) * 4UL).w, 1u);
}

// Chunk g of offs (8 per invocation): exclusive prefix within the chunk, its total into sums[g].
void scan_local(uint64_t g) {
  if (g >= uint64_t(P.nchunks)) return;  // the grid's spare groups (uniform per workgroup)
  uint t = gl_LocalInvocationID.x;
  uint64_t first = g * uint64_t(P.chunk) + uint64_t(t) * 8UL;
  uint64_t v[8], s = 0UL;
  for (uint e = 0u; e < 8u; ++e) {
    uint64_t i = first + uint64_t(e);
    v[e] = i < uint64_t(P.dest) ? ld_count(P.slot_aux, i) : 0UL;
    s += v[e];
  }
  uint64_t all;
  uint64_t run = wg_exclusive(s, all);
  for (uint e = 0u; e < 8u; ++e) {
    uint64_t i = first + uint64_t(e);
    if (i < uint64_t(P.dest)) st_count(P.slot_aux, i, run);
    run += v[e];
  }
  if (t == 0u) st_count(P.slot_list, g, all);
}

// One workgroup: exclusive prefix of sums[0..nchunks) in place; the total into slot_total if any.
void scan_sums() {
  uint t = gl_LocalInvocationID.x;
  uint64_t carry = 0UL;
  for (uint64_t base = 0UL; base < uint64_t(P.nchunks); base += 1024UL) {
    uint64_t v[8], s = 0UL;
    for (uint e = 0u; e < 8u; ++e) {
      uint64_t i = base + uint64_t(t) * 8UL + uint64_t(e);
      v[e] = i < uint64_t(P.nchunks) ? ld_count(P.slot_list, i) : 0UL;
      s += v[e];
    }
    uint64_t all;
    uint64_t run = carry + wg_exclusive(s, all);
    for (uint e = 0u; e < 8u; ++e) {
      uint64_t i = base + uint64_t(t) * 8UL + uint64_t(e);
      if (i < uint64_t(P.nchunks)) st_count(P.slot_list, i, run);
      run += v[e];
    }
    carry += all;
  }
  if (t == 0u && P.slot_total < 12u) st_count(P.slot_total, 0UL, carry);
}

void scan_add(uint64_t i) {
  if (i >= uint64_t(P.dest)) return;
  st_count(P.slot_aux, i, ld_count(P.slot_aux, i) + ld_count(P.slot_list, i / uint64_t(P.chunk)));
}

void place(uint j) {
  int64_t so;
  if (!self_of(j, false, so)) return;
  uint pos = atomicAdd(Word(P.addr[P.slot_aux] + uint64_t(so) * 4UL).w, 1u);
  st_word(P.addr[P.slot_list] + uint64_t(pos) * 4UL, j);
}

// ---- accumulation: destination d alone, its contributions in ascending source position ----------
uint li(uint64_t base, uint k) { return ld_word(base + uint64_t(k) * 4UL); }
void lset(uint64_t base, uint k, uint v) { st_word(base + uint64_t(k) * 4UL, v); }

void sift(uint64_t base, uint root, uint n) {
  while (true) {
    uint c = 2u * root + 1u;
    if (c >= n) return;
    if (c + 1u < n && li(base, c + 1u) > li(base, c)) c += 1u;
    uint r = li(base, root), x = li(base, c);
    if (r >= x) return;
    lset(base, root, x);
    lset(base, c, r);
    root = c;
  }
}

// Placement order depends on the atomics: sort so that the sum's order does not.
void sort_list(uint64_t base, uint n) {
  if (n <= 32u) {
    for (uint i = 1u; i < n; ++i) {
      uint x = li(base, i), k = i;
      while (k > 0u && li(base, k - 1u) > x) {
        lset(base, k, li(base, k - 1u));
        k -= 1u;
      }
      lset(base, k, x);
    }
    return;
  }
  for (uint i = n / 2u; i > 0u; --i) sift(base, i - 1u, n);
  for (uint end = n - 1u; end > 0u; --end) {
    uint x = li(base, 0u);
    lset(base, 0u, li(base, end));
    lset(base, end, x);
    sift(base, 0u, end);
  }
}

void accumulate(uint64_t d) {
  if (d >= uint64_t(P.dest)) return;
  uint64_t offs = P.addr[P.slot_aux];
  uint end = ld_word(offs + d * 4UL), start = d > 0UL ? ld_word(offs + (d - 1UL) * 4UL) : 0u;
  if (end == start) return;
  uint n = end - start;
  uint64_t list = P.addr[P.slot_list] + uint64_t(start) * 4UL;
  sort_list(list, n);
  if (mutated()) n -= 1u;  // test hook: the last contribution is lost
  uint dts = P.dt[P.slot_self], dtv = P.dt[P.slot_other];
  T a = from_raw(P.value);  // alpha in the compute type
#if defined(CT_I64)
  // int(1.0 / count) and bool(1.0 / count), as torch
  if ((P.flags & IX_BY_FREQ) != 0u && dts != DT_BOOL && end - start != 1u) a = T(0);
#else
  if ((P.flags & IX_BY_FREQ) != 0u) a = a * div_ieee(T(1), T(end - start));
#endif
  bool scaled = a != T(1);
  uint64_t dst = P.addr[P.slot_self] + d * uint64_t(dsize(dts));
  precise T acc = load_T(dst, dts);
  for (uint k = 0u; k < n; ++k) {
    T v = load_T(elem(P.slot_other, other_of(li(list, k))), dtv);
    precise T term = scaled ? v * a : v;
    acc = acc + term;
  }
  store_T(dst, dts, acc);
}

// ---- nonzero / masked_select: chunk g, 8 consecutive elements per invocation ------------------
// Element `lin` (row-major over the iteration) of the mask, whose strides are st_other.
bool mask_at(uint64_t lin) {
  if (lin >= uint64_t(P.numel)) return false;
  uint slot = P.slot_other;
  return nz_bits(ld_bits(elem(slot, other_of(uint(lin))), esz(slot)), P.dt[slot]);
}

void nz_count(uint64_t g) {
  if (g >= uint64_t(P.nchunks)) return;
  uint t = gl_LocalInvocationID.x;
  uint64_t first = g * uint64_t(P.chunk) + uint64_t(t) * 8UL;
  uint64_t s = 0UL;
  for (uint e = 0u; e < 8u; ++e) s += mask_at(first + uint64_t(e)) ? 1UL : 0UL;
  uint64_t all;
  wg_exclusive(s, all);
  if (t == 0u) st_count(P.slot_list, g, all);
}

void nz_write(uint64_t g, bool coords) {
  if (g >= uint64_t(P.nchunks)) return;
  uint t = gl_LocalInvocationID.x;
  uint64_t first = g * uint64_t(P.chunk) + uint64_t(t) * 8UL;
  bool m[8];
  uint64_t s = 0UL;
  for (uint e = 0u; e < 8u; ++e) {
    m[e] = mask_at(first + uint64_t(e));
    s += m[e] ? 1UL : 0UL;
  }
  uint64_t all;
  uint64_t row = ld_count(P.slot_list, g) + wg_exclusive(s, all);
  for (uint e = 0u; e < 8u; ++e) {
    if (!m[e]) continue;
    uint lin = uint(first) + e;
    if (coords) {  // out [total, ndim] int64, contiguous; dims here are innermost first
      uint rem = lin;
      for (uint d = 0u; d < P.ndim; ++d) {
        uint n = P.shape[d];
        int64_t c = int64_t(rem % n) + (mutated() && d == 0u ? 1L : 0L);
        rem /= n;
        st_u64(P.addr[0] + (row * uint64_t(P.ndim) + uint64_t(P.ndim - 1u - d)) * 8UL, uint64_t(c));
      }
    } else {  // out [total] = the indexed tensor (strides st_self) where the mask is set
      uint src = mutated() ? (lin + 1u) % P.numel : lin;
      uint rem = src;
      int64_t so = 0L;
      for (uint d = 0u; d < P.ndim; ++d) {
        uint n = P.shape[d];
        so += int64_t(rem % n) * P.st_self[d];
        rem /= n;
      }
      uint sz = esz(P.slot_self);
      st_raw(elem(0u, int64_t(row)), ld_bits(elem(P.slot_self, so), sz), sz);
    }
    row += 1UL;
  }
}

void main() {
  P = IxParams(pc.params);
  uint64_t i = global_index(), g = group_index();
  uint j = uint(i);
  bool in_range = i < uint64_t(P.numel);
  switch (OP) {
    case OP_IX_GATHER: if (in_range) gather(j); break;
    case OP_IX_CLAIM: if (in_range) claim(j); break;
    case OP_IX_PUT: if (in_range) put(j); break;
    case OP_IX_COUNT: if (in_range) count(j); break;
    case OP_IX_SCAN_LOCAL: scan_local(g); break;
    case OP_IX_SCAN_SUMS: scan_sums(); break;
    case OP_IX_SCAN_ADD: scan_add(i); break;
    case OP_IX_PLACE: if (in_range) place(j); break;
    case OP_IX_ACCUM: accumulate(i); break;
    case OP_IX_NZ_COUNT: nz_count(g); break;
    case OP_IX_NONZERO: nz_write(g, true); break;
    case OP_IX_SELECT: nz_write(g, false); break;
  }
}
