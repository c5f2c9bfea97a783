"""Build large models from a real export by replicating its decoder layers.

Takes a flat dynamo export from the zoo (``tests/zoo/llama_gqa.onnx``, ``tests/zoo/gpt2.onnx``: full torch
metadata) and repeats its first decoder layer N times. Every copy K is a distinct set of aten calls in a distinct
module ``model.layers.K`` (``transformer.h.K``): ONNX value and node names, the FX node names inside
``pkg.torch.onnx.fx_node`` (the defined name and the ``%refs`` in its arguments), ``namespace`` and
``pkg.torch.onnx.name_scopes`` are renamed consistently; the layer's own initializers are copied under the
layer's new name (``model.layers.K.mlp.up_proj.weight``), constants shared between the original layers stay
shared. What flows from one layer into the next (hidden state, residual) is found by aligning the original
layers 0 and 1 node by node, and layer K's outputs are wired into K+1; the nodes after the last layer read the
last copy. The result passes ``onnx.checker.check_model``.

``perturb`` changes a few values in some copies (a float attribute such as ``epsilon``, or a scalar float
constant), so two builds differ in a few specialised values: the ``diff`` benchmark's pair.

    python benchmarks/replicate.py tests/zoo/llama_gqa.onnx OUT.onnx --nodes 100000 [--perturb 3]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnx import numpy_helper

_LAYER_SCOPE = re.compile(r"^(.*\.(?:layers|layer|h|blocks|block))\.(\d+)$")
_FX_HEAD = re.compile(r"^%([A-Za-z_][A-Za-z0-9_]*) :")
_FX_REF = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")
FX_KEY = "pkg.torch.onnx.fx_node"
SCOPES_KEY = "pkg.torch.onnx.name_scopes"


def _meta(node: onnx.NodeProto) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}


def _layer_of(node: onnx.NodeProto) -> tuple[str, int] | None:
    text = _meta(node).get(SCOPES_KEY)
    if not text:
        return None
    try:
        scopes = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    for s in scopes:
        m = _LAYER_SCOPE.match(str(s))
        if m:
            return m.group(1), int(m.group(2))
    return None


def _fx_names(node: onnx.NodeProto) -> list[str]:
    """The FX name this node's call defines, then the FX names its arguments refer to, in order."""
    return _FX_REF.findall(_meta(node).get(FX_KEY, ""))


@dataclass
class _Template:
    prefix: str  # "model.layers"
    pre: list[onnx.NodeProto]
    layer: list[onnx.NodeProto]  # layer 0
    post: list[onnx.NodeProto]
    produced: set[str]  # values produced by layer 0
    fx_defined: set[str]  # FX names defined by layer 0's calls
    carry: dict[str, str]  # layer-0 input value -> layer-0 output value that feeds it in the next layer
    fx_carry: dict[str, str]  # same for FX names
    last_to_0: dict[str, str]  # values produced by the last original layer -> layer-0 value
    fx_last_to_0: dict[str, str]
    own_inits: set[str]  # initializers read by layer 0 only (copied per layer)
    dropped_inits: set[str] = field(default_factory=set)  # initializers read by other layers only
    # per name without its counter (``view`` of ``view_3``): one more than the largest counter the source uses
    counters: dict[str, int] = field(default_factory=dict)


def _analyse(model: onnx.ModelProto) -> _Template:
    g = model.graph
    where = [_layer_of(n) for n in g.node]
    # nodes without metadata inside a layer's span (the optimizer's Splits) belong to that layer
    span: dict[int, list[int]] = {}
    for i, w in enumerate(where):
        if w is not None:
            span.setdefault(w[1], [i, i])[1] = i
    for i, w in enumerate(where):
        if w is None:
            where[i] = next(((pfx, k) for k, (a, b) in span.items() if a < i < b
                             for pfx in {x[0] for x in where if x is not None}), None)
    layers = sorted({w[1] for w in where if w is not None})
    if len(layers) < 2:
        raise ValueError("need an export with at least two decoder layers (name scopes like model.layers.K)")
    prefix = next(w[0] for w in where if w is not None)
    by_layer: dict[int, list[onnx.NodeProto]] = {k: [] for k in layers}
    for n, w in zip(g.node, where):
        if w is not None:
            by_layer[w[1]].append(n)
    l0, l1 = by_layer[layers[0]], by_layer[layers[1]]
    if any(len(by_layer[k]) != len(l0) for k in layers):
        raise ValueError("the layers differ in node count; cannot align them")
    layer_out: set[str] = {o for k in layers for n in by_layer[k] for o in n.output}
    # non-layer nodes: after the layers if they (transitively) read a layer's output, else before
    pre, post = [], []
    tainted = set(layer_out)
    for n, w in zip(g.node, where):
        if w is not None:
            continue
        if any(i in tainted for i in n.input):
            post.append(n)
            tainted.update(n.output)
        else:
            pre.append(n)
    produced = {o for n in l0 for o in n.output}
    carry: dict[str, str] = {}
    fx_carry: dict[str, str] = {}
    fx_defined = {names[0] for n in l0 if (names := _fx_names(n))}
    fx_to_0: dict[str, dict[str, str]] = {}
    val_to_0: dict[str, dict[str, str]] = {}
    for k in layers[1:]:
        fx_to_0[str(k)] = {}
        val_to_0[str(k)] = {}
        for a, b in zip(l0, by_layer[k]):
            if a.op_type != b.op_type or len(a.input) != len(b.input):
                raise ValueError(f"layers 0 and {k} differ at {a.name} / {b.name}")
            val_to_0[str(k)].update(zip(b.output, a.output))
            fa, fb = _fx_names(a), _fx_names(b)
            if fa and fb:
                fx_to_0[str(k)][fb[0]] = fa[0]
    for a, b in zip(l0, l1):
        for x, y in zip(a.input, b.input):
            if y in produced and x not in produced:
                carry[x] = y
        for x, y in zip(_fx_names(a)[1:], _fx_names(b)[1:]):
            if y in fx_defined and x not in fx_defined:
                fx_carry[x] = y
    l0_reads = {i for n in l0 for i in n.input}
    other_reads = {i for k in layers[1:] for n in by_layer[k] for i in n.input}
    inits = {t.name for t in g.initializer}
    outside_reads = {i for n in pre + post for i in n.input}
    own = {i for i in l0_reads & inits if i not in other_reads and i not in outside_reads}
    dropped = {i for i in other_reads & inits if i not in l0_reads} - outside_reads
    return _Template(prefix, pre, l0, post, produced, fx_defined, carry, fx_carry,
                     val_to_0[str(layers[-1])], fx_to_0[str(layers[-1])], own, dropped, _counters(model.graph))


def _counted(name: str) -> tuple[str, int]:
    """``view_3`` -> (``view``, 3); ``silu`` -> (``silu``, 0)."""
    head, sep, tail = name.rpartition("_")
    if sep and head and tail.isdigit() and tail.isascii() and len(tail) < 9:
        return head, int(tail)
    return name, 0


def _counters(graph: onnx.GraphProto) -> dict[str, int]:
    """Per name without its counter, one more than the largest counter any name of ``graph`` (values, nodes, FX
    names) uses with it."""
    out: dict[str, int] = {}
    names = [*(o for n in graph.node for o in [*n.output, n.name]), *(x.name for x in graph.initializer),
             *(f for n in graph.node for f in _fx_names(n))]
    for name in names:
        base, n = _counted(name)
        out[base] = max(out.get(base, 0), n + 1)
    return out


def _suffix(name: str, k: int, t: _Template) -> str:
    """``name`` in copy ``k``, numbered as torch's exporter numbers the names of one op (``mul``, ``mul_1``, ...): the
    name without its counter, then one past every counter it takes in the source and in the copies before (``view_3``
    in copy 2 of a source whose views go up to ``view_11``: ``view_39``), so that a copy's names read as an export's
    do, counters of an export's size included (the template matcher reads them: ``core.model.recognise_names``)."""
    base, n = _counted(name)
    step = t.counters.get(base, 1)
    return f"{base}_{(k + 1) * step + n}"


def _rename_scope_text(text: str, prefix: str, k: int) -> str:
    return text.replace(f"{prefix}.0", f"{prefix}.{k}")


def _copy_node(n: onnx.NodeProto, t: _Template, k: int, value_map: dict[str, str], fx_map: dict[str, str],
               init_map: dict[str, str]) -> onnx.NodeProto:
    c = onnx.NodeProto()
    c.CopyFrom(n)
    c.name = _suffix(n.name, k, t) if n.name else ""
    for j, i in enumerate(n.input):
        if i in t.produced:
            c.input[j] = _suffix(i, k, t)
        elif i in value_map:
            c.input[j] = value_map[i]
        elif i in init_map:
            c.input[j] = init_map[i]
    for j, o in enumerate(n.output):
        c.output[j] = _suffix(o, k, t)
    fx_names = _fx_names(n)
    fx_here = fx_names[0] if fx_names else None
    for p in c.metadata_props:
        if p.key == FX_KEY:
            p.value = _FX_REF.sub(lambda m: "%" + _fx_rename(m.group(1), t, k, fx_map), p.value)
        elif p.key == "namespace":
            v = _rename_scope_text(p.value, t.prefix, k)
            if fx_here:  # the last scope is the call: "…/neg: aten.neg.default"
                v = re.sub(rf"/{re.escape(fx_here)}: ([^/]*)$", lambda m: f"/{_suffix(fx_here, k, t)}: {m.group(1)}",
                           v)
            p.value = v
        elif p.key == SCOPES_KEY:
            try:
                scopes = [_rename_scope_text(str(s), t.prefix, k) for s in ast.literal_eval(p.value)]
            except (ValueError, SyntaxError):
                continue
            if fx_here and scopes and scopes[-1] == fx_here:
                scopes[-1] = _suffix(fx_here, k, t)
            p.value = repr(scopes)
    return c


def _fx_rename(name: str, t: _Template, k: int, fx_map: dict[str, str]) -> str:
    if name in t.fx_defined:
        return _suffix(name, k, t)
    return fx_map.get(name, name)


def replicate(source: onnx.ModelProto, copies: int, perturb: int = 0) -> onnx.ModelProto:
    """A model with ``copies`` copies of ``source``'s first decoder layer (see the module doc)."""
    t = _analyse(source)
    g = source.graph
    out = onnx.ModelProto()
    out.CopyFrom(source)
    del out.graph.node[:]
    del out.graph.initializer[:]
    del out.graph.value_info[:]
    inits = {x.name: x for x in g.initializer}
    vinfo = {v.name: v for v in g.value_info}
    drop_layer_values = {o for n in g.node for o in n.output} - {o for n in t.pre + t.post for o in n.output}
    for name, x in inits.items():
        if name not in t.own_inits and name not in t.dropped_inits:
            out.graph.initializer.append(x)
    out.graph.node.extend(t.pre)
    value_map: dict[str, str] = {}
    fx_map: dict[str, str] = {}
    perturbed = set(range(1, copies, max(1, copies // perturb))) if perturb else set()
    perturbed = set(sorted(perturbed)[:perturb])
    for k in range(copies):
        init_map: dict[str, str] = {}
        for name in sorted(t.own_inits):
            new = _rename_scope_text(name, t.prefix, k) if f"{t.prefix}.0." in name else _suffix(name, k, t)
            x = out.graph.initializer.add()
            x.CopyFrom(inits[name])
            x.name = new
            init_map[name] = new
        nodes = [_copy_node(n, t, k, value_map, fx_map, init_map) for n in t.layer]
        if k in perturbed:
            _perturb(nodes, out.graph, inits, k, t)
        out.graph.node.extend(nodes)
        for v in t.produced:
            if v in vinfo:
                vi = out.graph.value_info.add()
                vi.CopyFrom(vinfo[v])
                vi.name = _suffix(v, k, t)
        # layer K's outputs feed K+1
        value_map = {x: _suffix(y, k, t) for x, y in t.carry.items()}
        fx_map = {x: _suffix(y, k, t) for x, y in t.fx_carry.items()}
    last = copies - 1
    last_values = {x: _suffix(y, last, t) for x, y in t.last_to_0.items()}
    last_fx = {x: _suffix(y, last, t) for x, y in t.fx_last_to_0.items()}
    for n in t.post:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        for j, i in enumerate(n.input):
            if i in last_values:
                c.input[j] = last_values[i]
        for p in c.metadata_props:
            if p.key == FX_KEY:
                p.value = _FX_REF.sub(lambda m: "%" + last_fx.get(m.group(1), m.group(1)), p.value)
        out.graph.node.append(c)
    for o in out.graph.output:
        if o.name in last_values:
            o.name = last_values[o.name]
    for name, v in vinfo.items():
        if name not in drop_layer_values:
            out.graph.value_info.append(v)
    return out


def _perturb(nodes: list[onnx.NodeProto], graph: onnx.GraphProto, inits: dict[str, onnx.TensorProto],
             k: int, t: _Template) -> None:
    """Change one float attribute (eps) or, failing that, one scalar float initializer read by this copy."""
    for n in nodes:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.FLOAT and a.f != 0.0:
                a.f *= 2.0
                return
    scalars = []  # (node, input slot, value) of scalar float initializers other than 0 and 1
    for n in nodes:
        for j, i in enumerate(n.input):
            x = inits.get(i)
            if x is not None and x.data_type == onnx.TensorProto.FLOAT and not x.external_data:
                arr = numpy_helper.to_array(x)
                if arr.size == 1 and float(arr.reshape(-1)[0]) not in (0.0, 1.0):
                    scalars.append((n, j, arr))
    if scalars:  # an epsilon (a tiny constant, RMSNorm's) first, else the first scalar
        n, j, arr = next((c for c in scalars if 0 < abs(float(c[2].reshape(-1)[0])) < 1e-3), scalars[0])
        new = graph.initializer.add()
        new.CopyFrom(numpy_helper.from_array(arr * 1.5, _suffix(n.input[j], k, t) + "_changed"))
        n.input[j] = new.name


def externalise(model: onnx.ModelProto, out: Path, min_bytes: int = 64, location: str | None = None) -> None:
    """Move initializers of ``min_bytes`` or more to ``OUT.weights.bin``; equal tensors share one stored copy.

    Real large exports keep their weights outside the protobuf; the copies of one layer's weight point at the
    same bytes, so the file stays small while each copy keeps its own initializer name. ``location`` names the
    weights file (default ``OUT.weights.bin``): a pair of models that share one file has equal external data.
    """
    location = location or out.name + ".weights.bin"
    stored: dict[bytes, tuple[int, int]] = {}
    with open(out.parent / location, "wb") as fh:
        offset = 0
        for x in model.graph.initializer:
            if x.data_location == onnx.TensorProto.EXTERNAL:
                continue
            raw = x.raw_data or numpy_helper.from_array(numpy_helper.to_array(x)).raw_data
            if len(raw) < min_bytes:
                continue
            where = stored.get(raw)
            if where is None:
                fh.write(raw)
                where = stored[raw] = (offset, len(raw))
                offset += len(raw)
            dims, dtype, name = list(x.dims), x.data_type, x.name
            x.Clear()
            x.name, x.data_type = name, dtype
            x.dims.extend(dims)
            x.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", str(where[0])), ("length", str(where[1]))):
                e = x.external_data.add()
                e.key, e.value = k, v


def build(source: Path, out: Path, nodes: int, perturb: int = 0, check: bool = False,
          weights: str | None = None) -> int:
    """Write a replica of about ``nodes`` nodes to ``out`` (weights external, in the file named ``weights`` if
    given); returns its node count."""
    src = onnx.load(str(source), load_external_data=False)
    model = replicate(src, copies_for(src, nodes), perturb)
    if check:
        onnx.checker.check_model(model)
    externalise(model, out, location=weights)
    onnx.save(model, str(out))
    return len(model.graph.node)


def layer_size(source: onnx.ModelProto) -> tuple[int, int]:
    """(nodes in one layer, nodes outside the layers)."""
    t = _analyse(source)
    return len(t.layer), len(t.pre) + len(t.post)


def copies_for(source: onnx.ModelProto, nodes: int) -> int:
    per, fixed = layer_size(source)
    return max(2, round((nodes - fixed) / per))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=10_000, help="about how many nodes (default 10000)")
    ap.add_argument("--perturb", type=int, default=0, help="change a value in this many copies")
    ap.add_argument("--check", action="store_true", help="run onnx.checker.check_model on the result")
    args = ap.parse_args(argv)
    n = build(Path(args.source), Path(args.out), args.nodes, args.perturb, args.check)
    print(f"{args.out}: {n} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
