"""The values ``evidence_cases`` calls each aten overload with: tables by parameter name and type, and ``RECIPES`` per
op name where shapes must agree or the tables cannot call it (each recipe says why), with the modules of the fused
forms. Data for the generator (``gen_evidence.py``), not the project: the catalogues it makes are the shipped
knowledge, and a recipe only chooses what torch is called with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

SHAPE = (2, 4, 6, 8)
SPATIAL = {"1d": 1, "2d": 2, "3d": 3}

# the ops of the project's issue 28 and the common nn ops, before the rest of the registry
PRIORITY = [
    "aten::conv_transpose2d.input", "aten::conv_transpose1d", "aten::conv_transpose3d.input",
    "aten::pixel_shuffle", "aten::pixel_unshuffle", "aten::repeat_interleave.self_int", "aten::group_norm",
    "aten::roll", "aten::upsample_nearest2d.vec", "aten::upsample_bilinear2d.vec", "aten::upsample_nearest2d",
    "aten::upsample_bilinear2d", "aten::einsum", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::convolution", "aten::max_pool2d", "aten::avg_pool2d", "aten::adaptive_avg_pool2d",
    "aten::layer_norm", "aten::transpose.int", "aten::permute", "aten::softmax.int", "aten::log_softmax.int",
    "aten::view", "aten::reshape", "aten::expand", "aten::unsqueeze", "aten::squeeze.dim", "aten::flatten.using_ints",
    "aten::cat", "aten::stack", "aten::split.Tensor", "aten::chunk", "aten::select.int", "aten::slice.Tensor",
    "aten::flip", "aten::gelu", "aten::leaky_relu", "aten::elu", "aten::hardtanh", "aten::clamp",
    "aten::constant_pad_nd", "aten::pad", "aten::mean.dim", "aten::sum.dim_IntList", "aten::amax", "aten::argmax",
    "aten::topk", "aten::cumsum", "aten::tril", "aten::triu", "aten::scaled_dot_product_attention",
    "aten::_to_copy", "aten::div.Tensor_mode", "aten::mul.Tensor", "aten::add.Tensor", "aten::masked_fill.Scalar",
    "aten::index_select", "aten::gather", "aten::full", "aten::arange.start_step", "aten::embedding",
]


def _n(k: int) -> Callable[[int], list[int]]:
    return lambda n: [k] * n


# per parameter name: the values to try (base first); a callable takes the number of spatial axes
INTS: dict[str, Any] = {
    "dim": [1, -1, 2], "dim0": [0, 1], "dim1": [2, 3], "start_dim": [1, 0], "end_dim": [2, -1], "diagonal": [1, -1],
    "dim2": [1],  # (diagonal's second dimension: another than dim1's, or the call fails)
    "k": [2, 3], "num_groups": [2, 4], "upscale_factor": [2, 3], "downscale_factor": [2, 3], "repeats": [2, 3],
    "chunks": [2, 3], "split_size": [2, 3], "index": [0, 1], "start": [0, 1], "end": [3, 4], "step": [1, 2],
    "decimals": [1, 2], "reduction": [1, 2], "groups": [1], "length": [2, 3], "sections": [2, 3],
    "kernel_size": lambda n: ([2] * n, [3] * n), "stride": lambda n: ([2] * n, [1] + [2] * (n - 1)),
    "padding": lambda n: ([1] * n, [0] * n), "dilation": lambda n: ([1] * n, [2] * n),
    "output_padding": lambda n: ([0] * n, [1] * n), "output_size": lambda n: ([2] * n, [3] * n),
    "shifts": [[1], [2], [-1]], "dims": [[1], [2]], "normalized_shape": [[8], [6, 8]],
    "size": [[8, 48], [2, 192], [-1, 48]], "shape": [[8, 48], [2, 192], [-1, 48]], "pad": [[1, 1], [1, 2, 0, 1]],
    "split_sizes": [[1, 3], [2, 2]], "padding_idx": [-1, 1],
}
FLOATS: dict[str, list[Any]] = {
    "eps": [1e-5, 1e-3], "momentum": [0.1, 0.2], "negative_slope": [0.1, 0.2], "alpha": [1.5, 2.5],
    "beta": [1.5, 2.5], "threshold": [0.5, 0.25], "lambd": [0.5, 0.25], "min_val": [-0.5, -0.25],
    "max_val": [0.5, 0.75], "scale": [0.5, 0.25], "value": [0.5, 2.0], "p": [0.5, 0.25], "margin": [0.5, 1.0],
    "scale_factor": [2.0, 3.0], "delta": [1.0, 2.0], "min": [-0.5, -0.25], "max": [0.5, 0.75],
    "other": [2.0, 3.0], "exponent": [2.0, 3.0], "fill_value": [2.0, 3.0], "dropout_p": [0.0],
    "input_scale": [1.5, 2.5], "correction": [0, 1], "label_smoothing": [0.0, 0.1],
    "scale_factors": [[2.0, 2.0], [3.0, 3.0]], "scales_h": [2.0, 3.0], "scales_w": [2.0, 3.0],
}
SCALARS: dict[str, list[Any]] = {"alpha": [2, 3], "start": [0, 1], "end": [8, 10], "step": [1, 2]}
STRINGS: dict[str, list[str]] = {
    "approximate": ["none", "tanh"], "reduce": ["sum", "prod", "amax", "amin", "mean"],
    "rounding_mode": ["trunc", "floor"], "mode": ["constant", "reflect", "replicate"], "side": ["left", "right"],
    "interpolation": ["linear", "lower", "higher", "midpoint", "nearest"],
}
DTYPES = [torch.float64, torch.float16, torch.int32]
NUMBER_TYPES = ("Scalar", "number", "float")  # parameters that torchlib may compare with their default
ENUMS = ("layout", "memory_format", "device", "pin_memory", "generator", "non_blocking")

_NORM_SHAPES = {"input": SHAPE, "weight": (4,), "bias": (4,), "running_mean": (4,), "running_var": (4,)}

# each body of a recurrent module's exports (``RECIPES``' lstm and gru ``modules``), as (what, arguments, input shape):
# its direction is varied around each
_RECURRENT_BODIES: list[tuple[str, dict[str, Any], tuple[int, ...]]] = [
    ("", {}, (5, 2, 4)), ("batch_first", {"batch_first": True}, (2, 5, 4)),
    ("num_layers", {"num_layers": 2}, (5, 2, 4)),
    ("num_layers:batch_first", {"num_layers": 2, "batch_first": True}, (2, 5, 4)),
    *((f"batch_first:{around}{extra}", {"batch_first": True, "around": around, **kw}, shape)
      for around, shape in (("then_transposed", (2, 5, 4)), ("transposed_before", (5, 2, 4)))
      for extra, kw in (("", {}), (":num_layers", {"num_layers": 2})))]


# per op name: tensor shapes (or ("long", shape, high) / ("bool", shape)) and argument values where the tables do not
# fit; "values" overrides the tables for this op, "fixed" pins a value that is not varied, "together" varies an
# argument with the tensor shapes it needs (value, {tensor: shape}); "with" gives template variants optional tensors
# (and the arguments that go with them); "bases" plans the op once more from another base, whose evidence is added;
# "dynamic" exports it with dynamic shapes; "exact": for this op only, not for the ops whose names it begins
RECIPES: dict[str, dict[str, Any]] = {
    # and with a bias, as ``nn.ConvTranspose2d`` holds one by default (a stripped UNet decoder's upsampling
    # ConvTranspose of three operands had no template)
    "conv_transpose": {"shapes": {"input": (1, 4, 5, 5, 5), "weight": (4, 2, 3, 3, 3)},
                       "values": {"stride": lambda n: ([2] * n, [1] + [2] * (n - 1)),
                                  "padding": lambda n: ([1] * n, [0] * n)}, "with": [{"bias": (2,)}]},
    # with a bias too: a Conv of three operands is conv2d's as much as convolution's (mixer's patch embedding).
    # ``groups`` takes its weight's shape with it (out, in / groups, kernel...): a depthwise convolution (MobileNet's,
    # ConvNeXt's: groups = channels) had no template, every one held group=1
    "conv": {"shapes": {"input": (1, 4, 8, 8, 8), "weight": (4, 4, 3, 3, 3)}, "with": [{"bias": (4,)}],
             "together": {"groups": [(2, {"weight": (4, 2, 3, 3, 3)}), (4, {"weight": (4, 1, 3, 3, 3)})]}},
    "convolution": {"shapes": {"input": (1, 4, 8, 8), "weight": (4, 4, 3, 3), "bias": (4,)},
                    "values": {"stride": [[1, 1], [2, 2]], "padding": [[1, 1], [0, 0]], "dilation": [[1, 1], [2, 2]],
                               "transposed": [False], "output_padding": [[0, 0]], "groups": [1]},
                    "together": {"groups": [(2, {"weight": (4, 2, 3, 3)}), (4, {"weight": (4, 1, 3, 3)})]}},
    "pixel_shuffle": {"shapes": {"self": (1, 36, 4, 4)}},
    # a batch norm the optimizer fuses into the convolution before it (ResNet's, MobileNet's): one Conv, whose metadata
    # names the batch norm and whose output FX names ``getitem`` (the batch norm's first result). The fusion needs
    # the convolution's weight and the batch norm's tensors as a model holds them (parameters and buffers), so these
    # are exports of modules (``fused_modules``), the convolution varied in kernel, stride, padding, dilation and
    # groups, so that none of those is a literal of the template (``gen_evidence.py``'s ``fused`` form); once with
    # trained statistics (the fused Conv gets a bias) and once as initialised, without a conv bias (the bias the
    # fusion makes is zero and left out: the zoo's convnet, the held-out ResNet and MobileNetV2 are random-init)
    "_native_batch_norm_legit_no_training": {"shapes": _NORM_SHAPES, "exact": True, "fused_modules": [
        (f"{what}{'' if trained else '_initialised'}", lambda conv=conv, trained=trained: _conv_bn(conv, trained))
        for trained in (True, False) for what, conv in (
            ("", dict(kernel_size=3, padding=1)), ("kernel_size", dict(kernel_size=1)),
            ("stride", dict(kernel_size=3, stride=2, padding=1)),
            ("dilation", dict(kernel_size=3, dilation=2, padding=2)),
            ("groups", dict(kernel_size=3, padding=1, groups=4)))]},
    "_native_batch_norm": {"shapes": _NORM_SHAPES}, "native_batch_norm": {"shapes": _NORM_SHAPES},
    "batch_norm": {"shapes": _NORM_SHAPES},
    # without running statistics (``nn.InstanceNorm2d``'s default: one InstanceNormalization), with and without its
    # affine weight and bias: without them torchlib makes ones and zeros inside the body (``val_<n>``), which the
    # template with weight and bias bound them as (the zoo's padnet: ``weight=val_5``, torch's None)
    # and evidence learned from that body too (``bases``): the tables' use_input_stats is False, whose body is a
    # BatchNormalization of the running statistics, so an InstanceNormalization's epsilon had no evidence (padnet)
    "instance_norm": {"shapes": _NORM_SHAPES, "bases": [{"use_input_stats": True, "running_mean": None,
                                                          "running_var": None}], "with": [
        {"running_mean": None, "running_var": None, "use_input_stats": True},
        {"running_mean": None, "running_var": None, "use_input_stats": True, "weight": None, "bias": None}]},
    # a bias of zeros the optimizer removes (``RemoveOptionalBiasFromGemm``: GPT-2's ``Conv1D`` as initialised, its
    # Gemm of two operands), exported as a module holds it, the weight's width varied so that it is masked
    "addmm": {"shapes": {"self": (4, 4), "mat1": (4, 4), "mat2": (4, 4)}, "fused_modules": [
        (what, lambda columns=columns: FusedModule(_ZeroBiasAddmm(8, columns))) for what, columns in (("", 16),
                                                                                                   ("weight", 24))]},
    "addmv": {"shapes": {"self": (4,), "mat": (4, 4), "vec": (4,)}},
    "baddbmm": {"shapes": {"self": (2, 4, 4), "batch1": (2, 4, 4), "batch2": (2, 4, 4)}},
    "addbmm": {"shapes": {"self": (4, 4), "batch1": (2, 4, 4), "batch2": (2, 4, 4)}},
    "pixel_unshuffle": {"shapes": {"self": (1, 2, 12, 12)}},
    # overloads with tensor parameters only that the default 4-D float operands cannot call: no body template was
    # exported for them, and their calls went unrecognised (the zoo's and held-out set's 15 mask ``bitwise_and``s and
    # 2 ``t``s): matrices, vectors, and masks of bools as models make them. Each for its own op only ("exact": a
    # recipe also serves the ops whose names it begins, and ``t`` would give ``transpose`` and ``tanh`` a matrix)
    "t": {"shapes": {"self": (4, 6)}, "exact": True},
    "mm": {"shapes": {"self": (4, 6), "mat2": (6, 8)}, "exact": True},
    "bmm": {"shapes": {"self": (2, 4, 6), "mat2": (2, 6, 8)}, "exact": True},
    "mv": {"shapes": {"self": (4, 6), "vec": (6,)}, "exact": True},
    "dot": {"shapes": {"self": (6,), "tensor": (6,)}, "exact": True},
    **{op: {"shapes": {"self": ("bool", SHAPE), "other": ("bool", SHAPE)}, "exact": True}
       for op in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "bitwise_not": {"shapes": {"self": ("bool", SHAPE)}, "exact": True},
    **{op: {"shapes": {"self": ("long", SHAPE, 64), "other": ("long", SHAPE, 4)}, "exact": True}
       for op in ("bitwise_left_shift", "bitwise_right_shift")},
    "prelu": {"shapes": {"weight": (4,)}, "exact": True},
    "expand_as": {"shapes": {"self": (1, 4, 1, 8)}, "exact": True},
    # overloads whose arguments the tables cannot give: sizes the operand broadcasts to (as ``expand``'s), one repeat
    # per axis, a pad of two ints per spatial axis, the one normalized axis of its weight and bias (each call failed
    # in torch with the tables' values, so no template was exported)
    "broadcast_to": {"shapes": {"self": (1, 4, 1, 8)}, "values": {"size": [[2, 4, 6, 8], [3, 4, 5, 8]]},
                     "exact": True},
    "repeat": {"values": {"repeats": [[1, 2, 1, 1], [2, 1, 3, 1]]}, "exact": True},
    **{op: {"shapes": {"self": (1, 2, 8, 8, 8)}, "values": {"padding": lambda n: ([1] * 2 * n, [2, 1] * n)}}
       for op in ("reflection_pad", "replication_pad")},
    "native_layer_norm": {"shapes": {"weight": (8,), "bias": (8,)}, "fixed": {"normalized_shape": [8]},
                          "exact": True},
    # four pads, the last two axes' (the tables' two pad one axis): a reflect or replicate ``mode`` needs an input of
    # one more axis than it pads, so with two its variants failed to export (the 4-D operand), and a stripped export's
    # ``F.pad(x, (1, 1, 1, 1), mode="reflect")``, one ``Pad`` of mode reflect, had no template
    "pad": {"values": {"pad": [[1, 1, 1, 1], [1, 2, 0, 1]]}, "exact": True,
            # and without a value, which a reflect or replicate mode does not take (the tables give one, so the mode
            # variants failed and no evidence named where the mode goes: ONNX writes replicate as edge)
            "bases": [{"value": None}]},
    # and as an audio model's feature encoder calls it (wav2vec2's: a 3-D input, one group per channel), where the
    # optimizer drops the Reshape back to the input's shape, the same as the one before the InstanceNormalization: that
    # body of four nodes had no template, and a stripped wav2vec2's group norm went unrecognised
    "group_norm": {"shapes": {"input": (2, 4, 6, 8), "weight": (4,), "bias": (4,)},
                   "bases": [{"input": (2, 4, 8), "num_groups": 4}]},
    "layer_norm": {"fixed": {"weight": None, "bias": None}, "with": [{"weight": (8,), "bias": (8,)}, {"weight": (8,)}]},
    "roll": {"values": {"shifts": [[1], [2], [-1]], "dims": [[1], [2]]}},
    # and to a size instead of by factors (``F.interpolate(x, size=...)``: SegFormer's decode head, feature
    # pyramids), a Resize of sizes, not scales, which had no template
    "upsample": {"shapes": {"input": (1, 2, 4, 4), "self": (1, 2, 4, 4)},
                 "values": {"output_size": [None], "scale_factors": [[2.0, 2.0], [3.0, 3.0]],
                            "align_corners": [False, True]},
                 "bases": [{"output_size": [8, 8], "scale_factors": None}]},
    # one layer, one direction, with biases, as ``nn.LSTM`` / ``nn.GRU`` hold their weights: the tables' num_layers (2)
    # and bools gave a params list that fits no layout ("Expected more weights in stacked_rnn"), so neither had a
    # template and a stripped LSTM read as lone transposes and views; a square input (length = batch) lets
    # ``batch_first`` vary on the same shapes
    # And as the modules call them, whose weights are parameters (``modules``): the optimizer folds what torchlib does
    # to each weight (its gates reordered by Slice and Concat) into constants, so a model's LSTM is a Transpose, the
    # LSTM node and a Transpose and Reshape of its output; each export varies what the module does (its sizes, so no
    # weight's shape is a literal of the template; batch first; two layers)
    **{op: {"shapes": {"input": (2, 2, 4), "hx": hx, "params": [(gates * 3, 4), (gates * 3, 3), (gates * 3,),
                                                                (gates * 3,)]},
            "fixed": {"has_biases": True, "num_layers": 1, "dropout": 0.0, "train": False, "bidirectional": False},
            "values": {"batch_first": [False, True]}, "exact": True,
            "modules": [(what, lambda op=op, kw=kw: _recurrent(op, **kw), shape) for what, kw, shape in (
                ("", {}, (5, 2, 4)), ("hidden_size", {"hidden_size": 5}, (5, 2, 4)),
                ("input_size", {"input_size": 6}, (5, 2, 6)),
                ("batch_first", {"batch_first": True}, (2, 5, 4)),
                ("batch_first:hidden_size", {"batch_first": True, "hidden_size": 5}, (2, 5, 4)),
                ("batch_first:input_size", {"batch_first": True, "input_size": 6}, (2, 5, 6)),
                ("num_layers", {"num_layers": 2}, (5, 2, 4)),
                ("num_layers:hidden_size", {"num_layers": 2, "hidden_size": 5}, (5, 2, 4)),
                ("num_layers:batch_first", {"num_layers": 2, "batch_first": True}, (2, 5, 4)),
                ("num_layers:batch_first:hidden_size", {"num_layers": 2, "batch_first": True, "hidden_size": 5},
                 (2, 5, 4)),
                # batch first between two sequence-first ops (an LSTM into a GRU): the optimizer cancels the Transpose
                # back to batch first with the next op's Transpose, so the body ends before it, or begins after it
                *((f"batch_first:{around}{extra}", {"batch_first": True, "around": around, **kw}, shape)
                  for around, shape in (("then_transposed", (2, 5, 4)), ("transposed_before", (5, 2, 4)))
                  for extra, kw in (("", {}), (":hidden_size", {"hidden_size": 5}), (":num_layers", {"num_layers": 2}),
                                    (":num_layers:hidden_size", {"num_layers": 2, "hidden_size": 5}))),
                # and both directions (a BiLSTM's tagger or encoder): the LSTM node's direction, around each body above
                *((f"{what}:bidirectional" if what else "bidirectional", {**kw, "bidirectional": True}, shape)
                  for what, kw, shape in _RECURRENT_BODIES))]}
       for op, gates, hx in (("lstm", 4, [(1, 2, 3), (1, 2, 3)]), ("gru", 3, (1, 2, 3)))},
    # a grid of (x, y) pairs, as ``F.grid_sample`` takes one: the tables' input shape made a grid of 8 in its last
    # dimension ("expected grid to have size 2 in last dimension"), so no template held a GridSample
    "grid_sampler": {"shapes": {"input": (1, 2, 4, 4), "grid": (1, 3, 3, 2)},
                     "values": {"interpolation_mode": [0, 1, 2], "padding_mode": [0, 1, 2],
                                "align_corners": [False, True]}},
    "einsum": {"shapes": {"tensors": [(2, 3, 3), (2, 3, 3)]},
               "values": {"equation": ["bij,bjk->bik", "bij,bkj->bik", "bij,bjk->bki"]}},
    "repeat_interleave": {"fixed": {"output_size": None}},
    "permute": {"values": {"dims": [[0, 2, 1, 3], [3, 1, 2, 0]]}},
    "flip": {"values": {"dims": [[1], [2], [1, 3]]}},
    "expand": {"shapes": {"self": (1, 4, 1, 8)}, "values": {"size": [[2, 4, 6, 8], [3, 4, 5, 8]]}},
    "squeeze": {"shapes": {"self": (2, 1, 6, 1)}, "values": {"dim": [1, 3, -1]}},
    # all values distinct: the optimizer shares one initializer between equal constants, changing the body
    "slice": {"values": {"dim": [2, -1], "start": [1, 0], "end": [5, 4], "step": [3, 4]},
              "sized": {"end": ("dim", -1)}},
    # an empty stride means stride = kernel_size
    "max_pool": {"shapes": {"self": (1, 2, 8, 8, 8)},
                 "values": {"padding": lambda n: ([0] * n, [1] * n), "ceil_mode": [False, True],
                            "stride": lambda n: ([2] * n, [1] + [2] * (n - 1), [])}},
    "avg_pool": {"shapes": {"self": (1, 2, 8, 8, 8)},
                 "values": {"padding": lambda n: ([0] * n, [1] * n), "ceil_mode": [False, True],
                            "stride": lambda n: ([2] * n, [1] + [2] * (n - 1), []),
                            "count_include_pad": [True, False], "divisor_override": [None]}},
    "adaptive": {"shapes": {"self": (1, 2, 8, 8, 8), "input": (1, 2, 8, 8, 8)},
                 "values": {"output_size": lambda n: ([1] * n, [2] * n)}},
    "mean": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "sum": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "amax": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "amin": {"values": {"dim": [[1], [-1], [1, 2]], "keepdim": [False, True]}},
    "scaled_dot_product_attention": {"shapes": {"query": (1, 2, 4, 8), "key": (1, 2, 4, 8), "value": (1, 2, 4, 8)},
                                     "values": {"scale": [0.5, 0.25], "is_causal": [False, True],
                                                "dropout_p": [0.0], "enable_gqa": [False]},
                                     "fixed": {"attn_mask": None},
                                     "with": [{"attn_mask": (1, 2, 4, 4)}, {"attn_mask": ("bool", (1, 2, 4, 4))}],
                                     # scale=1.0: the optimizer drops the Muls by sqrt(1) (t5, which does not scale)
                                     "template_values": {"scale": [1.0]}},
    # a 2-D input lowers to Gemm, with its bias and without (a pooler's or a head's dense layer without bias)
    "linear": {"shapes": {"input": (2, 4, 8), "weight": (6, 8), "bias": (6,)},
               "with": [{"input": (4, 8)}, {"input": (4, 8), "bias": None}]},
    "matmul": {"shapes": {"self": (2, 4, 8), "other": (8, 6)}},
    "embedding": {"shapes": {"weight": (10, 4), "indices": ("long", (2, 3), 10)},
                  "values": {"padding_idx": [-1, 1]}},
    "full": {"values": {"size": [[2, 3], [3, 4]]}},
    "arange": {},
    # a size read from a tensor is a number when its shapes are static (the export then holds no call, and failed:
    # 'int' object has no attribute 'name'); with dynamic shapes it is the ``Shape`` of one axis, then a ``Squeeze``
    # (gpt2_dynamic's two ``sym_size.int`` calls had no template)
    "sym_size": {"dynamic": True, "exact": True},
    "index_select": {"shapes": {"index": ("long", (2,), 4)}},
    # a view of a view: the optimizer makes the two Reshapes one, without ``allowzero`` and with the sizes it
    # computed (swin's attention windows), which no one-op export of view holds; exported once more that way
    # (``gen_evidence.py``'s ``fused`` form)
    "view": {"exact": True, "fused": lambda x: x.flatten()},
    # ``x[rows, cols]`` with index tensors that broadcast, as transformers builds its attention masks (a (batch,
    # seq) mask indexed by (batch, 1, 1, 1) and (1, 1, seq, 1) positions, gpt2_dynamic's and llama_gqa's): called as
    # the aten op (``Tensor.index`` is another method), and no other op's recipe (``index_add``, ``index_put``, ...)
    "index": {"op": True, "exact": True,
              "shapes": {"self": (2, 8), "indices": [("long", (2, 1, 1, 1), 2), ("long", (1, 1, 8, 1), 8)]},
              # and one position per row (CLIP's pooled token: ``x[arange(batch), ids.argmax(-1)]``, an Unsqueeze of
              # each index, a Concat and a GatherND, which no template held)
              "with": [{"indices": [("long", (2,), 2), ("long", (2,), 8)]}],
              # and of positions a model computes from constants (transformers' mask indexing of static shapes: BERT's,
              # DistilBERT's, RoBERTa's): the optimizer folds them into the call, one GatherND of a constant
              "fused_modules": [("", lambda: FusedModule(_ConstantPositions()))]},
    "masked_fill": {"shapes": {"mask": ("bool", SHAPE), "value": ()}},  # (.Tensor's value: a 0-d tensor)
    "_to_copy": {"values": {"dtype": DTYPES}},
    "topk": {"values": {"k": [2, 3], "dim": [1, -1], "largest": [True, False], "sorted": [True]}},
    "cat": {"shapes": {"tensors": [SHAPE, SHAPE]}},
    "stack": {"shapes": {"tensors": [SHAPE, SHAPE]}},
}


def _conv_bn(conv: dict[str, Any], trained: bool, channels: int = 4) -> torch.nn.Module:
    """A 2-D convolution of ``conv``'s arguments, then a batch norm, in eval mode: ``trained``, with statistics and an
    affine part away from their initial values; else as initialised, the convolution without a bias."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(channels)
    if trained:
        for t in (bn.running_mean, bn.bias):
            t.data.uniform_(-1.0, 1.0)
        for t in (bn.running_var, bn.weight):
            t.data.uniform_(0.5, 2.0)
    layer = torch.nn.Conv2d(channels, channels, **conv, bias=trained)
    return FusedModule(torch.nn.Sequential(layer, bn).eval())


class _Output(torch.nn.Module):
    """A recurrent module's output alone, as a model reads it (``y, _ = self.lstm(x)``); ``around``: its input
    transposed to batch first before it (``transposed_before``), or its output back to sequence first after it
    (``then_transposed``), as the op before or after a batch-first module in a model may do."""

    def __init__(self, module: torch.nn.Module, around: str = "") -> None:
        super().__init__()
        self.module, self.around = module, around

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.module(x.transpose(0, 1) if self.around == "transposed_before" else x)[0]
        return y.transpose(0, 1) if self.around == "then_transposed" else y


def _recurrent(op: str, input_size: int = 4, hidden_size: int = 3, around: str = "", **kw: Any) -> torch.nn.Module:
    """``nn.LSTM`` or ``nn.GRU`` (``op``) of these sizes, its output alone, in eval mode."""
    torch.manual_seed(0)
    layer = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[op](input_size, hidden_size, **kw)
    return _Output(layer, around).eval()


class _ZeroBiasAddmm(torch.nn.Module):
    """``addmm`` of a weight and a bias of zeros, as a layer holds them (``Conv1D``): its input flattened to rows."""

    def __init__(self, rows: int, columns: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(rows, columns))
        self.bias = torch.nn.Parameter(torch.zeros(columns))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, self.weight.shape[0]), self.weight)


class _ConstantPositions(torch.nn.Module):
    """``x[rows, cols]`` of positions made from constants (aranges, unsqueezed to broadcast), as transformers makes
    the positions of a mask it indexes: with static shapes they are one constant the call's GatherND reads."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(x.shape[0]).reshape(-1, 1, 1, 1)
        cols = torch.arange(x.shape[1]).reshape(1, 1, -1, 1)
        return x[rows, cols]


class FusedModule(torch.nn.Module):
    """A module that takes its input as ``OneOp`` takes its tensors (``forward(*tensors)``: the export's input is
    named ``tensors_0``, as ``gen_templates.py`` reads it)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.inner(tensors[0])


FUSED_INPUT = (1, 4, 8, 8)  # the input of the ``fused_modules`` exports
