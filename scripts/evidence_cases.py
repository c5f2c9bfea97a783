"""Representative one-op calls for ``gen_evidence.py``: for an aten overload, the base call (tensors and argument
values) and the variants that change one argument, or one input dimension, at a time.

The op is called the way a model calls it (``torch.conv_transpose2d``, ``torch._C._nn.upsample_bilinear2d``, a
Tensor method), not through ``torch.ops.aten``: called as an OpOverload, a composite op is decomposed before the
exporter sees it, and the export would hold other targets. Values come from ``RECIPES`` (per op name, where shapes
must agree), else from tables by parameter name and type; an argument with no representative value keeps its
default and is reported as not varied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from evidence_recipes import (  # (the values to call with: the generator reads them through this module)
    DTYPES,
    ENUMS,
    FLOATS,
    FUSED_INPUT,
    INTS,
    NUMBER_TYPES,
    PRIORITY,
    RECIPES,
    SCALARS,
    SHAPE,
    SPATIAL,
    STRINGS,
    FusedModule,
)

__all__ = ["DTYPES", "ENUMS", "FLOATS", "FUSED_INPUT", "INTS", "NUMBER_TYPES", "PRIORITY", "RECIPES", "SCALARS",
           "SHAPE", "SPATIAL", "STRINGS", "FusedModule"]

def op_of(target: str) -> str:
    """The op name of an overload (``aten::view.dtype`` -> ``view``): what ``RECIPES`` are keyed by."""
    return target.split("::", 1)[1].split(".", 1)[0]


def recipe(name: str) -> dict[str, Any]:
    """The recipe of an op name: its own, else the longest recipe name it starts with (``conv_transpose2d``)."""
    if name in RECIPES:
        return RECIPES[name]
    best = max((k for k in RECIPES if name.startswith(k) and not RECIPES[k].get("exact")), key=len, default=None)
    return RECIPES[best] if best is not None else {}


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # torch's type text: "Tensor", "Optional[Tensor]", "List[int]", "int", ...
    default: Any
    has_default: bool
    kwarg_only: bool

    @property
    def base_type(self) -> str:
        t = self.type
        return t[len("Optional["):-1] if t.startswith("Optional[") else t

    @property
    def is_tensor(self) -> bool:
        return "Tensor" in self.base_type


@dataclass
class Call:
    """One call: the callable, the parameters in schema order with their values (tensors as ``Tensor`` objects)."""

    fn: Callable[..., Any]
    kind: str  # "function" (torch.X / torch._C._nn.X), "method" (Tensor.X), "op" (torch.ops.aten)
    params: list[Param]
    values: dict[str, Any]
    # an op applied to the first tensor before the call, whose body the optimizer fuses with the call's
    # (``RECIPES[op]["fused"]``: a view of a view is one Reshape, without ``allowzero``)
    before: Callable[[torch.Tensor], torch.Tensor] | None = None
    # arguments passed as a size of the first tensor plus a number (``RECIPES[op]["sized"]``: parameter -> (the
    # parameter holding the dimension, the number)), symbolic in an export with dynamic shapes: ``x[..., :n - 1]``
    # with ``n`` a length, whose end torchlib reshapes from the scalar the size arithmetic made, where a number is a
    # constant (gpt2_dynamic's and Qwen2's slices to a cache position)
    sized: dict[str, tuple[str, int]] | None = None
    # the first output alone, as a model that reads no other uses the op (``nn.BatchNorm1d`` in eval: the statistics
    # ``_native_batch_norm_legit_no_training`` also returns are dead code the optimizer drops, a lone
    # BatchNormalization; ``nn.LSTM``'s output without its last states)
    first: bool = False

    @property
    def tensors(self) -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        for p in self.params:
            v = self.values.get(p.name)
            if isinstance(v, torch.Tensor):
                out.append(v)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                out.extend(v)
        return out

    @property
    def tensor_params(self) -> list[str]:
        """The parameter of each of ``tensors``, in their order (the export's graph inputs ``tensors_0``, ...): what
        the body template catalogue names each outside tensor by."""
        out: list[str] = []
        for p in self.params:
            v = self.values.get(p.name)
            if isinstance(v, torch.Tensor):
                out.append(p.name)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                out.extend([p.name] * len(v))
        return out

    def invoke(self, tensors: Sequence[torch.Tensor]) -> Any:
        if self.before is not None and tensors:
            tensors = [self.before(tensors[0]), *tensors[1:]]
        it = iter(tensors)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            v = self.values.get(p.name, p.default)
            if self.sized and p.name in self.sized and tensors:
                dim, plus = self.sized[p.name]
                v = tensors[0].shape[self.values[dim]] + plus
            if isinstance(v, torch.Tensor):
                v = next(it)
            elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
                v = [next(it) for _ in v]
            if p.kwarg_only:
                if p.name in self.values:
                    kwargs[p.name] = v
            else:
                args.append((p.name in self.values, v))
        while args and not args[-1][0]:  # trailing defaults are left out (einsum takes no ``path=None``)
            args.pop()
        args = [v for _given, v in args]
        if self.kind == "method":
            return getattr(args[0], self.fn.__name__)(*args[1:], **kwargs)
        return self.fn(*args, **kwargs)


class OneOp(torch.nn.Module):
    def __init__(self, call: Call) -> None:
        super().__init__()
        self.call = call

    def forward(self, *tensors: torch.Tensor) -> Any:
        out = self.call.invoke(tensors)
        return out[0] if self.call.first and isinstance(out, (tuple, list)) else out


@dataclass
class Plan:
    base: Call
    variants: list[tuple[str, Call]] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)  # the non-tensor parameters
    not_varied: dict[str, str] = field(default_factory=dict)  # parameter -> why


def schema_params(target: str) -> tuple[Any, list[Param]] | None:
    namespace, _, rest = target.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, namespace, None), name, None)
    op = getattr(packet, overload or "default", None) if packet is not None else None
    if op is None:
        return None
    params = [Param(a.name, str(a.type), a.default_value if a.has_default_value() else None, a.has_default_value(),
                    a.kwarg_only) for a in op._schema.arguments]
    return op, params


def resolve(name: str, op: Any) -> tuple[Callable[..., Any], str]:
    for ns in (torch, torch._C._nn, torch._C._linalg, torch._C._special, torch._C._fft):
        fn = getattr(ns, name, None)
        if callable(fn):
            return fn, "function"
    if hasattr(torch.Tensor, name):
        return getattr(torch.Tensor, name), "method"
    return op, "op"


def _tensors(spec: Any) -> torch.Tensor | list[torch.Tensor]:
    """A tensor of ``spec``, or a list of them for a list of specs (a ``Tensor[]`` parameter's)."""
    return [_tensor(s) for s in spec] if isinstance(spec, list) else _tensor(spec)


def _tensor(spec: Any) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if isinstance(spec, tuple) and spec and spec[0] == "long":
        return torch.randint(0, spec[2], spec[1], generator=gen)
    if isinstance(spec, tuple) and spec and spec[0] == "bool":
        return torch.randn(spec[1], generator=gen) > 0
    return torch.randn(tuple(spec), generator=gen)


def _shape_for(name: str, p: Param, rec: dict[str, Any], spatial: int | None) -> Any:
    shapes = rec.get("shapes", {})
    if p.name in shapes:
        spec = shapes[p.name]
        if isinstance(spec, tuple) and spec and isinstance(spec[0], int) and spatial is not None \
                and len(spec) > 2 + spatial:
            spec = spec[: 2 + spatial]
        return spec
    if p.name in ("index", "indices"):
        return ("long", SHAPE, 2)
    if p.name in ("mask", "condition"):
        return ("bool", SHAPE)
    if p.base_type.startswith("List["):
        return [SHAPE, SHAPE]
    if spatial is not None:
        return (2, 4, 6, 8, 10)[: 2 + spatial]
    return SHAPE


def _values_for(op: str, p: Param, rec: dict[str, Any], spatial: int) -> list[Any] | None:
    table = rec.get("values", {})
    t = p.base_type
    if p.name in table:
        got = table[p.name]
    elif p.name == "dtype":  # TorchScript types ScalarType as int
        return DTYPES
    elif p.name in ENUMS:  # layout, memory_format (typed int too), device, pin_memory: kept at their default
        return None
    elif t == "bool":
        base = p.default if p.has_default and p.default is not None else False
        return [base, not base]
    elif t == "ScalarType":
        return DTYPES
    elif t == "str":
        got = STRINGS.get(p.name)
    elif t in ("float", "List[float]"):
        got = FLOATS.get(p.name) or ([0.5, 0.25] if t == "float" else None)
    elif t in ("number", "Scalar"):
        got = SCALARS.get(p.name) or FLOATS.get(p.name) or [2.0, 3.0]
    elif t in ("int", "SymInt", "List[int]", "List[SymInt]"):
        got = INTS.get(p.name) or ([2, 3] if t in ("int", "SymInt") else None)
    else:
        return None
    if callable(got):
        got = list(got(spatial))
    return list(got) if got else None


def takes_number_other(target: str) -> bool:
    """``.Tensor`` overloads whose ``other`` a model may pass as a Python number (``mul(x, 0.35)``)."""
    found = schema_params(target)
    overload = target.split("::", 1)[1].partition(".")[2]
    return found is not None and overload == "Tensor" and any(p.name == "other" and p.type == "Tensor"
                                                              for p in found[1])


def plan(target: str, number_other: bool = False, templates: bool = False,
         base_values: dict[str, Any] | None = None) -> Plan | str:
    """The base call and its variants, or why there are none (``"no_parameters: ..."``, ``"skipped: ..."``).
    ``templates``: for the body template catalogue (``gen_templates.py``), an overload with tensor parameters only
    is exported too, optional tensors get a variant without them (or with them, ``RECIPES[op]["with"]``), and
    optional arguments one at their default. ``base_values``: another base (``RECIPES[op]["bases"]``), these
    arguments as given (a tensor's shape, None: left out) and not varied, the others varied around them."""
    found = schema_params(target)
    if found is None:
        return "skipped: no such overload in torch"
    op, params = found
    name = op_of(target)
    if name.endswith("_") or any(p.name == "out" for p in params) or target.endswith((".out", "_out")):
        return "skipped: in-place or out= overload"
    # a Python number passed for a Tensor parameter (``mul(x, 0.35)``, FX ``mul.Tensor(%x, 0.35)``) is baked in too
    if number_other:
        params = [replace(p, type="Scalar") if p.name == "other" else p for p in params]
    non_tensor = [p for p in params if not p.is_tensor]
    if not non_tensor and not templates:
        return "no_parameters: only tensor parameters"
    rec = recipe(name)
    spatial = next((n for suffix, n in SPATIAL.items() if suffix in name), None)
    # (a prims op is called as itself: ``torch.abs`` is aten's, and a model's FX graph holds prims ops as OpOverloads)
    fn, kind = (op, "op") if rec.get("op") or not target.startswith("aten::") else resolve(name, op)
    values: dict[str, Any] = {}
    choices: dict[str, list[Any]] = {}
    not_varied: dict[str, str] = {}
    fixed = rec.get("fixed", {})
    for p in params:
        if p.name in fixed:
            values[p.name] = fixed[p.name]
            if not p.is_tensor:
                not_varied[p.name] = "fixed by the recipe"
            continue
        if p.is_tensor:
            if p.type.startswith("Optional[") and p.has_default and p.name not in rec.get("shapes", {}):
                continue  # left at its default (None)
            spec = _shape_for(name, p, rec, spatial)
            values[p.name] = [_tensor(s) for s in spec] if isinstance(spec, list) else _tensor(spec)
            continue
        options = _values_for(name, p, rec, spatial or 2)
        if options is None:
            if not p.has_default:
                return f"skipped: no representative value for {p.name} ({p.type})"
            not_varied[p.name] = "no representative value" if p.default is None else "kept at its default"
            continue
        values[p.name] = options[0]
        if len(options) > 1:
            choices[p.name] = options
        else:
            not_varied[p.name] = "one representative value only"
    for q, given in (base_values or {}).items():  # (another base: its arguments as given, the rest varied around it)
        tensor = next((p.is_tensor for p in params if p.name == q), None)
        if tensor is None:  # (a parameter another overload of the op has: upsample's ``scale_factors``, of ``.vec``;
            continue  # asked of ``upsample_nearest2d``, the StopIteration ended the generator's process, each time)
        values[q] = None if given is None else _tensor(given) if tensor else given
        choices.pop(q, None)
        not_varied[q] = "fixed by another base of the recipe"
    base = Call(fn, kind, params, values)
    out = Plan(base, [], [p.name for p in non_tensor], not_varied)
    for pname, options in choices.items():
        for v in options[1:]:
            out.variants.append((pname, Call(fn, kind, params, {**values, pname: v})))
    for pname, paired in rec.get("together", {}).items():  # an argument varied with the shapes it needs
        if pname in values:
            out.not_varied.pop(pname, None)
            out.variants += [(pname, Call(fn, kind, params, {**values, pname: v, **{
                q: _tensor(spec[: len(values[q].shape)]) for q, spec in shapes.items()}})) for v, shapes in paired]
    if templates:
        for p in params:  # these variants ("#...") change the body's structure; evidence learning ignores them
            if p.is_tensor and p.type.startswith("Optional[") and values.get(p.name) is not None:
                out.variants.append((f"#without_{p.name}", Call(fn, kind, params, {**values, p.name: None})))
        for p in params:  # an optional argument at its default (dtype=None: no Cast), and the other arguments
            # varied around it: that body is a template of its own, whose slots the other arguments move too
            if not p.is_tensor and p.has_default and p.default is None and values.get(p.name) is not None:
                out.variants.append((f"#default_{p.name}", Call(fn, kind, params, {**values, p.name: None})))
                out.variants += [(f"#default_{p.name}:{q}", Call(fn, kind, params, {**values, p.name: None, q: v}))
                                 for q, options in choices.items() if q != p.name for v in options[1:]]
        for p in params:  # a number at its default (alpha=1): torchlib's trace_only code tests the value against it
            # and leaves the Mul out (``add.Tensor`` of two tensors is one Add), so that body is a template of its own
            if p.base_type in NUMBER_TYPES and p.has_default and p.default is not None \
                    and values.get(p.name) is not None and values[p.name] != p.default:
                out.variants.append((f"#default_{p.name}", Call(fn, kind, params, {**values, p.name: p.default})))
                out.variants += [(f"#default_{p.name}:{q}", Call(fn, kind, params, {**values, p.name: p.default, q: v}))
                                 for q, options in choices.items() if q != p.name for v in options[1:]]
        if len(op._schema.returns) > 1:  # the first output alone, and the other arguments varied around it
            first = replace(base, first=True)
            out.variants.append(("#first_output", first))
            out.variants += [(f"#first_output:{q}", replace(first, values={**values, q: v}))
                             for q, options in choices.items() for v in options[1:]]
        numbers = {p.name: p.default for p in params if p.base_type in NUMBER_TYPES and p.has_default
                   and p.default is not None and values.get(p.name) is not None and values[p.name] != p.default}
        if len(numbers) > 1:  # and every one at its default at once, as most models call it (``nn.ELU()``: one Elu,
            # where each default alone left the Mul by the other), each argument varied around that
            out.variants.append(("#defaults", Call(fn, kind, params, {**values, **numbers})))
            out.variants += [(f"#defaults:{q}", Call(fn, kind, params, {**values, **numbers, q: v}))
                             for q, options in choices.items() for v in options[1:]]
        tensor_params = {p.name for p in params if p.is_tensor}
        for k, given in enumerate(rec.get("with", ())):  # optional tensors given together (weight and bias), and
            # the other arguments that make them optional (instance norm's running statistics: use_input_stats)
            out.variants.append((f"#with_{k}", Call(fn, kind, params, {**values, **{
                q: None if spec is None else _tensors(spec) if q in tensor_params else spec
                for q, spec in given.items()}})))  # None: left out
        for q, options in rec.get("template_values", {}).items():  # values whose body has a structure of its own,
            for v in options:  # alone and with each set of optional tensors (not evidence: the slot is gone)
                for given in [{}, *rec.get("with", ())]:
                    tensors = {r: None if spec is None else _tensor(spec) for r, spec in given.items()}
                    out.variants.append((f"#value_{q}", Call(fn, kind, params, {**values, q: v, **tensors})))
    # an input dimension changed: the first tensor's, and for the templates each other tensor's (a convolution's
    # kernel_shape is its weight's shape: without this, a template of a 3x3 convolution matched no other kernel)
    shaped = [p for p in params if isinstance(values.get(p.name), torch.Tensor)][: None if templates else 1]
    for p in shaped:
        t = values[p.name]
        if t.dim() >= 1 and t.dtype.is_floating_point:
            bigger = list(t.shape)
            bigger[-1] += 2
            out.variants.append(("#shape", Call(fn, kind, params, {**values, p.name: _tensor(tuple(bigger))})))
    try:  # the base must run eagerly, or the export cannot
        with torch.no_grad():
            base.invoke(base.tensors)
    except Exception as e:
        return f"not_exportable: the base call fails in torch: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    return out


def ordered(registry: list[str], zoo: list[str], registered: Collection[str] = ()) -> list[str]:
    """The targets to run, in order: the priority overloads and the zoo's first, then the registry's. A priority
    overload torchlib has no function of its own for is kept where torch has its schema: the exporter decomposes it
    (``conv_transpose2d.input`` into ``convolution``), and its evidence is learned from what that makes (a run that
    kept registered targets only lost the four rows of ``conv_transpose2d.input`` the test pairs read). Of the zoo's
    targets, those ``registered`` too, outside the aten registry: the prims ops models call (``convert_element_type``,
    in 5 of the zoo's exports and 16 calls of the held-out set's RoBERTa and others). Without its template a lone
    Cast without metadata was read as ``aten::_to_copy`` alone. Not every prims op: ``prims::add`` would make every
    lone Add one of two targets, and no export here calls it."""
    first = [t for t in PRIORITY if t in registry or schema_params(t) is not None]
    first += [t for t in zoo if t in registry or t in registered]
    return list(dict.fromkeys(first + registry))


# --- the committed test pairs --------------------------------------------------------------------------------------

# (file stem, target, parameter, value in B): A is the base call, B the variant that changes one argument
PAIRS = [
    ("conv_transpose2d_stride", "aten::conv_transpose2d.input", "stride", [1, 2]),
    ("pixel_shuffle_upscale", "aten::pixel_shuffle", "upscale_factor", 3),
    ("group_norm_groups", "aten::group_norm", "num_groups", 4),
    ("roll_shifts", "aten::roll", "shifts", [2]),
    ("upsample_scale", "aten::upsample_nearest2d.vec", "scale_factors", [3.0, 3.0]),
    ("repeat_interleave_repeats", "aten::repeat_interleave.self_int", "repeats", 3),
    ("einsum_equation", "aten::einsum", "equation", "bij,bkj->bik"),
    ("transpose_dim1", "aten::transpose.int", "dim1", 3),
]


class Shifted(torch.nn.Module):
    """Two weights folded into constants (``t``, ``t_1``); with ``extra``, a third one is folded first, so the same
    weights are ``t_1`` and ``t_2``: value names shift between two exports of one model."""

    def __init__(self, extra: bool) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        for k in range(3):
            self.register_buffer(f"w{k}", torch.randn(8, 8, generator=g))
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.extra:
            x = (x @ (self.w0 * 1.5).t()).softmax(-1)
        return (x @ (self.w1 * 2).t()).softmax(-1) @ (self.w2 * 3).t()


def export_quietly(model: torch.nn.Module, args: tuple[Any, ...], path: Path) -> Any:
    """``torch.onnx.export(model, args, dynamo=True)`` saved to ``path``, without the exporter's warnings and prints;
    the ONNX program (its ``exported_program`` is torch's graph, a truth file's source)."""
    import contextlib
    import io
    import warnings

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, args, dynamo=True)
    program.save(str(path))
    return program


def write_shifted(folder: Path) -> None:
    for name, extra in (("a", False), ("b", True)):
        export_quietly(Shifted(extra).eval(), (torch.randn(8, 8),), folder / f"shifted_names_{name}.onnx")


class StageMLP(torch.nn.Module):
    """Two stages of widths 16 and 32 (as Swin's), each an MLP of hidden width ``ratio`` times its own with zero
    biases (as Hugging Face initialises a Linear's), joined by a Linear: at ratio 4 the first stage's fc1 bias has
    the 64 zeros the second stage's has at ratio 2, under another parameter's name (Swin's ``mlp_ratio``)."""

    def __init__(self, ratio: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stages = torch.nn.ModuleList([
            torch.nn.Sequential(torch.nn.Linear(d, ratio * d), torch.nn.GELU(), torch.nn.Linear(ratio * d, d))
            for d in (16, 32)])
        self.merge = torch.nn.Linear(16, 32)
        for m in self.modules():
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.stages[0](x)
        x = self.merge(x)
        return x + self.stages[1](x)


def write_stage_ratio(folder: Path) -> None:
    """``stage_ratio_a.onnx`` (ratio 4) and ``_b`` (ratio 2), and their parameters' shapes as torch holds them
    (``stage_ratio.truth.json``)."""
    truth: dict[str, Any] = {}
    for name, ratio in (("a", 4), ("b", 2)):
        model = StageMLP(ratio).eval()
        export_quietly(model, (torch.randn(1, 4, 16),), folder / f"stage_ratio_{name}.onnx")
        truth[name] = {"ratio": ratio, "shapes": {k: list(v.shape) for k, v in model.state_dict().items()}}
    (folder / "stage_ratio.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                  encoding="utf-8")


class SplitEps(torch.nn.Module):
    """Three LayerNorms of one width with a Linear between each two, ``eps`` per layer: a re-export that changes
    ``eps`` on some layers only (Swin's ``layer_norm_eps`` for part of its layers) moves those layers' calls to a
    new body of the same template while the others stay in the body that was reviewed."""

    def __init__(self, eps: Sequence[float]) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norms = torch.nn.ModuleList([torch.nn.LayerNorm(16, eps=e) for e in eps])
        self.mixes = torch.nn.ModuleList([torch.nn.Linear(16, 16) for _ in eps[1:]])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norms[0](x)
        for mix, norm in zip(self.mixes, self.norms[1:], strict=True):
            x = norm(mix(x))
        return x


def write_split_eps(folder: Path) -> None:
    """``split_eps_a.onnx`` (``eps`` 1e-5 on each LayerNorm) and ``_b`` (1e-6 on the last two), and each
    LayerNorm's ``eps`` as torch holds it (``split_eps.truth.json``: module name -> eps)."""
    truth: dict[str, Any] = {}
    for name, eps in (("a", (1e-5, 1e-5, 1e-5)), ("b", (1e-5, 1e-6, 1e-6))):
        model = SplitEps(eps).eval()
        export_quietly(model, (torch.randn(1, 4, 16),), folder / f"split_eps_{name}.onnx")
        truth[name] = {k: m.eps for k, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    (folder / "split_eps.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                 encoding="utf-8")


class GroupNorms(torch.nn.Module):
    """Group norms as models hold them, their weight and bias parameters (the optimizer folds each ``Unsqueeze`` of
    them into a constant): an audio feature encoder's first layer (wav2vec2's: a 3-D input, one group per channel,
    where the optimizer also drops the Reshape back to the input's shape) and a UNet block's (two groups of four
    channels, then SiLU)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.audio_conv = torch.nn.Conv1d(1, 8, kernel_size=5, stride=2)
        self.audio_norm = torch.nn.GroupNorm(8, 8, eps=1e-5)
        self.image_conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.image_norm = torch.nn.GroupNorm(2, 8, eps=1e-6)

    def forward(self, audio: torch.Tensor, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.nn.functional.gelu(self.audio_norm(self.audio_conv(audio)))
        return a, torch.nn.functional.silu(self.image_norm(self.image_conv(image)))


def write_group_norms(folder: Path) -> None:
    """``group_norms.onnx`` and each GroupNorm's ``num_groups`` and ``eps`` as torch holds them
    (``group_norms.truth.json``: module name -> both)."""
    model = GroupNorms().eval()
    export_quietly(model, (torch.randn(1, 1, 64), torch.randn(1, 3, 8, 8)), folder / "group_norms.onnx")
    truth = {k: {"num_groups": m.num_groups, "eps": m.eps} for k, m in model.named_modules()
             if isinstance(m, torch.nn.GroupNorm)}
    (folder / "group_norms.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                   encoding="utf-8")


class Decoder(torch.nn.Module):
    """A decoder's upsampling as models write it: a ``ConvTranspose2d`` with its bias (the default), then an
    interpolation to a size (``F.interpolate(x, size=...)``, SegFormer's decode head), not by factors."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.up = torch.nn.ConvTranspose2d(4, 2, kernel_size=2, stride=2)
        self.size = (12, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.interpolate(self.up(x), size=self.size, mode="bilinear", align_corners=False)


def write_decoder(folder: Path) -> None:
    """``decoder.onnx`` and what torch holds of its upsampling (``decoder.truth.json``): the transposed
    convolution's stride, padding and dilation, the interpolation's size."""
    model = Decoder().eval()
    export_quietly(model, (torch.randn(1, 4, 5, 5),), folder / "decoder.onnx")
    truth = {"up": {"stride": list(model.up.stride), "padding": list(model.up.padding),
                    "dilation": list(model.up.dilation)}, "size": list(model.size)}
    (folder / "decoder.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class Activations(torch.nn.Module):
    """Two MLP blocks with ``act`` (GELU or ReLU) and a head with ReLU: exported with GELU, then with ReLU, as
    SegFormer's ``hidden_act`` does, the blocks' activations change target and every ReLU's FX name shifts (the head's
    ``relu`` is ``relu_2`` in B, and B's ``relu`` is the first block's)."""

    def __init__(self, act: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.GELU() if act == "gelu" else torch.nn.ReLU(), torch.nn.Linear(16, 8))
            for _ in range(2))
        self.head = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def write_activations(folder: Path) -> None:
    """``activations_a.onnx`` (GELU) and ``_b`` (ReLU), and per activation module the FX name of its call in each
    (``activations.truth.json``: module name -> {a, b: [target, FX name]}), from torch's exported programs."""
    truth: dict[str, dict[str, Any]] = {}
    for name, act in (("a", "gelu"), ("b", "relu")):
        program = export_quietly(Activations(act).eval(), (torch.randn(2, 8),), folder / f"activations_{name}.onnx")
        for node in program.exported_program.graph.nodes:
            stack = node.meta.get("nn_module_stack")
            if node.op == "call_function" and stack and str(node.target).split(".")[1] in ("gelu", "relu"):
                module = list(stack.values())[-1][0]
                truth.setdefault(module, {})[name] = [f"aten::{str(node.target).split('.')[1]}", node.name]
    (folder / "activations.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                   encoding="utf-8")


class Bags(torch.nn.Module):
    """A recommender's sparse features: an ``EmbeddingBag`` (mean of each bag, as DLRM pools its features), whose
    torchlib body loops over the bags (a ``Loop`` whose body holds ``If`` branches), then a dense layer."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.bag = torch.nn.EmbeddingBag(20, 8, mode="mean")
        self.dense = torch.nn.Linear(8, 4)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.dense(self.bag(ids, offsets))


def write_bags(folder: Path) -> None:
    """``bags.onnx``: ``Bags`` called with 10 ids in 3 bags."""
    export_quietly(Bags().eval(), (torch.tensor([1, 5, 3, 7, 2, 9, 4, 0, 11, 19]), torch.tensor([0, 3, 7])),
                   folder / "bags.onnx")


class ScanSteps(torch.nn.Module):
    """A selective scan as Mamba's slow path runs it: a time step made positive by ``softplus`` at its default
    ``beta`` (whose Mul and Div by 1 the optimizer drops: a body of Softplus, Greater and Where), a state updated once
    per position of the sequence, and each step's output put together by one ``stack`` of as many tensors as there
    are positions (the one-op export behind stack's template passed two); then an ``nn.ELU()`` at its defaults, one
    Elu, where the one-op exports had each default alone and left the Mul by the other."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.dt = torch.nn.Linear(4, 4)
        self.decay = torch.nn.Parameter(torch.rand(4))
        self.act = torch.nn.ELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dt = torch.nn.functional.softplus(self.dt(x))
        state = torch.zeros_like(x[:, 0])
        steps = []
        for t in range(x.shape[1]):
            state = state * torch.exp(-dt[:, t] * self.decay) + x[:, t]
            steps.append(state)
        return self.act(torch.stack(steps, dim=1))


def write_scan_steps(folder: Path) -> None:
    """``scan_steps.onnx``: ``ScanSteps`` over 6 positions; and each ``stack``, ``softplus`` and ``elu`` call as torch's
    program holds it (``scan_steps.truth.json``: FX name -> target, the number of stacked tensors and ``dim``, or the
    numbers as called or at their schema's defaults)."""
    program = export_quietly(ScanSteps().eval(), (torch.randn(2, 6, 4),), folder / "scan_steps.onnx")
    truth: dict[str, Any] = {}
    for node in program.exported_program.graph.nodes:
        target = str(node.target)
        if node.op == "call_function" and target.startswith("aten.stack"):
            truth[node.name] = {"target": "aten::stack", "tensors": len(node.args[0]),
                                "dim": node.args[1] if len(node.args) > 1 else 0}
        elif node.op == "call_function" and target.startswith(("aten.softplus", "aten.elu")):
            arguments = node.target._schema.arguments[1:]
            given = {**dict(zip((a.name for a in arguments), node.args[1:], strict=False)), **node.kwargs}
            truth[node.name] = {"target": f"aten::{target.split('.')[1]}",
                                **{a.name: given.get(a.name, a.default_value) for a in arguments}}
    (folder / "scan_steps.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class Sequences(torch.nn.Module):
    """A sequence model as torch's own modules make one: an ``nn.LSTM`` and an ``nn.GRU`` (one layer each, batch
    first), an ``nn.BatchNorm1d`` over their features in eval (no convolution before it to fuse into: a lone
    BatchNormalization, as LeViT's after each linear), then a ``grid_sample`` of the features laid out as an image (a
    spatial transformer's resampling). None had a template: the one-op exports of the first three failed with the
    tables' arguments, and the batch norm's returned its statistics too."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lstm = torch.nn.LSTM(4, 6, batch_first=True)
        self.gru = torch.nn.GRU(6, 4, batch_first=True)
        self.norm = torch.nn.BatchNorm1d(4, eps=1e-3)

    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        y, _state = self.lstm(x)
        y, _h = self.gru(y)
        image = self.norm(y.transpose(1, 2)).reshape(1, 2, 4, 4)
        return torch.nn.functional.grid_sample(image, grid, mode="nearest", padding_mode="border",
                                               align_corners=True)


def write_sequences(folder: Path) -> None:
    """``sequences.onnx``: ``Sequences`` of a batch of 2 sequences of 4 steps; and each ``lstm``, ``gru``, batch norm
    and ``grid_sampler`` call as torch's program holds it (``sequences.truth.json``: FX name -> target and its
    non-tensor arguments as called)."""
    program = export_quietly(Sequences().eval(), (torch.randn(2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1),
                             folder / "sequences.onnx")
    truth: dict[str, Any] = {}
    for node in program.exported_program.graph.nodes:
        target = str(node.target)
        if node.op == "call_function" and target.startswith(("aten.lstm", "aten.gru", "aten.grid_sampler",
                                                                 "aten._native_batch_norm")):
            arguments = node.target._schema.arguments
            given = dict(zip((a.name for a in arguments), node.args, strict=False))
            truth[node.name] = {"target": f"aten::{target.split('.', 1)[1].removesuffix('.default')}",
                                **{a.name: given[a.name] for a in arguments if a.name in given
                                   and isinstance(given[a.name], (bool, int, float))}}
    (folder / "sequences.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class BiTagger(torch.nn.Module):
    """A sequence tagger: a bidirectional ``nn.LSTM`` (batch first), then a linear layer over both directions' states,
    as a BiLSTM tagger or speech encoder has them."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lstm = torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True)
        self.tags = torch.nn.Linear(6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _state = self.lstm(x)
        return self.tags(y)


def write_bi_tagger(folder: Path) -> None:
    """``bi_tagger.onnx``: ``BiTagger`` of a batch of 2 sequences of 6 steps."""
    export_quietly(BiTagger().eval(), (torch.randn(2, 6, 4),), folder / "bi_tagger.onnx")


class ProjBias(torch.nn.Module):
    """Attention's q, k and v projections and an MLP, with biases on the projections or without (Qwen2 against
    Mistral, Llama's ``attention_bias``): with them each projection's ``linear`` lowers to MatMul and Add, and the
    optimizer's numbers of the weights it folds (``val_<n>``) shift, so one name reads another layer's weight in the
    other export; the weights differ too (each bias drew from the generator before the next layer's weight)."""

    def __init__(self, bias: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v = (torch.nn.Linear(16, 16, bias=bias) for _ in range(3))
        self.up, self.down = torch.nn.Linear(16, 32, bias=False), torch.nn.Linear(32, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2), dim=-1)
        x = x + scores @ self.v(x)
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def write_proj_bias(folder: Path) -> None:
    """``proj_bias_a.onnx`` (no biases) and ``_b`` (biases on q, k and v), and each one's parameters with the shape
    torch holds them in (``proj_bias.truth.json``: parameter name -> shape)."""
    truth: dict[str, Any] = {}
    for name, bias in (("a", False), ("b", True)):
        model = ProjBias(bias).eval()
        export_quietly(model, (torch.randn(1, 4, 16),), folder / f"proj_bias_{name}.onnx")
        truth[name] = {k: list(v.shape) for k, v in model.state_dict().items()}
    (folder / "proj_bias.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                 encoding="utf-8")


class ParallelNorms(torch.nn.Module):
    """A block's two LayerNorms, as GPT-NeoX's ``use_parallel_residual`` places them: both reading the block's input
    (parallel), or the second reading the first branch's sum. Freshly made, their weights are equal (ones, zeros), so
    in the parallel block the two calls compute one value and the exporter's optimizer keeps one of them."""

    def __init__(self, parallel: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.parallel = parallel
        self.norm1, self.norm2 = torch.nn.LayerNorm(16), torch.nn.LayerNorm(16)
        self.attn, self.mlp = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.parallel:
            return x + self.attn(self.norm1(x)) + self.mlp(self.norm2(x))
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def write_parallel_norms(folder: Path) -> None:
    """``parallel_norms_a.onnx`` (parallel) and ``_b`` (sequential), and what each LayerNorm reads in torch's graph
    (``parallel_norms.truth.json``: module -> the FX node its call reads)."""
    truth: dict[str, Any] = {}
    for name, parallel in (("a", True), ("b", False)):
        model = ParallelNorms(parallel).eval()
        program = export_quietly(model, (torch.randn(1, 4, 16),), folder / f"parallel_norms_{name}.onnx")
        graph = program.exported_program.graph
        truth[name] = {str(n.meta["nn_module_stack"][next(reversed(n.meta["nn_module_stack"]))][0]): n.args[0].name
                       for n in graph.nodes if n.op == "call_function" and "layer_norm" in str(n.target)}
    (folder / "parallel_norms.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n",
                                                      encoding="utf-8")


def write_pairs(folder: Path, export: Callable[[Call, Path], None]) -> None:
    """Export each pair (A: the base call, B: one argument changed) to ``folder`` with a truth file."""
    folder.mkdir(parents=True, exist_ok=True)
    write_shifted(folder)
    write_stage_ratio(folder)
    write_split_eps(folder)
    write_proj_bias(folder)
    write_parallel_norms(folder)
    write_group_norms(folder)
    write_decoder(folder)
    write_activations(folder)
    write_bags(folder)
    write_scan_steps(folder)
    write_sequences(folder)
    write_bi_tagger(folder)
    truth: dict[str, Any] = {}
    for stem, target, param, value in PAIRS:
        p = plan(target)
        if isinstance(p, str):
            print(f"pair {stem}: {p}")
            continue
        old = p.base.values[param]
        export(p.base, folder / f"{stem}_a.onnx")
        export(replace(p.base, values={**p.base.values, param: value}), folder / f"{stem}_b.onnx")
        truth[stem] = {"target": target, "parameter": param, "a": old, "b": value}
    (folder / "pairs.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")
