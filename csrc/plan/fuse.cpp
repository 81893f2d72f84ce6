// Fusion of elementwise chains (docs/fusion.md). A group is a run of consecutive elementwise
// nodes with one output shape and one shader variant. Every invocation of the fused shader runs
// all steps for one element index, so the group is legal when no two threads can touch the same
// bytes in a different order than the nodes would: any two operands of the group whose bytes
// overlap, one of them written, must be the very same tensor view (address, dtype, sizes,
// strides). Then a value written and read again stays in a register, and a write is stored only
// where it is the view's last write in the group and something may still read it.
#include "plan/fuse.h"

#include <algorithm>
#include <memory>

#include "core/coalesce.h"
#include "util/env.h"

namespace vkml::plan {
namespace {

using A = ElementwiseArgs;
constexpr size_t kMaxOps = 32;  // views a group may touch before dead ones are dropped

bool same_layout(const TensorDesc& x, const TensorDesc& y) {
  if (x.addr != y.addr || x.dtype != y.dtype || x.ndim != y.ndim) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.sizes[d] != y.sizes[d] || (x.sizes[d] != 1 && x.strides[d] != y.strides[d])) return false;
  return true;
}

bool overlap(const TensorDesc& x, const TensorDesc& y) {
  const uint64_t xe = x.addr + uint64_t(x.span_bytes()), ye = y.addr + uint64_t(y.span_bytes());
  return x.addr < ye && y.addr < xe;
}

// Whether n can be a step of a fused node: an elementwise node the fused shader computes exactly
// as elementwise.comp does (not the raw-bit copies and float64 special cases of that shader).
bool fusable(const Node& n, const Limits& lim) {
  if (op_info(n.op).family != Family::elementwise || n.nout != 1 || n.nin > 2) return false;
  const TensorDesc& o = n.t[A::out];
  const int64_t numel = o.numel();
  if (numel == 0 || numel > int64_t(UINT32_MAX) || o.addr == 0) return false;
  for (int d = 0; d < o.ndim; ++d)
    if (o.sizes[d] > 1 && o.strides[d] <= 0) return false;  // written twice, or backwards
  const A& args = n.as<A>();
  for (int k = 1; k <= n.nin; ++k) {
    if (k == A::b && args.scalar_b) continue;
    const TensorDesc& t = n.t[k];
    if (t.addr == 0 || t.ndim != o.ndim) return false;
    for (int d = 0; d < o.ndim; ++d)
      if (t.sizes[d] != o.sizes[d] || t.strides[d] < 0) return false;
  }
  if (compute_of(n.compute) == Compute::f64 && !lim.float64) return false;
  if (n.op == OpId::copy) {
    const DType from = n.t[A::a].dtype, to = o.dtype;
    if (from == to || from == DType::f64 || to == DType::f64) return false;
  }
  return true;
}

// A node whose iteration TensorIterator merged into one dense dimension (every operand contiguous
// or a broadcast value) written in the group's shape, when the counts agree: operand element i at
// the group's multi-index whose row-major position in the shape is i, so the same bytes.
// A chain that starts on a strided view (its first node keeps the view's dims) then goes on
// through contiguous results, whose nodes are 1-D. False where c is not such a node.
bool in_shape(const Node& c, const TensorDesc& shape, Node& out) {
  const TensorDesc& o = c.t[A::out];
  if (o.ndim != 1 || shape.ndim < 2 || o.numel() != shape.numel()) return false;
  const A& args = c.as<A>();
  for (int k = 0; k < c.nout + c.nin; ++k) {
    if (k == A::b && args.scalar_b) continue;
    if (c.t[k].ndim != 1 || (c.t[k].strides[0] != 1 && c.t[k].strides[0] != 0)) return false;
  }
  out = c;
  for (int k = 0; k < c.nout + c.nin; ++k) {
    if (k == A::b && args.scalar_b) continue;
    TensorDesc& t = out.t[k];
    const bool bcast = t.strides[0] == 0;
    t.ndim = shape.ndim;
    int64_t st = 1;
    for (int d = shape.ndim - 1; d >= 0; --d) {  // outermost first
      t.sizes[d] = shape.sizes[d];
      t.strides[d] = bcast ? 0 : st;
      st *= shape.sizes[d];
    }
  }
  return true;
}

struct View {
  TensorDesc d;
  int writer = -1;      // the last step that writes it
  bool loaded = false;  // read from memory (before any write of the group)
  // Must stay in registers, never stored: a node the group passed over touches these bytes too
  // (a block the allocator handed from one temporary to the next, as in a foreach optimizer's
  // composites), so a store could clobber what it reads. finish() checks that no node outside
  // the group reads a value the group wrote there.
  bool hidden = false;
};

struct Group {
  std::vector<View> views;
  std::vector<FusedStep> steps;  // sources and stores index `views` until finish()
  std::vector<Node> nodes;       // the steps' nodes (a transfer becomes a copy: absorb())
  std::vector<size_t> at;        // their indices in the batch
  Compute variant = Compute::f32;

  // A transfer that copies a whole dense view this group wrote (what composite in-place ops end
  // with: the result copied into self) becomes a copy step, for dtypes whose trip through the
  // compute type is bit-exact (float32 in the f32 variant, 32/64-bit integers in the i64 one).
  bool absorb(const Node& n, size_t index) {
    if (n.op != OpId::transfer || steps.empty()) return false;
    const uint64_t bytes = uint64_t(n.t[TransferArgs::dst].sizes[0]);
    for (const View& v : views) {
      const TensorDesc& d = v.d;
      if (v.writer < 0 || d.addr != n.t[TransferArgs::src].addr || !d.contiguous() ||
          uint64_t(d.span_bytes()) != bytes)
        continue;
      const bool f32 = d.dtype == DType::f32 && variant == Compute::f32;
      const bool ints = (d.dtype == DType::i32 || d.dtype == DType::i64) && variant == Compute::i64;
      if (!f32 && !ints) return false;
      Node c;
      c.op = OpId::copy;
      c.nout = 1;
      c.nin = 1;
      c.compute = f32 ? DType::f32 : DType::i64;
      c.t[A::out] = d;
      c.t[A::out].addr = n.t[TransferArgs::dst].addr;
      c.t[A::a] = d;
      c.args = A{};
      return add(c, index);
    }
    return false;
  }

  // Adds n as the next step, or returns false and leaves the group as it was.
  bool add(const Node& n, size_t index) {
    if (steps.size() == size_t(kMaxFusedSteps)) return false;
    const TensorDesc& o = n.t[A::out];
    if (!steps.empty()) {
      if (compute_of(n.compute) != variant) return false;
      const TensorDesc& g = views[0].d;  // every view has the group's sizes
      if (o.ndim != g.ndim || !std::equal(o.sizes, o.sizes + o.ndim, g.sizes)) return false;
    }
    // What an add may change, restored on failure: the views' flags and their count (new views
    // are only appended). On the stack: this runs for every candidate step of every flush.
    struct Flags {
      int writer;
      bool loaded;
    } saved[kMaxOps];
    const size_t had = views.size();
    for (size_t j = 0; j < had; ++j) saved[j] = {views[j].writer, views[j].loaded};
    auto undo = [&] {
      views.resize(had);
      for (size_t j = 0; j < had; ++j) views[j].writer = saved[j].writer, views[j].loaded = saved[j].loaded;
      return false;
    };
    const int step = int(steps.size());
    auto conflicts = [&](const TensorDesc& d, size_t skip, bool writing) {
      for (size_t j = 0; j < views.size(); ++j)
        if (j != skip && (writing || views[j].writer >= 0) && overlap(views[j].d, d)) return true;
      return false;
    };
    auto find = [&](const TensorDesc& d) {
      for (size_t j = 0; j < views.size(); ++j)
        if (same_layout(views[j].d, d)) return int(j);
      return -1;
    };
    auto source = [&](const TensorDesc& d, uint8_t& src) {
      int j = find(d);
      if (j < 0) {
        if (conflicts(d, SIZE_MAX, false) || views.size() == kMaxOps) return false;
        views.push_back(View{d});
        j = int(views.size()) - 1;
      }
      if (views[j].writer >= 0) {
        src = uint8_t(kFusedReg | views[j].writer);
      } else {
        views[j].loaded = true;
        src = uint8_t(j);
      }
      return true;
    };
    FusedStep s;
    const A& args = n.as<A>();
    if (n.nin >= 1 && !source(n.t[A::a], s.a)) return undo();
    if (n.nin >= 2 && !args.scalar_b && !source(n.t[A::b], s.b)) return undo();
    if (args.reads_out && !source(o, s.old)) return undo();
    int j = find(o);
    if (j < 0) {
      if (conflicts(o, SIZE_MAX, true) || views.size() == kMaxOps) return undo();
      views.push_back(View{o});
      j = int(views.size()) - 1;
    } else if (views[j].writer < 0 && conflicts(o, size_t(j), true)) {
      return undo();  // read so far, and another view overlaps it: other threads may read it
    }
    views[j].writer = step;
    s.store = uint8_t(j);  // the view; finish() keeps it only for its last writer, if live
    if (steps.empty()) variant = compute_of(n.compute);
    steps.push_back(s);
    nodes.push_back(n);
    at.push_back(index);
    return true;
  }
};

// Freed blocks by address, then by when, to ask whether a view's block was freed after a node was
// recorded (a block the allocator reuses appears once per free: thousands of times in a batch).
struct FreedIndex {
  std::vector<Freed> v;
  explicit FreedIndex(const std::vector<Freed>& f) : v(f) {
    std::sort(v.begin(), v.end(), [](const Freed& a, const Freed& b) { return a.addr != b.addr ? a.addr < b.addr : a.at < b.at; });
  }
  // The earliest index from which nothing recorded holds d's bytes, if freed after node `after`;
  // 0 when not known to be freed (a block's start is matched exactly: views inside are kept).
  size_t freed_after(const TensorDesc& d, size_t after) const {
    // the blocks that start where the last one at or below d.addr does, freed after `after`
    auto up = std::upper_bound(v.begin(), v.end(), d.addr, [](uint64_t a, const Freed& f) { return a < f.addr; });
    if (up == v.begin()) return 0;
    const uint64_t base = std::prev(up)->addr, end = d.addr + uint64_t(d.span_bytes());
    auto it = std::lower_bound(v.begin(), up, after + 1, [base](const Freed& f, size_t at) {
      return f.addr != base ? f.addr < base : f.at < at;
    });
    for (; it != up; ++it)  // by when: the first that covers d is the earliest
      if (end <= it->addr + it->bytes) return it->at;
    return 0;
  }
};

bool touches(const Node& n, const TensorDesc& d) {
  for (int k = 0; k < n.nout + n.nin && k < kMaxOperands; ++k)
    if (n.t[k].addr && overlap(n.t[k], d)) return true;
  return false;
}

// How candidate c conflicts with y (batch index yi), a node recorded before it that the group
// passed over: 0 none; 1 only through operands that may stay in registers: c's output (c writes
// bytes y touched), or an input the group wrote after y (c reads the group's register, which
// holds what memory would), each such view added to `hide`, and *out set where c's output is
// one of them; 2 otherwise (c needs y's bytes).
int conflict(const Node& c, const Node& y, size_t yi, const Group& grp, std::vector<int>& hide, bool* out) {
  int kind = 0;
  for (int i = 0; i < c.nout + c.nin && i < kMaxOperands; ++i) {
    if (!c.t[i].addr) continue;
    for (int j = 0; j < y.nout + y.nin && j < kMaxOperands; ++j)
      if (y.t[j].addr && (i < c.nout || j < y.nout) && overlap(c.t[i], y.t[j])) {
        if (i >= c.nout) {
          int v = -1;
          for (size_t w = 0; w < grp.views.size() && v < 0; ++w) {
            const View& x = grp.views[w];  // a transfer's source: the bytes of a view it copies
            const bool same = c.op == OpId::transfer ? x.d.addr == c.t[i].addr : same_layout(x.d, c.t[i]);
            if (same && x.writer >= 0 && !x.loaded && grp.at[size_t(x.writer)] > yi) v = int(w);
          }
          if (v < 0) return 2;
          hide.push_back(v);
        } else {
          *out = true;
        }
        kind = 1;
      }
  }
  return kind;
}

// For a hidden view j: walking the batch from the group's first write of it to the free of its
// block, no node outside the group reads a byte whose last writer was the group, and no step of
// the group reads the view after a node outside wrote any of it (the step would get the group's
// register). Outside writes count only dense ones, whose byte range is then theirs.
bool unread_outside(const Graph& g, const Group& grp, size_t j, const std::vector<bool>& taken,
                    const FreedIndex& freed) {
  struct Span {
    uint64_t lo, hi;
  };
  auto span = [](const Node& m, int i) {
    const uint64_t lo = m.t[i].addr;
    return Span{lo, lo + (m.op == OpId::transfer ? uint64_t(m.t[0].sizes[0]) : uint64_t(m.t[i].span_bytes()))};
  };
  const View& v = grp.views[j];
  const Span mine{v.d.addr, v.d.addr + uint64_t(v.d.span_bytes())};
  size_t first = 0;
  for (size_t k = 0; k < grp.steps.size(); ++k)
    if (grp.steps[k].store == j) {
      first = grp.at[k];
      break;
    }
  const size_t free_at = freed.freed_after(v.d, grp.at[size_t(v.writer)]);
  if (free_at == 0) return false;
  bool ours = true;            // every byte of the view last written by the group
  std::vector<Span> theirs;    // dense ranges written from outside since the group's last write
  size_t step = 0;
  while (step < grp.at.size() && grp.at[step] <= first) ++step;
  for (size_t k = first + 1; k < free_at && k < g.nodes.size(); ++k) {
    const bool in_group = taken[k] && step < grp.at.size() && grp.at[step] == k;
    const Node& m = in_group ? grp.nodes[step++] : g.nodes[k];
    auto touches_view = [&](int i) {
      const Span s = span(m, i);
      return m.t[i].addr && s.lo < mine.hi && mine.lo < s.hi;
    };
    const bool old = m.op != OpId::transfer && op_info(m.op).family == Family::elementwise && m.as<A>().reads_out;
    for (int i = 0; i < m.nout + m.nin && i < kMaxOperands; ++i) {  // reads first
      if ((i < m.nout && !old) || !touches_view(i)) continue;
      if (in_group) {
        if (!ours) return false;
        continue;
      }
      const Span s = span(m, i);
      bool covered = false;
      for (const Span& t : theirs) covered = covered || (t.lo <= s.lo && s.hi <= t.hi);
      if (!covered) return false;
    }
    for (int i = 0; i < m.nout && i < kMaxOperands; ++i) {
      if (!touches_view(i)) continue;
      if (in_group) {
        ours = true;
        theirs.clear();
      } else {
        if (m.op != OpId::transfer && !m.t[i].contiguous()) return false;
        theirs.push_back(span(m, i));
        ours = false;
      }
    }
  }
  return true;
}

// The fused node for the group's steps (it runs where the first one was), or false when it does
// not fit the shader (operands, dims, offsets). taken[k]: node k is a step of this group.
bool finish(Graph& g, Group& grp, const std::vector<bool>& taken, const FreedIndex& freed, Node* out,
            std::vector<uint64_t>& no_hide) {
  const size_t count = grp.steps.size(), first = grp.at[0];
  std::vector<bool> stored(grp.views.size());
  for (size_t j = 0; j < grp.views.size(); ++j) {
    const View& v = grp.views[j];
    if (v.writer < 0) continue;
    if (v.hidden) {
      if (!unread_outside(g, grp, j, taken, freed)) {
        no_hide.push_back(v.d.addr);
        return false;
      }
      continue;  // never stored
    }
    // Dead: its block was freed after its last write was recorded, and no node that runs after
    // the fused node and was recorded before that free touches its bytes. Otherwise store it.
    const size_t at = freed.freed_after(v.d, grp.at[size_t(v.writer)]);
    bool live = at == 0;
    for (size_t k = first + 1; !live && k < at && k < g.nodes.size(); ++k)
      live = !taken[k] && touches(g.nodes[k], v.d);
    stored[j] = live;
  }
  uint8_t index[kMaxOps];
  int nt = 0, nout = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t j = 0; j < grp.views.size(); ++j) {
      const bool in = pass == 0 ? bool(stored[j]) : !stored[j] && grp.views[j].loaded;
      if (!in) continue;
      if (nt == kMaxOperands) return false;
      index[j] = uint8_t(nt);
      out->t[nt++] = grp.views[j].d;
      if (pass == 0) ++nout;
    }
  const TensorDesc& shape = grp.views[0].d;
  const int64_t* strides[kMaxOperands];
  for (int j = 0; j < nt; ++j) strides[j] = out->t[j].strides;
  int64_t sz[kMaxDims], st[kMaxOperands][kMaxDims];
  const int nd = coalesce(shape.ndim, shape.sizes, strides, nt, 4, sz, st);
  if (nd < 0) return false;
  bool contiguous = nd <= 1;
  for (int j = 0; j < nt && nd == 1; ++j) contiguous = contiguous && st[j][0] == 1;
  for (int j = 0; j < nt && !contiguous; ++j) {
    int64_t span = 0;
    for (int d = 0; d < nd; ++d) span += (sz[d] - 1) * st[j][d] * int64_t(dtype_size(out->t[j].dtype));
    if (span > INT32_MAX) return false;
  }
  auto prog = std::make_shared<FusedProgram>();
  prog->nodes = std::move(grp.nodes);  // past the last failure return: the group is done with them
  prog->steps = grp.steps;
  auto remap = [&](uint8_t& s) {
    if (s != kFusedNone && s < kFusedReg) s = index[s];
  };
  for (size_t k = 0; k < count; ++k) {
    FusedStep& s = prog->steps[k];
    remap(s.a);
    remap(s.b);
    remap(s.old);
    const View& v = grp.views[s.store];
    s.store = v.writer == int(k) && stored[s.store] ? index[s.store] : kFusedNone;
  }
  out->op = OpId::fused;
  out->nout = uint8_t(nout);
  out->nin = uint8_t(nt - nout);
  out->compute = prog->nodes[0].compute;
  out->reduction = 1;
  out->args = FusedArgs{prog.get()};
  g.keepalive.push_back(std::move(prog));
  return true;
}

// How far a group looks past nodes that cannot join for more steps (foreach loops): kWindow nodes
// and kMaxSkipped passed over. Where views may stay in registers (a foreach optimizer's
// parameters, 12 nodes each, interleaved), further, but only while it keeps growing: kStale
// nodes without a new step end it, kWideStale once a step joined through a view kept in
// registers (two interleaved chains whose temporaries swap blocks would otherwise scan the whole
// window for every group: several times the planning time).
constexpr size_t kWindow = 48, kMaxSkipped = 24;
constexpr size_t kWideWindow = 128, kWideSkipped = 112, kStale = 24, kWideStale = 48;
constexpr size_t kMaxNoHide = 4;     // blocks refused in a group before it keeps no view in registers
constexpr size_t kHideFailures = 8;  // refusals beyond the successes before a batch stops trying

// Grows a group from node i: the following nodes that can join, and past those that cannot, later
// ones that depend on none of the nodes passed over (they then run before those).
void grow(const Graph& g, size_t i, const Limits& lim, const std::vector<bool>& done, Group& grp,
          size_t max_steps, const FreedIndex& freed, const std::vector<uint64_t>& no_hide, bool hiding) {
  const bool may_hide = hiding && no_hide.size() < kMaxNoHide;
  const size_t n = g.nodes.size();
  std::vector<size_t> skipped;
  std::vector<int> hide;
  grp.views.reserve(kMaxOps);  // no regrowth: a node is 2 KB
  grp.steps.reserve(max_steps);
  grp.nodes.reserve(max_steps);
  grp.at.reserve(max_steps);
  grp.add(g.nodes[i], i);
  const size_t window = may_hide ? kWideWindow : kWindow, most_skipped = may_hide ? kWideSkipped : kMaxSkipped;
  size_t last = i;      // the last node that joined
  bool hid = false;     // a step joined through a view kept in registers
  Node reshaped;        // a 1-D candidate in the group's shape (in_shape)
  for (size_t k = i + 1; k < n && k < i + window && grp.steps.size() < max_steps; ++k) {
    if (done[k]) continue;
    if (may_hide && k > last + (hid ? kWideStale : kStale)) break;
    const TensorDesc& shape = grp.views[0].d;
    const bool flat = g.nodes[k].t[A::out].ndim != shape.ndim && fusable(g.nodes[k], lim) &&
                      in_shape(g.nodes[k], shape, reshaped);
    const Node& c = flat ? reshaped : g.nodes[k];
    // cheap first: could it join at all (a step of the group's shape, or a copy of a view)?
    const bool step = fusable(c, lim) && c.t[A::out].ndim == shape.ndim &&
                      std::equal(shape.sizes, shape.sizes + shape.ndim, c.t[A::out].sizes);
    bool maybe = step || c.op == OpId::transfer, hide_out = false;
    hide.clear();
    // A step whose operands share bytes with a passed-over node joins only where those views can
    // stay in registers: finish() checks that no node outside the group reads what the group
    // wrote there. The output can, if it is a step's, its block is freed in the batch, it was
    // not refused for this group, and it overlaps only a view the group wrote and never loaded.
    auto refused = [&](uint64_t addr) { return std::find(no_hide.begin(), no_hide.end(), addr) != no_hide.end(); };
    int out_may_hide = -1;  // not asked yet (a freed-block lookup: only where needed)
    auto output_may_hide = [&] {
      if (out_may_hide < 0) {
        const TensorDesc& o = c.t[A::out];
        bool ok = may_hide && step && !c.as<A>().reads_out && !refused(o.addr) && freed.freed_after(o, k) != 0;
        for (size_t j = 0; ok && j < grp.views.size(); ++j) {
          const View& v = grp.views[j];
          if (overlap(v.d, o)) ok = same_layout(v.d, o) && v.writer >= 0 && !v.loaded;
        }
        out_may_hide = ok;
      }
      return out_may_hide == 1;
    };
    for (size_t r = skipped.size(); maybe && r > 0; --r) {  // the latest first: most conflicts are there
      const Node& y = g.nodes[skipped[r - 1]];
      const size_t had = hide.size();
      bool out = false;
      const int kind = conflict(c, y, skipped[r - 1], grp, hide, &out);
      maybe = kind == 0 || (kind == 1 && may_hide && (!out || output_may_hide()));
      for (size_t h = had; maybe && h < hide.size(); ++h) maybe = !refused(grp.views[size_t(hide[h])].d.addr);
      hide_out = hide_out || out;
    }
    if (maybe && step && grp.add(c, k)) {
      for (int v : hide) grp.views[size_t(v)].hidden = true;
      if (hide_out) grp.views[grp.steps.back().store].hidden = true;
      last = k;
      hid = hid || hide_out || !hide.empty();
      continue;
    }
    if (maybe && !step && grp.absorb(c, k)) {
      for (int v : hide) grp.views[size_t(v)].hidden = true;
      last = k;
      hid = hid || !hide.empty();
      continue;
    }
    if (!operands_only(op_info(c.op).family) || skipped.size() == most_skipped) break;
    skipped.push_back(k);
  }
}

// Check mode traces every step of a fused node into one host-visible block, 8 bytes per element
// a step (dispatch/check_fused.cpp): there a group has at most as many steps as fit 256 MiB, and
// a node over 16M elements runs unfused (each node checked on its own, as VKML_FUSE=0).
size_t max_steps(const Node& first) {
  constexpr int64_t kMaxTraceBytes = int64_t(256) << 20;
  if (!env().check) return size_t(kMaxFusedSteps);
  const int64_t per_step = std::max<int64_t>(1, first.t[A::out].numel() * 8);
  return size_t(std::min<int64_t>(kMaxFusedSteps, kMaxTraceBytes / per_step));
}

}  // namespace

Result<void> fuse(Graph& g, const Limits& lim) {
  if (!env().fuse || g.nodes.size() < 2) return {};
  const size_t n = g.nodes.size();
  size_t i = 0;
  while (i < n && !fusable(g.nodes[i], lim)) ++i;
  if (i + 1 >= n) return {};  // nothing to fuse: leave the batch as it is
  const FreedIndex freed(g.freed);
  std::vector<bool> done(n), taken(n);
  std::vector<uint64_t> no_hide;  // blocks whose views could not stay in registers in this group
  size_t hid_done = 0, hid_failed = 0;  // groups made with views in registers, and attempts refused
  // The planned batch is built in a buffer kept from flush to flush and swapped with the graph's:
  // both keep the capacity of the largest batch, so neither is allocated (2 KB a node, fresh pages
  // to fault in) and regrown by recording at every flush.
  static thread_local std::vector<Node> out;
  out.clear();
  out.reserve(n);
  out.insert(out.end(), g.nodes.begin(), g.nodes.begin() + ptrdiff_t(i));
  for (; i < n; ++i) {
    if (done[i]) continue;
    if (!fusable(g.nodes[i], lim)) {
      out.push_back(g.nodes[i]);
      continue;
    }
    const size_t most = max_steps(g.nodes[i]);
    if (most < 2) {
      out.push_back(g.nodes[i]);
      continue;
    }
    Group grp;
    no_hide.clear();
    // Keeping views in registers stops for the rest of the batch where it keeps failing (each
    // failure costs the group a second growth): two interleaved chains whose temporaries swap
    // blocks fail every time, a foreach optimizer's update rarely.
    const bool hiding = env().fuse_hidden && hid_failed <= hid_done + kHideFailures;
    grow(g, i, lim, done, grp, most, freed, no_hide, hiding);
    Node fused;
    bool ok = false;
    while (grp.steps.size() >= 2) {
      const size_t refused = no_hide.size();
      for (size_t k : grp.at) taken[k] = true;
      ok = finish(g, grp, taken, freed, &fused, no_hide);
      for (size_t k : grp.at) taken[k] = false;
      if (ok) break;
      // A view that had to stay in registers could not (finish() refused its block for this
      // group): the group again without it; else too big for the shader: fewer steps.
      const size_t again = no_hide.size() > refused ? most : grp.steps.size() - 1;
      hid_failed += no_hide.size() > refused;
      grp = Group{};
      grow(g, i, lim, done, grp, again, freed, no_hide, hiding);
    }
    if (ok && std::any_of(grp.views.begin(), grp.views.end(), [](const View& v) { return v.hidden; })) ++hid_done;
    if (!ok) {
      out.push_back(g.nodes[i]);
      continue;
    }
    for (size_t k : grp.at) done[k] = true;
    out.push_back(fused);
  }
  g.nodes.swap(out);
  out.clear();  // the batch as recorded (fused nodes hold their programs; nothing else refers to these)
  return {};
}

}  // namespace vkml::plan
