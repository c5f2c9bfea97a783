"""Links from literals to aten arguments, by evidence: the literal reaches the operand or attribute through which
torchlib's lowering implements that argument, and its value is what the lowering makes of the argument.

Each rule names an ONNX *place* (an attribute ``Op.attr``, or an operand ``Op[slot]`` that a constant reaches
through value-preserving ops such as Cast and CastLike) and how the lowering turns the argument into the value
found there (``perm`` is the identity with ``dim0`` and ``dim1`` swapped; ``pads`` is ``padding`` repeated for
begin and end). Equal values in any other place are a coincidence, not a link.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import onnx

from inspector.core.bodies.body import Body
from inspector.core.model.fx import Symbol, TensorRef
from inspector.core.util.slices import SLICE, in_slices, listed

Shape = list[int | None]


@dataclass(frozen=True, slots=True)
class ArgLink:
    """Evidence that a literal came from an aten argument: the rule that tied it and what the data flow showed."""

    parameter: str
    value: Any  # the argument's value in this call (a whole list even when one element is linked)
    rule: str  # the evidence in words: "perm swaps dims 1 and 2", "Conv.pads [1, 1] are padding [1] at begin and end"
    place: str = ""  # where the lowering implements the argument and the literal sits: "Transpose.perm", "Mul[1]"


@dataclass(frozen=True, slots=True)
class Use:
    """A place a constant reaches: operand ``slot`` of ``node`` (top-level index in the body), through ``via``."""

    node: int
    op_type: str
    slot: int
    via: tuple[str, ...]  # value-preserving ops passed on the way (Cast, CastLike, Identity, Sqrt, Reshape)


_PASS_THROUGH = {"Cast": 0, "CastLike": 0, "Identity": 0, "Sqrt": 0, "Reshape": 0}
_MAX_VIA = 4


class BodyFlow:
    """Consumers of each value of a body and which of the body's inputs each value derives from (one pass)."""

    def __init__(self, body: Body, shapes: Mapping[str, Shape]) -> None:
        self.body = body
        self.shapes = shapes
        self.consumers: dict[str, list[tuple[int, int]]] = {}
        self.producer: dict[str, int] = {}
        self.derives: dict[str, frozenset[int]] = {name: frozenset((k,)) for k, name in enumerate(body.inputs)}
        for i, node in enumerate(body.nodes):
            src: frozenset[int] = frozenset()
            for slot, name in enumerate(node.input):
                if name:
                    self.consumers.setdefault(name, []).append((i, slot))
                    src |= self.derives.get(name, frozenset())
            for name in node.output:
                if name:
                    self.producer[name] = i
                    self.derives[name] = src

    def uses(self, name: str) -> list[Use]:
        """Where the value ``name`` lands, following value-preserving ops (bounded, no cycles in a body)."""
        out: list[Use] = []
        stack: list[tuple[str, tuple[str, ...]]] = [(name, ())]
        while stack:
            value, via = stack.pop()
            for i, slot in self.consumers.get(value, ()):
                node = self.body.nodes[i]
                if _PASS_THROUGH.get(node.op_type) == slot and len(via) < _MAX_VIA and node.output:
                    stack.append((node.output[0], (*via, node.op_type)))
                elif node.op_type == "Concat" and len(via) < _MAX_VIA and node.output:
                    stack.append((node.output[0], (*via, f"Concat[{slot}]")))
                else:
                    out.append(Use(i, node.op_type, slot, via))
        return out

    def input_shape(self, k: int) -> Shape | None:
        """The static shape of the body's ``k``-th input (the call's ``k``-th tensor argument), if typed."""
        if k >= len(self.body.inputs):
            return None
        return self.shapes.get(self.body.inputs[k])

    def from_inputs(self, name: str) -> frozenset[int]:
        return self.derives.get(name, frozenset())


class GraphShapes(Mapping[str, Shape]):
    """Static shapes (None for symbolic dims) of the typed values of a graph, each read on first use.

    Typing every value of a 100k-node graph costs about as much as parsing it, and the link rules ask for the
    shapes of a few hundred: so only where each name is declared is read up front, on the first look-up. The last
    typed declaration among inputs, value infos and outputs wins; ``outer`` (the enclosing graph's shapes, for a
    branch or loop body) answers for names this graph does not type."""

    def __init__(self, graph: onnx.GraphProto, outer: GraphShapes | None = None) -> None:
        self._graph = graph
        self._outer = outer
        self._where: dict[str, onnx.ValueInfoProto] | None = None
        self._repeated: dict[str, list[onnx.ValueInfoProto]] = {}
        self._known: dict[str, Shape | None] = {}

    def _declared(self) -> dict[str, onnx.ValueInfoProto]:
        """Name -> its last declaration; names declared more than once keep all theirs in ``_repeated``."""
        if self._where is None:
            g = self._graph
            # read in C a slice at a time: a 100k-node export has 100k value infos, and in one go each of these
            # steps held the GIL for 15-35 ms (an app's GUI thread waiting for it froze)
            seq = listed((g.input, g.value_info, g.output))
            names: list[str] = []
            self._where = {}
            for start, piece in zip(itertools.count(0, SLICE), in_slices(seq)):
                names += map(attrgetter("name"), piece)
                self._where.update(zip(names[start:], piece))
            if len(self._where) < len(seq):
                for name, v in zip(names, seq):
                    self._repeated.setdefault(name, []).append(v)
        return self._where

    def _shape(self, name: str) -> Shape | None:
        known = self._known
        if name in known:
            return known[name]
        shape: Shape | None = None
        last = self._declared().get(name)
        if last is not None:
            for v in reversed(self._repeated.get(name, (last,))):
                shape = value_shape(v)
                if shape is not None:
                    break
        if shape is None and self._outer is not None:
            shape = self._outer._shape(name)
        known[name] = shape
        return shape

    def __getitem__(self, name: str) -> Shape:
        shape = self._shape(name) if isinstance(name, str) else None
        if shape is None:
            raise KeyError(name)
        return shape

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(self._outer or ())
        names.update(dict.fromkeys(self._declared()))
        return (n for n in names if self._shape(n) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def value_shape(v: onnx.ValueInfoProto) -> Shape | None:
    """The static shape of one typed value (None for symbolic dims), or None when it has no tensor shape."""
    t = v.type.tensor_type
    if v.type.HasField("tensor_type") and t.HasField("shape"):
        return [int(d.dim_value) if d.HasField("dim_value") else None for d in t.shape.dim]
    return None


# --- what the lowering makes of an argument -------------------------------------------------------------------

Args = dict[str, Any]
Expect = Callable[[Any, Args, "Ctx"], tuple[Any, str] | None]


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a rule may read: the literal's value and place, and the body's data flow."""

    value: Any
    flow: BodyFlow
    node: int  # top-level node the place belongs to (-1 when unknown)
    via: tuple[str, ...] = ()

    def rank(self, k: int = 0) -> int | None:
        shape = self.flow.input_shape(k)
        return len(shape) if shape is not None else None

    def node_input_rank(self) -> int | None:
        if self.node < 0:
            return None
        node = self.flow.body.nodes[self.node]
        shape = self.flow.shapes.get(node.input[0]) if node.input else None
        return len(shape) if shape is not None else None


def _same(a: Any, b: Any) -> bool:
    a, b = _unwrap(a), _unwrap(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return _num(a) is not None and _num(a) == _num(b)
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return isinstance(a, str) and a == b
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    return _close(float(x), float(y))


def _num(v: Any) -> int | float | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return None


def _unwrap(v: Any) -> Any:
    while isinstance(v, list) and len(v) == 1 and not isinstance(v[0], list | dict):
        v = v[0]
    while isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
        v = v[0]
    return v


def _close(a: float, b: float) -> bool:
    """Equal up to float32 rounding (relative; attributes and constants are float32, arguments Python floats)."""
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(a) or math.isinf(b) or a == 0 or b == 0:
        return a == b
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def _norm(d: int, rank: int | None) -> int:
    return d % rank if rank and -rank <= d < rank else d


def _dims_match(value: Any, dims: Any, rank: int | None) -> bool:
    """``value`` (an axis or axes) equals ``dims`` with negative dims normalised against ``rank`` when known."""
    v, d = _unwrap(value), _unwrap(dims)
    vs = v if isinstance(v, list) else [v]
    ds = d if isinstance(d, list) else [d]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (*vs, *ds)) or len(vs) != len(ds):
        return False
    if vs == ds:
        return True
    return rank is not None and [_norm(x, rank) for x in vs] == [_norm(x, rank) for x in ds]


# expectations: (argument value, all args, ctx) -> (expected value, evidence) or None


def _equal(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    return (arg, "equals the argument") if _same(ctx.value, arg) else None


def _dim(rank_of: int | None = 0, extra_rank: int = 0) -> Expect:
    """An axis (or axes) given as the argument, negative dims normalised against the input's rank."""

    def expect(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        rank = ctx.node_input_rank() if rank_of is None else ctx.rank(rank_of)
        rank = rank + extra_rank if rank is not None else None
        if _dims_match(ctx.value, arg, rank):
            same = _unwrap(ctx.value) == _unwrap(arg)
            return arg, "equals the argument" if same else f"is the argument normalised against rank {rank}"
        return None

    return expect


def _swap(_arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    perm, d0, d1 = ctx.value, args.get("dim0"), args.get("dim1")
    if not isinstance(perm, list) or not isinstance(d0, int) or not isinstance(d1, int) or not perm:
        return None
    r = len(perm)
    if not (-r <= d0 < r and -r <= d1 < r):
        return None
    want = list(range(r))
    a, b = d0 % r, d1 % r
    want[a], want[b] = want[b], want[a]
    return (want, f"perm swaps dims {a} and {b}") if perm == want else None


def _permute(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    perm = ctx.value
    if isinstance(perm, list) and isinstance(arg, list) and len(arg) == len(perm) \
            and all(isinstance(x, int) for x in arg) and [_norm(x, len(perm)) for x in arg] == perm:
        return arg, "perm is dims" + (" normalised" if arg != perm else "")
    return None


def _twice(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """ONNX pads: the padding at the beginning of each spatial axis, then at the end."""
    if isinstance(arg, list) and _same(ctx.value, [*arg, *arg]):
        return arg, f"pads {ctx.value} are padding {arg} at begin and end"
    return None


def _stride_or_kernel(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    if arg == [] or arg is None:  # torch: an empty stride means stride = kernel_size
        k = args.get("kernel_size")
        return (arg, f"stride is empty, so the lowering uses kernel_size {k}") if _same(ctx.value, k) else None
    return _equal(arg, args, ctx)


def _last_axes(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """Normalisation over the last ``len(normalized_shape)`` dims starts at axis ``-len(normalized_shape)``."""
    if isinstance(arg, list) and arg and _unwrap(ctx.value) == -len(arg):
        return arg, f"axis {-len(arg)} = -len(normalized_shape)"
    return None


def _bool(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    return (arg, f"{ctx.value} is {arg}") if isinstance(arg, bool) and _same(ctx.value, int(arg)) else None


def _string(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    text = arg.text if isinstance(arg, Symbol) else arg
    return (text, "equals the argument") if isinstance(text, str) and ctx.value == text else None


def _scalar(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    if isinstance(arg, bool) or not isinstance(arg, (int, float)):
        return None
    return (arg, "equals the argument") if _same(ctx.value, arg) and not isinstance(_unwrap(ctx.value), list) else None


def _alpha(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    if arg == 1:  # torchlib multiplies by alpha only when it is not 1
        return None
    return _scalar(arg, args, ctx)


def _element(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """One element of an int list argument, assembled with Concat: the k-th piece is element k (-1 becomes 1
    where the lowering takes the absolute value, as expand does)."""
    if not isinstance(arg, list):
        return None
    k = next((int(v[len("Concat["):-1]) for v in ctx.via if v.startswith("Concat[")), None)
    if k is None:
        return _equal(arg, _args, ctx) if _same(ctx.value, arg) else None
    if k < len(arg) and isinstance(arg[k], int) and _unwrap(ctx.value) in (arg[k], abs(arg[k])):
        return arg, f"element {k} of {arg}"
    return None


_REDUCTIONS = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": None}


def _reduction(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """scatter_reduce's ``reduce`` as ScatterElements' ``reduction`` ("sum" -> "add", "amax" -> "max", ...)."""
    text = arg.text if isinstance(arg, Symbol) else arg
    if isinstance(text, str) and _REDUCTIONS.get(text, text) == ctx.value:
        return text, f"reduction {ctx.value!r} is reduce {text!r}"
    return None


_DTYPES = {"torch.float32": 1, "torch.float": 1, "torch.uint8": 2, "torch.int8": 3, "torch.int16": 5,
           "torch.int32": 6, "torch.int64": 7, "torch.long": 7, "torch.bool": 9, "torch.float16": 10,
           "torch.half": 10, "torch.float64": 11, "torch.double": 11, "torch.complex64": 14,
           "torch.complex128": 15, "torch.bfloat16": 16}


def _dtype(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    text = arg.text if isinstance(arg, Symbol) else arg
    code = _DTYPES.get(str(text)) if text is not None else None
    if code is not None and ctx.value == code:
        return text, f"ONNX type {code} is {text}"
    return None


# --- the rules ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """``parameter`` is implemented through ``place``: ``Op.attr`` (an attribute) or ``Op[slot]`` (an operand)."""

    parameter: str
    op_type: str
    attribute: str | None = None
    slots: tuple[int, ...] = ()
    expect: Expect = _equal

    @property
    def place(self) -> str:
        if self.attribute is not None:
            return f"{self.op_type}.{self.attribute}"
        return f"{self.op_type}[{'|'.join(map(str, self.slots))}]"


def _a(param: str, op: str, attr: str, expect: Expect = _equal) -> Rule:
    return Rule(param, op, attr, (), expect)


def _o(param: str, op: str, *slots: int, expect: Expect = _scalar) -> Rule:
    return Rule(param, op, None, slots, expect)


_POOL = [_a("kernel_size", "MaxPool", "kernel_shape"), _a("stride", "MaxPool", "strides", _stride_or_kernel),
         _a("padding", "MaxPool", "pads", _twice), _a("dilation", "MaxPool", "dilations"),
         _a("ceil_mode", "MaxPool", "ceil_mode", _bool)]
_AVG = [_a("kernel_size", "AveragePool", "kernel_shape"), _a("stride", "AveragePool", "strides", _stride_or_kernel),
        _a("padding", "AveragePool", "pads", _twice), _a("ceil_mode", "AveragePool", "ceil_mode", _bool),
        _a("count_include_pad", "AveragePool", "count_include_pad", _bool)]
_CONV = [_a("stride", "Conv", "strides"), _a("padding", "Conv", "pads", _twice), _a("dilation", "Conv", "dilations"),
         _a("groups", "Conv", "group")]
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
           "ge": "GreaterOrEqual", "eq": "Equal", "ne": "Equal", "pow": "Pow", "remainder": "Mod", "fmod": "Mod",
           "minimum": "Min", "maximum": "Max", "bitwise_and": "And", "bitwise_or": "Or", "floor_divide": "Div"}
_REDUCE = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd"}

RULES: dict[str, list[Rule]] = {
    "transpose": [_a("dim0", "Transpose", "perm", _swap), _a("dim1", "Transpose", "perm", _swap)],
    "permute": [_a("dims", "Transpose", "perm", _permute)],
    "softmax": [_a("dim", "Softmax", "axis", _dim())],
    "_softmax": [_a("dim", "Softmax", "axis", _dim())],
    "log_softmax": [_a("dim", "LogSoftmax", "axis", _dim())],
    "cat": [_a("dim", "Concat", "axis", _dim(None))],
    "concat": [_a("dim", "Concat", "axis", _dim(None))],
    "stack": [_a("dim", "Concat", "axis", _dim(None, 1)), _o("dim", "Unsqueeze", 1, expect=_dim(None, 1))],
    "layer_norm": [_a("eps", "LayerNormalization", "epsilon", _scalar),
                   _a("normalized_shape", "LayerNormalization", "axis", _last_axes)],
    "rms_norm": [_a("eps", "RMSNormalization", "epsilon", _scalar)],
    "group_norm": [_a("eps", "GroupNormalization", "epsilon", _scalar),
                   _a("num_groups", "GroupNormalization", "num_groups", _scalar)],
    "batch_norm": [_a("eps", "BatchNormalization", "epsilon", _scalar)],
    "_native_batch_norm_legit_no_training": [_a("eps", "BatchNormalization", "epsilon", _scalar)],
    "native_batch_norm": [_a("eps", "BatchNormalization", "epsilon", _scalar)],
    "conv1d": _CONV, "conv2d": _CONV, "conv3d": _CONV, "convolution": _CONV,
    "max_pool1d": _POOL, "max_pool2d": _POOL, "max_pool3d": _POOL,
    "avg_pool1d": _AVG, "avg_pool2d": _AVG, "avg_pool3d": _AVG,
    "unsqueeze": [_o("dim", "Unsqueeze", 1, expect=_dim(0, 1))],
    "squeeze": [_o("dim", "Squeeze", 1, expect=_dim()), _o("dims", "Squeeze", 1, expect=_dim())],
    "select": [_a("dim", "Gather", "axis", _dim()), _o("index", "Gather", 1)],
    "index_select": [_a("dim", "Gather", "axis", _dim())],
    "gather": [_a("dim", "GatherElements", "axis", _dim())],
    "slice": [_o("dim", "Slice", 3, expect=_dim()), _o("start", "Slice", 1), _o("end", "Slice", 2),
              _o("step", "Slice", 4)],
    "cumsum": [_o("dim", "CumSum", 1, expect=_dim())],
    "sym_size": [_a("dim", "Shape", "start", _dim()), _a("dim", "Shape", "end", lambda a, args, c: (
        (a, f"end is dim + 1 = {c.value}") if isinstance(a, int) and isinstance(c.value, int)
        and (c.value == a + 1 or (a < 0 and c.value == a + 1 and a + 1 != 0)) else None))],
    "split": [_o("split_size", "SplitToSequence", 1), _a("dim", "SplitToSequence", "axis", _dim()),
              _o("split_size", "Split", 1), _a("dim", "Split", "axis", _dim())],
    "gelu": [_a("approximate", "Gelu", "approximate", _string)],
    "leaky_relu": [_a("negative_slope", "LeakyRelu", "alpha", _scalar)],
    "elu": [_a("alpha", "Elu", "alpha", _scalar)],
    "hardtanh": [_o("min_val", "Clip", 1), _o("max_val", "Clip", 2)],
    "clamp": [_o("min", "Clip", 1), _o("max", "Clip", 2)],
    "view": [_o("size", "Reshape", 1, expect=_element)],
    "_unsafe_view": [_o("size", "Reshape", 1, expect=_element)],
    "reshape": [_o("shape", "Reshape", 1, expect=_element)],
    "expand": [_o("size", "Expand", 1, expect=_element)],
    "zeros": [_o("size", "Expand", 1, expect=_element), _o("size", "ConstantOfShape", 0, expect=_element)],
    "ones": [_o("size", "Expand", 1, expect=_element), _o("size", "ConstantOfShape", 0, expect=_element)],
    "new_zeros": [_o("size", "Expand", 1, expect=_element)],
    "new_ones": [_o("size", "Expand", 1, expect=_element)],
    "full": [_o("size", "Expand", 1, expect=_element), _o("fill_value", "Expand", 0)],
    "full_like": [_o("fill_value", "Expand", 0)],
    "fill": [_o("value", "Expand", 0)],
    "arange": [_o("start", "Range", 0), _o("end", "Range", 1), _o("step", "Range", 2)],
    "where": [_o("other", "Where", 2), _o("self", "Where", 1)],
    "masked_fill": [_o("value", "Where", 1)],
    "_to_copy": [_a("dtype", "Cast", "to", _dtype)],
    "convert_element_type": [_a("dtype", "Cast", "to", _dtype)],
    "scalar_tensor": [_a("dtype", "Cast", "to", _dtype), _o("s", "Cast", 0)],
    "scatter_reduce": [_a("reduce", "ScatterElements", "reduction", _reduction), _a("dim", "ScatterElements", "axis",
                                                                                    _dim())],
    "pad": [_a("mode", "Pad", "mode", _string), _o("value", "Pad", 2)],
    "constant_pad_nd": [_o("value", "Pad", 2)],
    "embedding": [],
    "scaled_dot_product_attention": [_o("dropout_p", "Dropout", 1)],
    "triu": [_o("diagonal", "Trilu", 1)], "tril": [_o("diagonal", "Trilu", 1)],
    "topk": [_o("k", "TopK", 1), _a("dim", "TopK", "axis", _dim())],
    "argmax": [_a("dim", "ArgMax", "axis", _dim()), _a("keepdim", "ArgMax", "keepdims", _bool)],
    "argmin": [_a("dim", "ArgMin", "axis", _dim()), _a("keepdim", "ArgMin", "keepdims", _bool)],
}
for _name, _op in _BINARY.items():
    RULES.setdefault(_name, [_o("other", _op, 1), _o("exponent", _op, 1), _o("alpha", "Mul", 0, 1, expect=_alpha)])
for _name, _op in _REDUCE.items():
    RULES.setdefault(_name, [_o("dim", _op, 1, expect=_dim()), _a("keepdim", _op, "keepdims", _bool)])


def rules_for(target: str) -> list[Rule]:
    """Rules of ``aten::name.overload`` (by the op name: overloads share their lowering's places)."""
    name = target.split("::", 1)[-1].split(".", 1)[0]
    return RULES.get(name, [])


# --- applying them -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Place:
    """Where a literal sits: an attribute of a top-level node, or the operands a constant reaches."""

    attribute: tuple[int, str, str] | None  # (node, op_type, attribute)
    uses: tuple[Use, ...]
    label: str = "constant"  # how the evidence names the literal: "constant val_49"


def link(target: str, args: Args, value: Any, place: Place, flow: BodyFlow) -> list[ArgLink]:
    """Every rule of ``target`` whose place this literal is and whose expected value it holds."""
    out: list[ArgLink] = []
    seen: set[tuple[str, str]] = set()
    for rule in rules_for(target):
        if rule.parameter not in args:
            continue
        arg = args[rule.parameter]
        for ctx in _contexts(rule, value, place, flow):
            hit = rule.expect(arg, args, ctx)
            if hit is not None and (rule.parameter, rule.place) not in seen:
                seen.add((rule.parameter, rule.place))
                how = f" (through {', '.join(ctx.via)})" if ctx.via else ""
                text = hit[1].replace("the argument", rule.parameter)
                text = f"{rule.place} {text}" if not text.startswith(("perm ", "pads ", "axis ", "end ")) else text
                out.append(ArgLink(rule.parameter, plain_value(arg), f"{text}{how}", rule.place))
    if target.split("::", 1)[-1].startswith("scaled_dot_product_attention") and place.uses:
        out += _sdpa_scale(args, value, place, flow)
    return out


def _contexts(rule: Rule, value: Any, place: Place, flow: BodyFlow) -> Iterable[Ctx]:
    if rule.attribute is not None:
        if place.attribute is not None and place.attribute[1:] == (rule.op_type, rule.attribute):
            yield Ctx(value, flow, place.attribute[0])
        return
    for use in place.uses:
        if use.op_type == rule.op_type and use.slot in rule.slots and "Sqrt" not in use.via:
            yield Ctx(value, flow, use.node, use.via)


_SCALE_PLACE = "Mul on query/key"


def _sdpa_scale(args: Args, value: Any, place: Place, flow: BodyFlow) -> list[ArgLink]:
    """The SDPA scale: a constant multiplying query and key (as its square root, torchlib's split) or their
    product; with the default scale, the value must be 1/sqrt(E) for the query's typed last dimension E."""
    v = _num(_unwrap(value))
    if v is None or isinstance(v, bool) or v <= 0 or "scale" not in args:
        return []
    q_k: set[int] = set()
    for use in place.uses:
        node = flow.body.nodes[use.node]
        if use.op_type != "Mul" or len(node.input) != 2:
            continue
        side: set[int] = set(flow.from_inputs(node.input[1 - use.slot]) & {0, 1})
        if not side and node.output:  # key read through a rewritten chain: it is the right factor of q @ k^T
            side = {1 for i, slot in flow.consumers.get(node.output[0], ()) if
                    flow.body.nodes[i].op_type == "MatMul" and slot == 1}
        q_k |= side
    if not q_k:
        return []
    sqrt_in_graph = any("Sqrt" in u.via for u in place.uses if u.op_type == "Mul")
    per_mul = math.sqrt(float(v)) if sqrt_in_graph else float(v)
    both = q_k == {0, 1}
    applied = per_mul * per_mul if both else per_mul  # the factor the product query @ key^T is scaled by
    if both:
        how = "its square root taken in the graph, applied to both query and key" if sqrt_in_graph else \
            "applied to both query and key"
    else:
        how = "applied to the " + ("query" if 0 in q_k else "key")
    scale = args["scale"]
    if scale is not None:
        if isinstance(scale, (int, float)) and _close(applied, float(scale)):
            form = "sqrt(scale)" if both and not sqrt_in_graph else "scale"
            return [ArgLink("scale", scale, f"{place.label} is {form}, {how}", _SCALE_PLACE)]
        return []
    q = flow.input_shape(0)
    e = q[-1] if q else None
    if e and _close(applied, 1.0 / math.sqrt(e)):
        form = "sqrt(1/sqrt(E))" if both and not sqrt_in_graph else "1/sqrt(E)"
        return [ArgLink("scale", None, f"default scale: {place.label} is {form}, {how}, for head dim E={e} "
                                       f"(the last dim of query {_shape_text(q)})", _SCALE_PLACE)]
    return []


def _fmt(x: float) -> str:
    return f"{x:.8g}"


def _shape_text(shape: Shape | None) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]" if shape is not None else "?"


def plain_value(v: Any) -> Any:
    """An argument value as plain data: symbols as their text, other FX nodes as ``{"node": name}``."""
    if isinstance(v, Symbol):
        return v.text
    if isinstance(v, TensorRef):
        return {"node": v.name}
    if isinstance(v, (list, tuple)):
        return [plain_value(x) for x in v]
    return v


def literal_place(body: Body, path: Sequence[int | str], name: str, kind: str, op_type: str,
                  flow: BodyFlow) -> Place:
    """The place of a literal: an attribute of a top-level node, or the uses of a constant's value."""
    if kind == "initializer":
        return Place(None, tuple(flow.uses(name)), f"constant {name}")
    if len(path) != 1 or not isinstance(path[0], int):
        return Place(None, ())
    node = body.nodes[path[0]]
    if kind == "constant":
        label = f"constant {node.output[0]}" if node.output else "constant"
        return Place(None, tuple(flow.uses(node.output[0])), label) if node.output else Place(None, ())
    return Place((path[0], op_type, name), ())


# --- shape-specialised values ------------------------------------------------------------------------------------


def explain_shape(target: str, args: Args, value: Any, place: Place, flow: BodyFlow) -> str | None:
    """Why a constant shape is what it is, from the typed shapes of the values it is used with, when the lowering
    computed it from an input shape at trace time (it would be wrong for another shape); None otherwise."""
    v = value
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return None
    op = target.split("::", 1)[-1].split(".", 1)[0]
    for use in place.uses:
        if use.op_type != "Reshape" or use.slot != 1 or use.via:
            continue
        node = flow.body.nodes[use.node]
        data = node.input[0] if node.input else ""
        shape = flow.shapes.get(data)
        if shape is None or None in shape:
            continue
        if op in ("view", "_unsafe_view", "reshape"):
            text = _resolved_size(v, args.get("size", args.get("shape")), shape, data)
        elif op == "scaled_dot_product_attention":
            text = _key_reshape(v, shape, data, flow)
        else:
            text = None
        if text:
            return text
    return None


def _dims(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _resolved_size(v: list[int], size: Any, shape: Shape, data: str) -> str | None:
    """``view(size)`` with -1 (or a symbolic size) where the baked shape has a number: resolved at trace time."""
    if not isinstance(size, list) or len(size) != len(v):
        return None
    numel = math.prod(d for d in shape if d is not None)
    unresolved = [i for i, s in enumerate(size) if not isinstance(s, int) or s == -1]
    if not unresolved or any(v[i] == -1 for i in unresolved) or math.prod(v) != numel:
        return None
    if any(isinstance(size[i], int) and size[i] != v[i] for i in range(len(v)) if i not in unresolved):
        return None
    which = ", ".join(f"size[{i}]={size[i] if isinstance(size[i], int) else plain_value(size[i])}" for i in unresolved)
    return f"{_dims(v)}: {which} resolved from the static shape of {data} {_dims(shape)}"


def _key_reshape(v: list[int], shape: Shape, data: str, flow: BodyFlow) -> str | None:
    """torchlib's SDPA reshapes the key to (-1, S, E), transposes it, and reshapes it back to (..., E, S)."""
    dims = [d for d in shape if d is not None]
    if len(v) == 3 and len(dims) >= 2 and v[1:] == dims[-2:] and v[0] in (-1, math.prod(dims[:-2])):
        return f"{_dims(v)} = (-1, S, E) of key {data} {_dims(shape)}" + (" (-1 resolved)" if v[0] != -1 else "")
    # the reshape back: its data comes from Transpose(Reshape(key)); the key's leading dims, then E and S
    producer = flow.producer.get(data)
    if producer is None or flow.body.nodes[producer].op_type != "Transpose":
        return None
    before = flow.producer.get(flow.body.nodes[producer].input[0])
    if before is None or flow.body.nodes[before].op_type != "Reshape":
        return None
    key = flow.body.nodes[before].input[0]
    k = flow.shapes.get(key)
    if k is None or None in k or len(k) < 2:
        return None
    kd = [d for d in k if d is not None]
    if len(v) == len(kd) and v[:-2] == kd[:-2] and v[-2:] == [kd[-1], kd[-2]]:
        return f"{_dims(v)} = key's leading dims, then (E, S), of key {key} {_dims(k)}"
    if len(v) == 4 and len(kd) == 5 and v[-2:] == [kd[-1], kd[-2]] and math.prod(v[:-2]) == math.prod(kd[:-2]):
        return f"{_dims(v)} = key's leading dims merged, then (E, S), of key {key} {_dims(k)}"
    return None
