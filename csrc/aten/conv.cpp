// convolution_overrideable and convolution_backward_overrideable: where torch sends the
// convolutions of a PrivateUse1 tensor (at::native::_convolution and convolution_backward pick
// ConvBackend::Overrideable), after its own argument checks and with 1-d convolutions viewed as
// 2-d. Called directly (torch.ops.aten.*), the same checks run here through torch's
// select_conv_backend; what only torch's CPU kernels check (kernel and output sizes, output
// padding) is checked here with their messages. Each result is one node of the conv family
// (graph/families/conv.h).
#include <ATen/native/ConvUtils.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"

namespace vkml::aten {
namespace {

struct Params {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
  int dims = 0;  // spatial
};

std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> r;
  for (const c10::SymInt& s : v.toSymIntVector()) r.push_back(s.guard_int(__FILE__, __LINE__));
  return r;
}

// The schema's arguments; torch's checks (check_shape_forward through select_conv_backend), which
// also expand single values to every spatial dim.
void read_params(const Call& c, const at::Tensor& input, const at::Tensor& weight,
                 const std::optional<at::Tensor>& bias, Params& p) {
  p.stride = int_list(c["stride"]);
  p.padding = int_list(c["padding"]);
  p.dilation = int_list(c["dilation"]);
  p.output_padding = int_list(c["output_padding"]);
  p.transposed = c["transposed"].toBool();
  p.groups = c["groups"].toInt();
  TORCH_CHECK(weight.dim() >= 3, "weight should have at least three dimensions");
  TORCH_CHECK(p.groups > 0, "non-positive groups is not supported");
  const auto sym = [](const std::vector<int64_t>& v) { return c10::fromIntArrayRefSlow(v); };
  at::native::select_conv_backend(input, weight, bias, sym(p.stride), sym(p.padding), sym(p.dilation),
                                  p.transposed, sym(p.output_padding), p.groups, std::nullopt);
  p.dims = int(weight.dim()) - 2;
  TORCH_CHECK(p.dims <= 3, "unsupported ConvNd parameters");  // torch's CPU message
  for (auto* v : {&p.stride, &p.padding, &p.dilation, &p.output_padding})
    if (v->size() == 1) v->assign(size_t(p.dims), (*v)[0]);
}

// "kernel_height: 0 kernel_width: 3", as torch's CPU shape checks name per-dim values.
std::string per_dim(const char* what, at::IntArrayRef v) {
  static const char* const names[] = {"depth", "height", "width"};
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << what << "_" << names[3 - v.size() + i] << ": " << v[i];
  return s.str();
}

std::string joined(at::IntArrayRef v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? " x " : "") << v[i];
  return s.str();
}

// The output's sizes (torch's calc_output_size) and the checks torch's CPU kernels make.
std::vector<int64_t> output_size(const at::Tensor& input, const at::Tensor& weight, const Params& p) {
  const auto kernel = weight.sizes().slice(2);
  TORCH_CHECK(std::all_of(kernel.begin(), kernel.end(), [](int64_t k) { return k > 0; }),
              "kernel size should be greater than zero, but got ", per_dim("kernel", kernel));
  if (p.transposed) {
    bool ok = true;
    for (int i = 0; i < p.dims; ++i) ok = ok && (p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i]);
    TORCH_CHECK(ok, "output padding must be smaller than either stride or dilation, but got ",
                per_dim("output_padding", p.output_padding), " ", per_dim("stride", p.stride), " ",
                per_dim("dilation", p.dilation));
  }
  std::vector<int64_t> out =
      p.transposed ? at::native::conv_input_size(input.sizes(), weight.sizes(), p.padding, p.output_padding, p.stride,
                                                 p.dilation, p.groups)
                   : at::native::conv_output_size(input.sizes(), weight.sizes(), p.padding, p.stride, p.dilation);
  if (input.size(1) == 0) out[1] = 0;
  const at::IntArrayRef space(out.data() + 2, out.size() - 2);
  TORCH_CHECK(std::all_of(space.begin(), space.end(), [](int64_t v) { return v > 0; }),
              "Given input size per channel: (", joined(input.sizes().slice(2)),
              "). Calculated output size per channel: (", joined(space), "). Output size is too small");
  return out;
}

void check_same_type(const at::Tensor& input, const at::Tensor& other, const char* what) {
  TORCH_CHECK(input.options().type_equal(other.options()), "Input type (", input.toString(), ") and ", what,
              " type (", other.toString(), ") should be the same");
}

// Channels-last results where the operands are, as torch's CPU convolution gives them.
at::MemoryFormat format_of(const at::Tensor& input, const at::Tensor& weight) {
  const auto cl = input.dim() == 4 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::ChannelsLast3d;
  if (input.dim() >= 4 && (input.suggest_memory_format() == cl || weight.suggest_memory_format() == cl)) return cl;
  return at::MemoryFormat::Contiguous;
}

int64_t prod(at::IntArrayRef v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

// Records result = pass(operands) as a conv node; `terms` bounds the products behind an element.
void emit(OpId id, ConvArgs::Pass pass, const Params& p, const at::Tensor& result,
          std::initializer_list<std::pair<ConvArgs::Operand, const at::Tensor*>> operands, int64_t terms) {
  if (result.numel() == 0) return;
  at::Tensor scratch;  // the tiled weight gradient's partial sums: freed at once (later nodes run after)
  const char* name = op_info(id).name;
  Node n;
  n.op = id;
  n.nout = 1;
  n.nin = 4;
  n.compute = to_dtype(result.scalar_type(), name);
  n.reduction = std::max<int64_t>(terms, 1);
  ConvArgs a;
  a.pass = pass;
  a.dims = uint8_t(p.dims);
  a.groups = p.groups;
  for (int i = 0; i < p.dims; ++i) a.stride[i] = p.stride[i], a.padding[i] = p.padding[i], a.dilation[i] = p.dilation[i];
  if (pass == ConvArgs::to_weight && env().conv_pipe != "direct") {
    const c10::ScalarType t = result.scalar_type();
    const int64_t esize = t == c10::kDouble ? 8 : t == c10::kFloat || t == c10::kHalf || t == c10::kBFloat16 ? 4 : 0;
    const int64_t bytes = conv_wgrad_partial_bytes(p.groups, result.numel(), terms, esize, env().conv_pipe == "tiled");
    if (bytes) {
      scratch = at::empty({bytes}, result.options().dtype(c10::ScalarType::Byte));
      a.partials = addr_of(scratch);
    }
  }
  n.args = a;
  n.t[ConvArgs::out] = desc_of(result, name);
  for (const auto& [slot, t] : operands)
    if (t && t->defined()) n.t[slot] = desc_of(*t, name);
  record(n);
}

// Products behind one element of a transposed pass (to_big): C0 / groups channels times, per dim,
// the kernel positions k with (i + padding - k * dilation) divisible by the stride.
int64_t to_big_terms(const at::Tensor& weight, const Params& p) {
  int64_t t = weight.size(0) / p.groups;
  for (int i = 0; i < p.dims; ++i) {
    const int64_t k = weight.size(2 + i), step = p.stride[i] / std::gcd(p.stride[i], p.dilation[i]);
    t *= std::min(k, (k + step - 1) / step);
  }
  return t;
}

}  // namespace

void conv_forward(OpId id, Call& c) {
  const at::Tensor input = c.tensor("input"), weight = c.tensor("weight");
  std::optional<at::Tensor> bias;  // None, or (from torch's own convolution) an undefined tensor: no bias
  if (c.has("bias") && c.tensor("bias").defined()) bias = c.tensor("bias");
  Params p;
  read_params(c, input, weight, bias, p);
  check_same_type(input, weight, "weight");
  if (bias) check_same_type(input, *bias, "bias");
  check_dtype(id, to_dtype(input.scalar_type(), op_info(id).name));
  at::Tensor out = at::empty(output_size(input, weight, p), input.options().memory_format(format_of(input, weight)));
  const at::Tensor* b = bias ? &*bias : nullptr;
  if (p.transposed)  // the input is the small side, the output the big one
    emit(id, ConvArgs::to_big, p, out, {{ConvArgs::small, &input}, {ConvArgs::weight, &weight}, {ConvArgs::bias, b}},
         to_big_terms(weight, p) + (b ? 1 : 0));
  else
    emit(id, ConvArgs::to_small, p, out, {{ConvArgs::big, &input}, {ConvArgs::weight, &weight}, {ConvArgs::bias, b}},
         weight.numel() / weight.size(0) + (b ? 1 : 0));
  c.ret(out);
}

void conv_backward(OpId id, Call& c) {
  const at::Tensor grad = c.tensor("grad_output"), input = c.tensor("input"), weight = c.tensor("weight");
  const c10::List<bool> mask = c["output_mask"].toBoolList();
  Params p;
  read_params(c, input, weight, std::nullopt, p);
  TORCH_CHECK(input.dim() == grad.dim(), "Expected input and grad_output to have the same number of dimensions, but got: ",
              input.dim(), " and ", grad.dim());
  if (!p.transposed)
    for (int64_t v : p.output_padding)
      TORCH_CHECK(v == 0, "output_padding is not supported for non-transposed convolutions; got: ", p.output_padding);
  check_same_type(input, weight, "weight");
  check_same_type(input, grad, "grad_output");
  check_dtype(id, to_dtype(input.scalar_type(), op_info(id).name));
  const std::vector<int64_t> expect = output_size(input, weight, p);
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(expect), "Expected grad_output of size ", at::IntArrayRef(expect),
              " for input ", input.sizes(), " and weight ", weight.sizes(), ", but got ", grad.sizes());
  // grad_output takes the role of the forward's output: small for a convolution, big for a
  // transposed one; the input takes the other.
  const ConvArgs::Operand g_role = p.transposed ? ConvArgs::big : ConvArgs::small;
  const ConvArgs::Operand in_role = p.transposed ? ConvArgs::small : ConvArgs::big;
  at::Tensor gi, gw, gb;
  if (mask[0]) {
    gi = at::empty(input.sizes(), input.options().memory_format(format_of(input, weight)));
    if (p.transposed)
      emit(id, ConvArgs::to_small, p, gi, {{ConvArgs::big, &grad}, {ConvArgs::weight, &weight}},
           weight.numel() / weight.size(0));
    else
      emit(id, ConvArgs::to_big, p, gi, {{ConvArgs::small, &grad}, {ConvArgs::weight, &weight}}, to_big_terms(weight, p));
  }
  const at::Tensor& small = p.transposed ? input : grad;  // the S role of the weight gradient
  if (mask[1]) {
    gw = at::empty(weight.sizes(), weight.options());
    emit(id, ConvArgs::to_weight, p, gw, {{g_role, &grad}, {in_role, &input}}, small.size(0) * prod(small.sizes().slice(2)));
  }
  if (mask[2]) {
    gb = at::empty({grad.size(1)}, grad.options());
    emit(id, ConvArgs::to_bias, p, gb, {{g_role, &grad}}, grad.size(0) * prod(grad.sizes().slice(2)));
  }
  c.ret(gi, gw, gb);
}

}  // namespace vkml::aten
