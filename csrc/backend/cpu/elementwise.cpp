// The elementwise family: one loop over the output's multi-index, as TensorIterator does on the
// CPU: each input is cast to the common dtype n.compute, the row's scalar function runs in that
// dtype's compute type, the result is cast to n.compute (a no-op unless the output is wider) and
// then to the output dtype.
#include <cmath>

#include "backend/cpu/access.h"
#include "backend/cpu/elementwise.h"

namespace vkml::cpu {
namespace {

// Scalars arrive as a double and an int64; the compute type picks one (f32 compute: float(f)).
template <class T> T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, int64_t>) return s.i;
  else return T(s.f);
}

template <class T>
void run(const Node& n, T (*fn)(T, T, T, T), std::vector<double>* scale) {
  using A = ElementwiseArgs;
  const A& args = n.as<A>();
  const DType ct = n.compute;
  const int nin = n.nin;
  const bool scalar_b = args.scalar_b;
  const TensorDesc& out = n.t[A::out];
  T s = scalar_as<T>(args.s0);
  T bs = scalar_as<T>(args.s1);
  if (args.round_scalars) s = through(s, ct), bs = through(bs, ct);
  const int64_t numel = out.numel();
  if (scale) scale->assign(size_t(numel), 0.0);
  for (int64_t lin = 0; lin < numel; ++lin) {
    T a = T(0), b = T(0);
    if (nin >= 1) a = through(load<T>(at(n.t[A::a], offset_of(n.t[A::a], lin)), n.t[A::a].dtype), ct);
    if (scalar_b) b = bs;
    else if (nin == 2) b = through(load<T>(at(n.t[A::b], offset_of(n.t[A::b], lin)), n.t[A::b].dtype), ct);
    uint8_t* o = at(out, offset_of(out, lin));
    const T old = args.reads_out ? through(load<T>(o, out.dtype), ct) : T(0);  // where, addcmul_, addcdiv_, lerp_
    store(o, out.dtype, through(fn(a, b, s, old), ct));
    // Elementwise backward-error rows: the bound scales with max(|ref|, 1) (log), or, for a row
    // that updates the output's old value (addcdiv_), with |ref| + |ref - old|: the update's size.
    if (scale) {
      const double ref = load<double>(o, out.dtype);
      (*scale)[size_t(lin)] = args.reads_out ? std::fabs(ref) + std::fabs(ref - double(old)) : std::fmax(std::fabs(ref), 1.0);
    }
  }
}

}  // namespace

Result<void> or_elementwise(const Node& n, std::vector<double>* scale, const EwFns& fns) {
  const DType ct = n.compute;
  if (!std::holds_alternative<ElementwiseArgs>(n.args)) return node_error(Err::invalid, n, "not elementwise arguments");
  if (!valid_dtype(ct) || !(op_info(n.op).dtypes & bit(ct)))
    return node_error(Err::unsupported, n, "compute dtype code " + std::to_string(int(ct)) +
                                               (valid_dtype(ct) ? std::string(" (") + dtype_name(ct) + ")" : "") +
                                               " not supported");
  const int nin = n.nin;
  const bool scalar_b = n.as<ElementwiseArgs>().scalar_b;
  if (!valid_dtype(n.t[0].dtype)) return node_error(Err::unsupported, n, "bad output dtype");
  for (int i = 1; i <= nin; ++i) {
    if (i == 2 && scalar_b) break;
    const TensorDesc& d = n.t[i];
    if (!valid_dtype(d.dtype)) return node_error(Err::unsupported, n, "bad input dtype");
    if (d.ndim != n.t[0].ndim) return node_error(Err::invalid, n, "input rank differs from output");
    for (int k = 0; k < d.ndim; ++k)
      if (d.sizes[k] != n.t[0].sizes[k]) return node_error(Err::invalid, n, "input sizes differ from output (broadcast is stride 0)");
    if (d.addr == 0 && d.numel() > 0) return node_error(Err::invalid, n, "input address is null");
  }
  std::vector<double>* sc = wants_scale(n, scale) ? scale : nullptr;
  switch (compute_of(ct)) {
    case Compute::f32: run<float>(n, fns.f32, sc); break;
    case Compute::f64: run<double>(n, fns.f64, sc); break;
    case Compute::i64: run<int64_t>(n, fns.i64, sc); break;
  }
  return {};
}

}  // namespace vkml::cpu
