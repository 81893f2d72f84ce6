// variants: f32 f64 i64
// The index family (csrc/graph/families/index.h): gathers, puts, deterministic accumulation,
// nonzero / masked_select. One pass per opcode; lower_index.cpp chains them. Gathers and puts
// move raw bits (any dtype, float64 without shaderFloat64); only OP_IX_ACCUM computes in T.
// Nothing here uses float atomics: integer atomics claim, count and place (in the scratch whose
// layout shaders/index.h describes), and each destination sums its contributions alone, in
// ascending source position.
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


// ---- gathers and puts ---------------------------------------------------------------------------
void gather(uint j) {
  int64_t so;
  uint src = j;
  if (!self_of(src, true, so)) return;
  uint sz = esz(P.slot_self);
  st_raw(elem(P.slot_other, other_of(j)), ld_bits(elem(P.slot_self, so), sz), sz);
}

// ---- slots: the destinations a put or an accumulation writes, grouped ---------------------------
uint ld_w(uint64_t base, uint64_t i) { return ld_word(base + i * 4UL); }
// Scratch (slots, keys, offsets, sums, lists, the total) is stored without common.glsl's store
// helpers: test/broken_shaders.py corrupts those to break the results, and must not break the
// positions later passes follow (they would write out of bounds).
void st_scratch(uint64_t a, uint v) { Word(a).w = v; }
void st_scratch64(uint64_t a, uint64_t v) {
  uvec2 p = unpackUint2x32(v);
  Word(a).w = p.x;
  Word(a + 4UL).w = p.y;
}
void st_w(uint64_t base, uint64_t i, uint v) { st_scratch(base + i * 4UL, v); }

// The slot of iteration element j's destination (IX_NO_SLOT when its index is out of range or
// skipped), recorded in slot_of[j]. Hash mode: open addressing over `slots` (a power of two,
// at least twice the elements), keyed by destination + 1; which slot a destination gets depends
// on the order of the atomics, what it gathers does not.
uint insert(uint j) {
  int64_t so;
  uint s = IX_NO_SLOT;
  if (self_of(j, true, so)) {
    uint key = uint(so);
    if ((P.flags & IX_DIRECT) != 0u) {
      s = key;
    } else {
      s = (key * 2654435769u) >> P.shift;
      while (true) {
        uint prev = atomicCompSwap(Word(P.keys + uint64_t(s) * 4UL).w, 0u, key + 1u);
        if (prev == 0u || prev == key + 1u) break;
        s = (s + 1u) & (P.slots - 1u);
      }
    }
  }
  st_w(P.slot_of, uint64_t(j), s);
  return s;
}

uint64_t dest_of(uint s) { return (P.flags & IX_DIRECT) != 0u ? uint64_t(s) : uint64_t(ld_w(P.keys, uint64_t(s)) - 1u); }

void zero(uint64_t i) {
  if (i < uint64_t(P.zero_words)) st_w(P.keys, i, 0u);
}

void claim(uint j) {
  uint s = insert(j);
  if (s != IX_NO_SLOT) atomicMax(Word(P.aux + uint64_t(s) * 4UL).w, j + 1u);
}

void put(uint j) {
  uint s = ld_w(P.slot_of, uint64_t(j));
  if (s == IX_NO_SLOT || ld_w(P.aux, uint64_t(s)) != j + 1u) return;
  uint sz = esz(P.slot_self);
  uint src = j;
  uint64_t bits = (P.flags & IX_SCALAR) != 0u ? P.value : ld_bits(elem(P.slot_other, other_of(src)), sz);
  st_raw(elem(P.slot_self, int64_t(dest_of(s))), bits, sz);
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

bool wide() { return (P.flags & IX_SUMS_WIDE) != 0u; }
uint64_t ld_sum(uint64_t i) { return wide() ? ld_u64(P.sums + i * 8UL) : uint64_t(ld_w(P.sums, i)); }
void st_sum(uint64_t i, uint64_t v) {
  if (wide()) st_scratch64(P.sums + i * 8UL, v);
  else st_w(P.sums, i, uint(v));
}

void count(uint j) {
  uint s = insert(j);
  if (s != IX_NO_SLOT) atomicAdd(Word(P.aux + uint64_t(s) * 4UL).w, 1u);
}

// Chunk g of the slot counts (8 per invocation): offs = the exclusive prefix within the chunk,
// sums[g] = the chunk's total.
void scan_local(uint64_t g) {
  if (g >= uint64_t(P.nchunks)) return;  // the grid's spare groups (uniform per workgroup)
  uint t = gl_LocalInvocationID.x;
  uint64_t first = g * uint64_t(P.chunk) + uint64_t(t) * 8UL;
  uint64_t v[8], s = 0UL;
  for (uint e = 0u; e < 8u; ++e) {
    uint64_t i = first + uint64_t(e);
    v[e] = i < uint64_t(P.slots) ? uint64_t(ld_w(P.aux, i)) : 0UL;
    s += v[e];
  }
  uint64_t all;
  uint64_t run = wg_exclusive(s, all);
  for (uint e = 0u; e < 8u; ++e) {
    uint64_t i = first + uint64_t(e);
    if (i < uint64_t(P.slots)) st_w(P.offs, i, uint(run));
    run += v[e];
  }
  if (t == 0u) st_sum(g, all);
}

// One workgroup: exclusive prefix of sums[0..nchunks) in place; the total into `total` if any.
void scan_sums() {
  uint t = gl_LocalInvocationID.x;
  uint64_t carry = 0UL;
  for (uint64_t base = 0UL; base < uint64_t(P.nchunks); base += 1024UL) {
    uint64_t v[8], s = 0UL;
    for (uint e = 0u; e < 8u; ++e) {
      uint64_t i = base + uint64_t(t) * 8UL + uint64_t(e);
      v[e] = i < uint64_t(P.nchunks) ? ld_sum(i) : 0UL;
      s += v[e];
    }
    uint64_t all;
    uint64_t run = carry + wg_exclusive(s, all);
    for (uint e = 0u; e < 8u; ++e) {
      uint64_t i = base + uint64_t(t) * 8UL + uint64_t(e);
      if (i < uint64_t(P.nchunks)) st_sum(i, run);
      run += v[e];
    }
    carry += all;
  }
  if (t == 0u && P.total != 0UL) st_scratch64(P.total, carry);
}

// Element j into its slot's bucket: buckets lie in slot order in `list`.
void place(uint j) {
  uint s = ld_w(P.slot_of, uint64_t(j));
  if (s == IX_NO_SLOT) return;
  uint pos = atomicAdd(Word(P.offs + uint64_t(s) * 4UL).w, 1u) + uint(ld_sum(uint64_t(s / P.chunk)));
  st_w(P.list, uint64_t(pos), j);
}

// ---- accumulation: each slot (one destination) alone, its contributions in ascending position ---
uint li(uint64_t base, uint k) { return ld_word(base + uint64_t(k) * 4UL); }
void lset(uint64_t base, uint k, uint v) { st_scratch(base + uint64_t(k) * 4UL, v); }

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

void accumulate(uint64_t sl) {
  if (sl >= uint64_t(P.slots)) return;
  uint s = uint(sl), n = ld_w(P.aux, sl);
  if (n == 0u) return;
  uint end = ld_w(P.offs, sl) + uint(ld_sum(sl / uint64_t(P.chunk))), start = end - n;  // offs: after PLACE
  uint64_t list = P.list + uint64_t(start) * 4UL;
  sort_list(list, n);
  uint cnt = n;
  uint dts = P.dt[P.slot_self], dtv = P.dt[P.slot_other];
  T a = from_raw(P.value);  // alpha in the compute type
#if defined(CT_I64)
  // int(1.0 / count) and bool(1.0 / count), as torch
  if ((P.flags & IX_BY_FREQ) != 0u && dts != DT_BOOL && cnt != 1u) a = T(0);
#else
  if ((P.flags & IX_BY_FREQ) != 0u) a = a * div_ieee(T(1), T(cnt));
#endif
  bool scaled = a != T(1);
  uint64_t dst = P.addr[P.slot_self] + dest_of(s) * uint64_t(dsize(dts));
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
  uint slot = P.slot_mask;
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
  if (t == 0u) st_sum(g, all);
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
  uint64_t row = ld_sum(g) + wg_exclusive(s, all);
  for (uint e = 0u; e < 8u; ++e) {
    if (!m[e]) continue;
    uint lin = uint(first) + e;
    if (coords) {  // out [total, ndim] int64, contiguous; dims here are innermost first
      uint rem = lin;
      for (uint d = 0u; d < P.ndim; ++d) {
        uint n = P.shape[d];
        int64_t c = int64_t(rem % n);
        rem /= n;
        st_u64(P.addr[0] + (row * uint64_t(P.ndim) + uint64_t(P.ndim - 1u - d)) * 8UL, uint64_t(c));
      }
    } else {  // out [total] = the indexed tensor (strides st_self) where the mask is set
      uint src = lin;
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
    case OP_IX_ZERO: zero(i); break;
    case OP_IX_PLACE: if (in_range) place(j); break;
    case OP_IX_ACCUM: accumulate(i); break;
    case OP_IX_NZ_COUNT: nz_count(g); break;
    case OP_IX_NONZERO: nz_write(g, true); break;
    case OP_IX_SELECT: nz_write(g, false); break;
  }
}
