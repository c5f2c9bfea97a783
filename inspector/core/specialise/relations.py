"""Relations between an aten argument and a literal of its lowering: what the lowering makes of the argument
(``perm`` is the identity with ``dim0`` and ``dim1`` swapped; ``pads`` is ``padding`` at begin and end; a scale is
the reciprocal of a factor). Each relation has a name; the evidence catalogue (``core.aten.evidence``) names, for
every (overload, parameter) the generator learned, the place and the relation, and links look the relation up here.

Values come from untrusted model files: every relation accepts any value and answers None when it does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.core.aten.dtypes import ONNX_TYPES
from inspector.core.model.fx import Symbol
from inspector.core.specialise.flow import BodyFlow

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


def same(a: Any, b: Any) -> bool:
    a, b = unwrap(a), unwrap(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return num(a) is not None and num(a) == num(b)
    x, y = num(a), num(b)
    if x is None or y is None:
        return isinstance(a, str) and a == b
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    return close(float(x), float(y))


def num(v: Any) -> int | float | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return None


def unwrap(v: Any) -> Any:
    while isinstance(v, list) and len(v) == 1 and not isinstance(v[0], list | dict):
        v = v[0]
    while isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
        v = v[0]
    return v


def close(a: float, b: float) -> bool:
    """Equal up to float32 rounding (relative; attributes and constants are float32, arguments Python floats)."""
    if math.isnan(a) or math.isnan(b):
        return False
    if math.isinf(a) or math.isinf(b) or a == 0 or b == 0:
        return a == b
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def norm(d: int, rank: int | None) -> int:
    return d % rank if rank and -rank <= d < rank else d


def _dims_match(value: Any, dims: Any, rank: int | None) -> bool:
    """``value`` (an axis or axes) equals ``dims`` with negative dims normalised against ``rank`` when known."""
    v, d = unwrap(value), unwrap(dims)
    vs = v if isinstance(v, list) else [v]
    ds = d if isinstance(d, list) else [d]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (*vs, *ds)) or len(vs) != len(ds):
        return False
    if vs == ds:
        return True
    return rank is not None and [norm(x, rank) for x in vs] == [norm(x, rank) for x in ds]


# expectations: (argument value, all args, ctx) -> (expected value, evidence) or None


def _equal(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    return (arg, "equals the argument") if same(ctx.value, arg) else None


def _dim(rank_of: int | None = 0, extra_rank: int = 0) -> Expect:
    """An axis (or axes) given as the argument, negative dims normalised against the input's rank."""

    def expect(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        rank = ctx.node_input_rank() if rank_of is None else ctx.rank(rank_of)
        rank = rank + extra_rank if rank is not None else None
        if _dims_match(ctx.value, arg, rank):
            same = unwrap(ctx.value) == unwrap(arg)
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
            and all(isinstance(x, int) for x in arg) and [norm(x, len(perm)) for x in arg] == perm \
            and sorted(perm) == list(range(len(perm))):  # a permutation of all dims (roll's dims=[1] is not one)
        return arg, "perm is dims" + (" normalised" if arg != perm else "")
    return None


def _twice(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """ONNX pads: the padding at the beginning of each spatial axis, then at the end."""
    if isinstance(arg, list) and same(ctx.value, [*arg, *arg]):
        return arg, f"pads {ctx.value} are padding {arg} at begin and end"
    return None


def _stride_or_kernel(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    if arg == [] or arg is None:  # torch: an empty stride means stride = kernel_size
        k = args.get("kernel_size")
        return (arg, f"stride is empty, so the lowering uses kernel_size {k}") if same(ctx.value, k) else None
    return _equal(arg, args, ctx)


def _last_axes(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """Normalisation over the last ``len(normalized_shape)`` dims starts at axis ``-len(normalized_shape)``."""
    if isinstance(arg, list) and arg and unwrap(ctx.value) == -len(arg):
        return arg, f"axis {-len(arg)} = -len(normalized_shape)"
    return None


def _bool(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    return (arg, f"{ctx.value} is {arg}") if isinstance(arg, bool) and same(ctx.value, int(arg)) else None


def _string(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    text = arg.text if isinstance(arg, Symbol) else arg
    return (text, "equals the argument") if isinstance(text, str) and ctx.value == text else None


def _scalar(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    if isinstance(arg, bool) or not isinstance(arg, (int, float)):
        return None
    return (arg, "equals the argument") if same(ctx.value, arg) and not isinstance(unwrap(ctx.value), list) else None


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
        return _equal(arg, _args, ctx) if same(ctx.value, arg) else None
    if k < len(arg) and isinstance(arg[k], int) and unwrap(ctx.value) in (arg[k], abs(arg[k])):
        return arg, f"element {k} of {arg}"
    return None


_REDUCTIONS = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": None}


def _reduction(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """scatter_reduce's ``reduce`` as ScatterElements' ``reduction`` ("sum" -> "add", "amax" -> "max", ...)."""
    text = arg.text if isinstance(arg, Symbol) else arg
    if isinstance(text, str) and _REDUCTIONS.get(text, text) == ctx.value:
        return text, f"reduction {ctx.value!r} is reduce {text!r}"
    return None




def _dtype(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    text = arg.text if isinstance(arg, Symbol) else arg
    code = ONNX_TYPES.get(str(text)) if text is not None else None
    if code is not None and ctx.value == code:
        return text, f"ONNX type {code} is {text}"
    return None



def _end_dim(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """``Shape.end`` of ``sym_size(dim)``: dim + 1."""
    if isinstance(arg, int) and not isinstance(arg, bool) and isinstance(ctx.value, int) and ctx.value == arg + 1:
        return arg, f"end is dim + 1 = {ctx.value}"
    return None


def _numbers(v: Any) -> list[int | float] | None:
    """A number or a flat list of numbers as a list; None for anything else (bools included)."""
    v = unwrap(v)
    out: list[int | float] = []
    for x in v if isinstance(v, list) else [v]:
        n = num(x)
        if n is None or isinstance(x, bool):
            return None
        out.append(n)
    return out or None


def _repeated(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """One number given for every spatial axis: ``[2, 2]`` from ``2``."""
    values = ctx.value if isinstance(ctx.value, list) else None
    if isinstance(arg, bool) or num(arg) is None or not values or len(values) < 2:
        return None
    if all(same(x, arg) for x in values):
        return arg, f"{values} is the argument for each of {len(values)} axes"
    return None


def _scales(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """Per-axis factors with 1 for the leading (batch, channel) axes: ``[1, 1, 2, 2]`` from ``2`` or ``[2, 2]``."""
    values = _numbers(ctx.value) if isinstance(ctx.value, list) else None
    given = _numbers(arg) if not isinstance(arg, bool) else None
    if values is None or given is None or len(values) < 3:
        return None
    lead = len(values) - len(given) if len(given) > 1 else next(
        (k for k, x in enumerate(values) if x != 1), len(values))
    if lead < 1 or lead >= len(values) or any(x != 1 for x in values[:lead]):
        return None
    tail = given if len(given) > 1 else given * (len(values) - lead)
    if len(tail) == len(values) - lead and all(close(float(x), float(y)) or x == y for x, y in
                                               zip(values[lead:], tail)):
        return arg, f"{values} is 1 for the {lead} leading axes, then the argument per axis"
    return None


def _at(k: int) -> Expect:
    """Element ``k`` of a constant list is the argument (GroupNorm's Reshape to ``[0, num_groups, -1]``)."""

    def expect(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        v = ctx.value
        if isinstance(v, list) and k < len(v) and num(arg) is not None and not isinstance(arg, bool) \
                and same(v[k], arg):
            return arg, f"element {k} of {v} is the argument"
        return None

    return expect


def _unary(name: str, fn: Callable[[float], float]) -> Expect:
    """The literal is a function of a number argument (or of each element of a list): ``-shift``, ``1/scale``."""

    def expect(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        given, values = _numbers(arg), _numbers(ctx.value)
        if isinstance(arg, bool) or given is None or values is None or len(given) != len(values):
            return None
        try:
            want = [fn(float(x)) for x in given]
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
        if all(close(float(v), w) or (v == 0 and w == 0) for v, w in zip(values, want)):
            return arg, f"{ctx.value} is {name} of the argument"
        return None

    return expect


def _mapped(table: dict[str, str]) -> Expect:
    """A string (or enum) argument as the value the lowering maps it to, by a table learned from exports."""

    def expect(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        text = arg.text if isinstance(arg, Symbol) else arg
        key = str(text).lower() if isinstance(text, (str, bool, int)) else None
        if key is not None and key in table and table[key] == str(ctx.value):
            return text, f"{ctx.value!r} is the lowering's value for {text!r}"
        return None

    return expect


def _size_minus(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """roll: a slice boundary is the size of the rolled dim minus the shift (modulo the size), computed at export
    time from the input's static shape."""
    shape = ctx.flow.input_shape(0)
    dims, shifts, values = args.get("dims", args.get("dim")), _numbers(arg), _numbers(ctx.value)
    dims = dims if isinstance(dims, list) else [dims]
    if shape is None or shifts is None or values is None or len(shifts) != len(values) or len(dims) != len(values):
        return None
    want: list[int] = []
    for d, s in zip(dims, shifts):
        if not isinstance(d, int) or isinstance(d, bool) or not -len(shape) <= d < len(shape) \
                or not isinstance(s, int):
            return None
        size = shape[d]
        if not size:
            return None
        want.append((size - s) % size)
    if values == want:
        return arg, f"{ctx.value} is the size of dims {dims} minus the argument, from the input's shape"
    return None


def _equal_or_piece(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """``equal`` as learned from static one-op exports; where the literal reaches the place as the k-th piece of a
    Concat (a list argument with symbolic sizes, assembled at run time), it is the argument's element k."""
    if isinstance(arg, list) and any(v.startswith("Concat[") for v in ctx.via):
        return _element(arg, args, ctx)
    return _equal(arg, args, ctx)


def _torch_pads(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """torch's ``pad`` (begin and end of the last dim, then of the one before, ...) as ONNX ``pads`` (all begins,
    then all ends, first dim first)."""
    given, values = _numbers(arg), _numbers(ctx.value) if isinstance(ctx.value, list) else None
    if given is None or values is None or len(given) % 2 or len(values) % 2 or len(given) > len(values):
        return None
    rank = len(values) // 2
    want: list[int | float] = [0] * (2 * rank)
    for i in range(len(given) // 2):
        want[rank - 1 - i], want[2 * rank - 1 - i] = given[2 * i], given[2 * i + 1]
    if values == want:
        return arg, f"pads {ctx.value} are pad {arg} (last dim first) as begins, then ends"
    return None


def _ones_then(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """The argument's list after as many 1s as the rank needs: ``Tile`` repeats ``[1, 1, 1, 2]`` from ``[2]``."""
    given, values = _numbers(arg), _numbers(ctx.value) if isinstance(ctx.value, list) else None
    if given is None or values is None or len(given) > len(values):
        return None
    if values == [1] * (len(values) - len(given)) + given:
        return arg, f"{ctx.value} is the argument after {len(values) - len(given)} leading 1s"
    return None


def _shape_then(arg: Any, _args: Args, ctx: Ctx) -> tuple[Any, str] | None:
    """Output sizes: the input's leading static dims, then the argument (``Resize.sizes`` from ``output_size``)."""
    shape = ctx.flow.input_shape(0)
    given, values = _numbers(arg), _numbers(ctx.value) if isinstance(ctx.value, list) else None
    if shape is None or given is None or values is None or len(given) >= len(values) or len(values) != len(shape):
        return None
    if values == [*shape[: len(values) - len(given)], *given]:
        return arg, f"{ctx.value} is the input's leading dims, then the argument"
    return None


def _times(other: str) -> Expect:
    """The argument scaled by another one: ``add.Scalar`` adds ``other * alpha`` (the scale is named: a factor of
    1 leaves no trace, so the scaled argument is tied, never the scale)."""

    def expect(arg: Any, args: Args, ctx: Ctx) -> tuple[Any, str] | None:
        a, b, v = num(arg), num(args.get(other)), num(unwrap(ctx.value))
        if a is None or b is None or v is None or isinstance(arg, bool) or isinstance(args.get(other), bool):
            return None
        if close(float(v), float(a) * float(b)) or v == a * b:
            return arg, "equals the argument" if b == 1 else f"{ctx.value} is the argument times {other}"
        return None

    return expect


RELATIONS: dict[str, Expect] = {
    "equal": _equal_or_piece, "scalar": _scalar, "bool": _bool, "string": _string, "dtype": _dtype, "alpha": _alpha,
    "dim": _dim(), "dim_of_node": _dim(None), "dim_plus1": _dim(0, 1), "dim_of_node_plus1": _dim(None, 1),
    "swap": _swap, "permute": _permute, "pads": _twice, "stride_or_kernel": _stride_or_kernel,
    "last_axes": _last_axes, "element": _element, "reduction": _reduction, "end_dim": _end_dim,
    "repeated": _repeated, "scales": _scales, "size_minus": _size_minus, "torch_pads": _torch_pads,
    "ones_then": _ones_then, "shape_then": _shape_then, "pow10": _unary("10 to the power", lambda x: 10.0 ** x),
    "neg": _unary("minus", lambda x: -x), "reciprocal": _unary("the reciprocal", lambda x: 1.0 / x),
    "sqrt": _unary("the square root", math.sqrt), "rsqrt": _unary("1/sqrt", lambda x: 1.0 / math.sqrt(x)),
}
"""Relations by name; ``at:K`` (element K of a list), ``times:NAME`` (the argument times argument NAME) and
``map:a=b;c=d`` (a learned table) take a parameter."""


def relation(name: str) -> Expect | None:
    """The relation a catalogue line names; None for a name this version does not know (a newer catalogue)."""
    found = RELATIONS.get(name)
    if found is not None:
        return found
    kind, _, param = name.partition(":")
    if kind == "at" and param.isdigit() and len(param) < 4:
        return _at(int(param))
    if kind == "times" and param.isidentifier():
        return _times(param)
    if kind == "map" and param:
        pairs = [p.partition("=") for p in param.split(";")]
        return _mapped({a: b for a, eq, b in pairs if eq})
    return None
