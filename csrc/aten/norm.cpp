// native_layer_norm, native_group_norm and their backwards. Shapes, dtypes, argument checks and
// the edge cases (empty batch, empty groups) follow torch's CPU kernels; layer norm uses torch's
// own input check (ATen/native/layer_norm.h).
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>

#include <cmath>

#include "aten/common.h"
#include "aten/kernels.h"
#include "aten/norm_common.h"

#include "aten/torch_version.h"  // torch 2.15 refuses empty groups in native_group_norm (HxW == 0)

namespace vkml::aten {
namespace {
using namespace norm;
using F = NormArgs::Fwd;
using B = NormArgs::Bwd;

std::array<bool, 3> mask_of(Call& c) {
  auto l = c["output_mask"].toBoolList();
  return {l.get(0), l.get(1), l.get(2)};
}

// Statistics of empty groups, as torch's CPU kernels leave them: mean 0, rstd NaN.
void empty_groups(at::Tensor& mean, at::Tensor& rstd) {
  mean.zero_();
  rstd.fill_(NAN);
}

// The forward node over x as [A, C, S] with `groups` groups per sample.
void forward_node(OpId id, const at::Tensor& x, const at::Tensor& y, const at::Tensor& mean, const at::Tensor& rstd,
                  const at::Tensor& w, const at::Tensor& b, int c0, int c1, int64_t groups, double eps) {
  const char* name = op_info(id).name;
  TensorDesc t[10];
  at::Tensor k[4];  // what the descriptors point into, alive until recorded
  at::Tensor xv = viewable(x, c0, c1, t[F::x], name);
  view3(y, c0, c1, t[F::y], name);  // y is fresh: dense in one memory format
  t[F::mean] = vec(mean, k[0], name);
  t[F::rstd] = vec(rstd, k[1], name);
  t[F::w] = vec(w, k[2], name);
  t[F::b] = vec(b, k[3], name);
  NormArgs a;
  a.groups = groups;
  a.eps = eps;
  a.layer = id == OpId::layer_norm;
  record_node(id, x, a, t, 5, 5);
}

void backward_node(OpId id, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                   const at::Tensor& w, const at::Tensor& dx, const at::Tensor& dw, const at::Tensor& db, int c0,
                   int c1, int64_t groups) {
  const char* name = op_info(id).name;
  TensorDesc t[8];
  at::Tensor k[7];  // what the descriptors point into, alive until recorded
  k[0] = viewable(dy, c0, c1, t[B::dy], name);
  k[1] = viewable(x, c0, c1, t[B::bx], name);
  if (dx.defined() && dx.numel()) view3(dx, c0, c1, t[B::dx], name);
  t[B::dw] = vec(dw, k[2], name);
  t[B::db] = vec(db, k[3], name);
  t[B::bw] = vec(w, k[4], name);
  t[B::bmean] = vec(mean, k[5], name);
  t[B::bstat] = vec(rstd, k[6], name);
  NormArgs a;
  a.backward = true;
  a.groups = groups;
  a.layer = id == OpId::layer_norm_backward;
  record_node(id, x, a, t, 3, 5);
}

}  // namespace

void norm_layer(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor input = c.tensor("input");
  const std::vector<int64_t> shape = c["normalized_shape"].toIntVector();
  const at::Tensor w = opt(c, "weight"), b = opt(c, "bias");
  auto [M, N] = at::native::_check_layer_norm_inputs(input, shape, w, b);
  check_dtype(id, to_dtype(input.scalar_type(), name));
  const auto pt = param_type(input, w, b);
  const at::Tensor x = input.contiguous();
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  const int axis = int(input.dim() - int64_t(shape.size()));
  std::vector<int64_t> stat(input.sizes().begin(), input.sizes().begin() + axis);
  stat.resize(size_t(input.dim()), 1);
  at::Tensor mean = at::empty(stat, x.options().dtype(pt)), rstd = at::empty(stat, x.options().dtype(pt));
  if (M > 0 && N == 0) empty_groups(mean, rstd);
  else if (M > 0) forward_node(id, x, y, mean, rstd, w, b, axis, int(x.dim()), 1, c["eps"].toDouble());
  c.ret(y, mean, rstd);
}

void norm_layer_backward(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor input = c.tensor("input"), grad_out = c.tensor("grad_out");
  const std::vector<int64_t> shape = c["normalized_shape"].toIntVector();
  const at::Tensor w = opt(c, "weight"), b = opt(c, "bias"), mean = c.tensor("mean"), rstd = c.tensor("rstd");
  auto [M, N] = at::native::_check_layer_norm_inputs(input, shape, w, b);
  check_dtype(id, to_dtype(input.scalar_type(), name));
  param_type(input, mean, rstd, w);
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out of size ", grad_out.sizes(),
              " does not match input of size ", input.sizes());
  TORCH_CHECK(mean.numel() == M && rstd.numel() == M, name, ": expected mean and rstd with ", M,
              " elements, got ", mean.numel(), " and ", rstd.numel());
  const auto m = mask_of(c);
  const at::Tensor x = input.contiguous();
  at::Tensor dx, dw, db;
  // as torch's CPU kernel: gradients of absent parameters are an error (options() of an undefined tensor)
  if (m[0]) dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (m[1]) dw = M > 0 ? at::empty(w.sizes(), w.options()) : at::zeros_like(w, at::MemoryFormat::Contiguous);
  if (m[2]) db = M > 0 ? at::empty(b.sizes(), b.options()) : at::zeros_like(b, at::MemoryFormat::Contiguous);
  const int axis = int(input.dim() - int64_t(shape.size()));
  if (M > 0 && N > 0 && (m[0] || m[1] || m[2]))
    backward_node(id, grad_out.contiguous(), x, mean, rstd, w, dx, dw, db, axis, int(x.dim()), 1);
  c.ret(dx, dw, db);
}

namespace {
// torch's check_group_norm_inputs (aten/src/ATen/native/group_norm.cpp), with its messages.
void check_group(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t N, int64_t C, int64_t HxW,
                 int64_t G) {
  TORCH_CHECK(G > 0, "Expected num groups to be greater than 0, got ", G);
  TORCH_CHECK(C % G == 0, "Expected number of channels in input to be divisible by ", "num_groups, but got input of shape ",
              x.sizes(), " and num_groups=", G);
  TORCH_CHECK(!w.defined() || (w.dim() == 1 && w.numel() == C),
              "Expected weight to be a vector of size equal to the number of ", "channels in input, but got weight of shape ",
              w.sizes(), " and input of shape ", x.sizes());
  TORCH_CHECK(!b.defined() || (b.dim() == 1 && b.numel() == C),
              "Expected bias to be a vector of size equal to the number of ", "channels in input, but got bias of shape ",
              w.sizes(), " and input of shape ", x.sizes());
  TORCH_CHECK(x.numel() == N * C * HxW, "Expected X.numel() == N * C * HxW to be true, but got false.");
}

// x as [N, C, HxW]: itself when its leading dims are N and C, else reshaped (dense).
at::Tensor as_nchw(const at::Tensor& x, int64_t N, int64_t C, int64_t HxW) {
  if (x.dim() >= 2 && x.size(0) == N && x.size(1) == C) return x;
  return x.contiguous().view({N, C, HxW});
}
// dw of empty groups as torch's CPU kernel computes it, sum over n of (0 - 0 * mean) * rstd: zeros,
// or NaN where a group's statistics are not finite (the forward's rstd of an empty group is NaN).
at::Tensor empty_group_dw(const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& w, int64_t N,
                          int64_t C, int64_t G) {
  at::Tensor out = at::zeros_like(w, at::MemoryFormat::Contiguous);
  if (N == 0 || C == 0) return out;
  at::Tensor t = at::zeros_like(mean).sub(mean.mul(0)).mul(rstd).to(w.scalar_type());  // [N, G]
  return out.copy_(t.reshape({N, G, 1}).expand({N, G, C / G}).reshape({N, C}).sum(0));
}

}  // namespace

void norm_group(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor input = c.tensor("input"), w = opt(c, "weight"), b = opt(c, "bias");
  const int64_t N = c["N"].toInt(), C = c["C"].toInt(), HxW = c["HxW"].toInt(), G = c["group"].toInt();
  check_group(input, w, b, N, C, HxW, G);
#if VKML_TORCH_AT_LEAST_2_15
  TORCH_CHECK(HxW > 0, "Expected HxW to be greater than 0, got ", HxW);  // torch 2.15's native_group_norm
#endif
#if !VKML_TORCH_AT_LEAST_2_15
  {  // torch's native_group_norm before 2.15: X dense in its suggested memory format, as on the CPU
     // (torch's composite group_norm hands a PrivateUse1 tensor over as x.contiguous(memory_format));
     // 2.15's CPU kernel takes any strides (its result is dense), and so does ours
    const at::Tensor& X = input;
    const auto memory_format = X.suggest_memory_format();
    TORCH_CHECK(X.is_contiguous(memory_format));
  }
#endif
  check_dtype(id, to_dtype(input.scalar_type(), name));
  const auto pt = param_type(input, w, b);
  const at::Tensor x = as_nchw(input, N, C, HxW);
  at::Tensor y = at::empty_like(x, x.suggest_memory_format());
  at::Tensor mean = at::empty({N, G}, x.options().dtype(pt)), rstd = at::empty({N, G}, x.options().dtype(pt));
  if (N > 0 && x.numel() == 0) empty_groups(mean, rstd);
  else if (N > 0) forward_node(id, x, y, mean, rstd, w, b, 1, 2, G, c["eps"].toDouble());
  c.ret(y.view(input.sizes()), mean, rstd);
}

void norm_group_backward(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor input = c.tensor("input"), grad_out = c.tensor("grad_out"), w = opt(c, "weight");
  const at::Tensor mean = c.tensor("mean"), rstd = c.tensor("rstd");
  const int64_t N = c["N"].toInt(), C = c["C"].toInt(), HxW = c["HxW"].toInt(), G = c["group"].toInt();
  check_group(input, w, at::Tensor(), N, C, HxW, G);
  check_dtype(id, to_dtype(input.scalar_type(), name));
  param_type(input, mean, rstd, w);
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out of size ", grad_out.sizes(),
              " does not match input of size ", input.sizes());
  TORCH_CHECK(mean.numel() == N * G && rstd.numel() == N * G, name, ": expected mean and rstd with ", N * G,
              " elements, got ", mean.numel(), " and ", rstd.numel());
  const auto m = mask_of(c);
  const at::Tensor x = as_nchw(input, N, C, HxW), dy = as_nchw(grad_out, N, C, HxW);
  at::Tensor dx, dw, db;
  const bool empty = x.numel() == 0;
  // as torch's CPU kernel: both parameter gradients are shaped like the weight; without one, torch
  // 2.15 gives them C elements of the statistics' dtype, earlier versions raise
#if VKML_TORCH_AT_LEAST_2_15
  const at::Tensor like = w.defined() ? w : at::empty({C}, x.options().dtype(mean.scalar_type()));
#else
  const at::Tensor& like = w;
#endif
  if (m[0]) dx = at::empty_like(x, x.suggest_memory_format());
  if (m[1]) dw = empty ? empty_group_dw(mean, rstd, like, N, C, G) : at::empty(like.sizes(), like.options());
  if (m[2]) db = empty ? at::zeros_like(like, at::MemoryFormat::Contiguous) : at::empty(like.sizes(), like.options());
  if (!empty && (m[0] || m[1] || m[2])) backward_node(id, dy, x, mean, rstd, w, dx, dw, db, 1, 2, G);
  c.ret(dx.defined() ? dx.view(input.sizes()) : dx, dw, db);
}

}  // namespace vkml::aten
