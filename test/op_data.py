"""The one data file of per-op test facts that the op table cannot hold: which OpInfo entries
test which rows, the aten ops some OpInfo samples need that vkml lacks (and why), and the ops
whose comparison with torch CPU may use their row's backward-error contract. test_opinfo.py
reads it; everything else the tests need comes from vkml_torch._C.op_table().
"""

_CONVS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")

# OpInfo name -> the op-table row whose tolerance decides the comparison, where they differ.
# Every row whose name is an OpInfo name is tested under that name without being listed here.
ALIASES = {
    "nn.functional.silu": "silu", "clamp_min": "clamp", "clamp_max": "clamp", "any": "amax", "all": "amin",
    "nn.functional.relu": "relu", "max": "amax", "min": "amin", "matmul": "mm", "mv": "addmv",
    "nn.functional.nll_loss": "nll_loss", "nn.functional.cross_entropy": "nll_loss",
    "cat": "copy", "clone": "copy",
    # index family: index_put's samples accumulate too, so they get the accumulating row's contract
    "index_put": "index_put_acc", "take_along_dim": "gather", "masked_scatter": "index_put",
    "nn.functional.embedding": "index_select",
    **{f"nn.functional.{f}": "convolution" for f in _CONVS},
    "native_layer_norm": "layer_norm", "nn.functional.layer_norm": "layer_norm",
    "native_group_norm": "group_norm", "nn.functional.group_norm": "group_norm",
    "native_batch_norm": "batch_norm", "_native_batch_norm_legit": "batch_norm", "_batch_norm_with_update": "batch_norm",
    "nn.functional.batch_norm": "batch_norm", "nn.functional.instance_norm": "batch_norm",
    "nn.functional.rms_norm": "rsqrt",  # torch's decomposition (docs/normalization.md)
}

# aten ops some samples need that have no vkml kernel yet, and why they are not here yet.
KNOWN_GAPS = {
    "aten::div.out_mode": "div with rounding_mode (trunc/floor): no row yet",
    "aten::div.Tensor_mode": "div with rounding_mode (trunc/floor): no row yet",
    "aten::nll_loss2d_forward": "nll_loss over images (N, C, H, W): no row yet",
    "aten::clamp.Tensor": "clamp with tensor bounds on both sides: needs a ternary kind",
    "aten::clamp.Tensor_out": "clamp with tensor bounds on both sides: needs a ternary kind",
    "aten::nll_loss2d_forward.output": "nll_loss over images (N, C, H, W): no row yet",
    "aten::scatter.reduce_out": "scatter with reduce=: not implemented (raises NotImplementedError naming it)",
    "aten::scatter.value_reduce_out": "scatter with reduce=: not implemented (raises NotImplementedError naming it)",
    "aten::embedding_renorm_": "nn.functional.embedding with max_norm: no row yet",
    "aten::remainder.Tensor_out": "remainder (take_along_dim wraps negative indices with it): no row yet",
    "aten::unfold": "Tensor.repeat (instance_norm repeats its running statistics): no unfold kernel yet",
    "mm": "integer matrix products: gemm rows are float-only",
    "addmm": "integer matrix products: gemm rows are float-only",
    "bmm": "integer matrix products: gemm rows are float-only",
    "addmv": "integer matrix products: gemm rows are float-only",
    "dot": "integer matrix products: gemm rows are float-only",
}

# OpInfo name -> whether the op's first input keeps its sign in the backward-error scale. The
# scale is the op on the absolute values of the other float inputs (and of alpha/beta): exactly
# sum |terms| for an op linear in those (products, sums, nll_loss, convolutions), and for
# cross_entropy too, whose logits pass through log_softmax (<= 0, so every term -w * t * logp has the sign of w * t).
BACKWARD = {"addcdiv": False, "sum": False, "mean": False, "mm": False, "addmm": False, "bmm": False, "matmul": False,
            "addmv": False, "dot": False, "mv": False, "nn.functional.nll_loss": False,
            "nn.functional.cross_entropy": True, **{f"nn.functional.{f}": False for f in _CONVS}}


