"""Measure recognition by body template on the zoo: strip each dynamo export's ``pkg.torch.onnx.*`` metadata
(``strip_metadata.py``), index the stripped model, and compare the recognised calls with the original metadata's
aten calls as truth. ``tests/test_recognise_zoo.py`` asserts the targets; this prints the table.

A call counts as *multi-node* when the body torchlib made for it has at least two nodes other than Constant nodes
(constant operands), *single-node* otherwise; a truth call whose target has no template in the catalogue counts as
*no template*. A target whose every torchlib body is one node (each of its templates, from torch's one-op exports, is
one node: ``view``, ``_unsafe_view``, ``expand``, ``zeros``) made more nodes only where the exporter lowered a list
of symbolic sizes to a ``Concat`` (its size operand, computed as a Constant node is given): single-node, as the
issue counts "a lone Reshape" (before this rule the measure counted the zoo's 68 such calls, 54 views and 14
Concat+Expand, as multi-node: strict recall 0.767 (250/326) instead of 0.922 (238/258)).
Multi-node: recall = truth calls found with the same target and exactly the same nodes; precision = recognised
multi-node calls given one target that equal a truth call in both; a body that fits several overloads is no guess:
it is counted apart (ambiguous), with the truth calls found with the right nodes and their target among the
candidates.
Single-node: coverage = truth calls with a recognised call of the same nodes whose candidates include the target.
Arguments: each argument given back for a call whose target and nodes are right is compared with the argument the
FX text had (a ``dim`` is given back as a non-negative axis: a negative truth is normalised by the rank of the
call's first input before comparing, where the model records it).
Recognised calls that are truth calls: of every recognised call, the share whose nodes are exactly a truth call's and
whose candidates include its target. The multi-node precision counts only the calls recognised as multi-node; where
a truth body went unfound, its nodes may have been taken as lone calls of their own (an IsNaN as ``isnan``), which
only this column counts.

``--dir DIR`` measures the dynamo exports in DIR instead of the zoo's: the held-out set ``gen_heldout.py`` exports,
architectures the templates and rules were never tuned on.

``--misses`` counts the missed multi-node calls by target, form (optimised export or ``_noopt``), body and what was
found there instead (an ambiguous body and its candidates, other calls, nothing): the classes of misses to fix.

``--speed FILE`` times the matcher in this process instead (CPU, best of ``--runs``) on an export (its torch metadata
stripped first, as ``make bench`` strips the replica: ``benchmarks/_generated/llama_gqa_100000_stripped.onnx``), against
``onnx.load`` of the file, with what its time is made of: the nodes' keys, their signatures, the multi-node and
one-node passes, making the calls, and the collector's share of the whole (read off ``gc.callbacks``, not changed).

Usage::

    .venv/bin/python scripts/measure_recognition.py [--wrong] [--misses] [--dir DIR]
    .venv/bin/python scripts/measure_recognition.py --speed FILE [--runs 5]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from strip_metadata import strip, zoo_dynamo  # noqa: E402

from inspector.core.aten.templates import load_templates  # noqa: E402
from inspector.core.model.fx import Symbol  # noqa: E402
from inspector.core.model.index import ModelIndex, open_index  # noqa: E402
from inspector.core.model.keys import MAIN  # noqa: E402
from inspector.core.model.signature import call_signature  # noqa: E402


@dataclass
class Row:
    model: str
    nodes: int
    multi_truth: int = 0
    multi_found: int = 0
    multi_predicted: int = 0  # recognised multi-node calls given one target
    multi_right: int = 0
    multi_ambiguous: int = 0  # recognised multi-node calls with several candidates
    multi_in_candidates: int = 0  # truth calls found with the right nodes, the target among several candidates
    single_truth: int = 0
    single_covered: int = 0
    single_unique: int = 0  # covered with one candidate only
    no_template: int = 0
    args_right: int = 0
    args_wrong: int = 0
    nodes_explained: int = 0
    recognised: int = 0  # every recognised call
    # recognised calls whose nodes are no truth call's, or whose candidates miss its target: a part of a call, or
    # several (what the multi-node precision above cannot see where the truth's body went unfound)
    not_calls: int = 0
    # recognised calls whose nodes are a truth call's, named as torch named that call (``recognise_names``), named
    # otherwise (never but ``recognised_<n>``), or numbered (their outputs' names give none)
    names_right: int = 0
    names_wrong: int = 0
    wrong: list[str] = field(default_factory=list)
    misses: list[tuple[str, str, str]] = field(default_factory=list)  # (target, body's op types, what was found)

    @property
    def recall(self) -> float:
        return self.multi_found / self.multi_truth if self.multi_truth else 1.0

    @property
    def precision(self) -> float:
        return self.multi_right / self.multi_predicted if self.multi_predicted else 1.0

    @property
    def coverage(self) -> float:
        return self.single_covered / self.single_truth if self.single_truth else 1.0

    @property
    def calls_right(self) -> float:
        """The share of recognised calls that are a truth call, with its target among the candidates."""
        return 1 - self.not_calls / self.recognised if self.recognised else 1.0


def template_sizes() -> tuple[dict[str, int], dict[str, int]]:
    """target -> the largest body among its templates (whether torchlib ever makes it more than one node); template
    -> nodes."""
    out: dict[str, int] = {}
    for t in load_templates():
        out[t.target] = max(out.get(t.target, len(t.nodes)), len(t.nodes))
    return out, {t.name: len(t.nodes) for t in load_templates()}


def _calls(index: ModelIndex) -> dict[frozenset[int], Any]:
    return {frozenset(int(p[0]) for p in c.node_paths): c for c in index.provenance.calls
            if c.scope == MAIN and all(len(p) == 1 for p in c.node_paths)}


def _body(g: onnx.GraphProto, nodes: frozenset[int]) -> int:
    """The nodes of a call that are not Constant nodes (a Constant is an operand, as an initializer is)."""
    return sum(1 for i in nodes if g.node[i].op_type != "Constant")


def _ops(g: onnx.GraphProto, nodes: frozenset[int]) -> str:
    """A body's op types in graph order, without its Constant nodes (``Shape Gather Unsqueeze Concat``)."""
    return " ".join(g.node[i].op_type for i in sorted(nodes) if g.node[i].op_type != "Constant")


def _miss(got: Any, nodes: frozenset[int], found: dict[frozenset[int], Any]) -> str:
    """Why a truth call was missed: ambiguous (the candidates), other nodes claimed, or nothing there."""
    if got is not None:
        return f"ambiguous: {', '.join(got.candidates)}" if len(got.candidates) > 1 else f"as {got.target}"
    others = sorted({c.candidates[0] if len(c.candidates) == 1 else "ambiguous" for k, c in found.items() if k & nodes})
    return f"parts in: {', '.join(others)}" if others else "no call"


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    g = model.graph
    return {v.name: len(v.type.tensor_type.shape.dim) for v in [*g.input, *g.value_info, *g.output]
            if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")}


def _same(got: Any, want: Any, rank: int | None) -> bool:
    # a string as FX writes one (``approximate: tanh``: a ``Symbol``) and as a schema's default holds it (``'none'``)
    got, want = (v.text if isinstance(v, Symbol) else v for v in (got, want))
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(got) == len(want) and all(_same(a, b, rank) for a, b in zip(got, want))
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want or got == want
    if isinstance(want, int) and isinstance(got, int):  # (one dim, negative on either side: the same axis)
        return got == want or (rank is not None and (want < 0 or got < 0) and got % rank == want % rank)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12)
    return bool(got == want)


def measure(path: Path, work: Path) -> Row:
    truth_index = open_index(path)
    model = onnx.load(str(path), load_external_data=False)
    strip(model)
    stripped = work / path.name
    onnx.save(model, str(stripped))
    index = open_index(stripped, maps=True)  # (as a summary opens it: the scan reads the nodes the matcher keys)
    sizes, _names = template_sizes()
    truth = _calls(truth_index)
    found = {k: c for k, c in _calls(index).items() if c.recognised}
    ranks = _ranks(model)
    g = model.graph
    row = Row(path.stem, len(g.node), nodes_explained=sum(len(k) for k in found), recognised=len(found))
    row.not_calls = sum(1 for k, c in found.items() if k not in truth or truth[k].target not in c.candidates)
    for k, c in found.items():
        if k in truth and not c.name.startswith("recognised_"):
            row.names_right += c.name == truth[k].name
            row.names_wrong += c.name != truth[k].name
    for nodes, call in truth.items():
        got = found.get(nodes)
        if call.target not in sizes:
            row.no_template += 1
        elif _body(g, nodes) >= 2 and sizes[call.target] >= 2:
            row.multi_truth += 1
            row.multi_found += got is not None and got.candidates == (call.target,)
            row.multi_in_candidates += got is not None and len(got.candidates) > 1 and call.target in got.candidates
            if got is None or got.candidates != (call.target,):
                row.misses.append((call.target, _ops(g, nodes), _miss(got, nodes, found)))
        else:
            row.single_truth += 1
            if got is not None and call.target in got.candidates:
                row.single_covered += 1
                row.single_unique += len(got.candidates) == 1
    for nodes, got in found.items():
        if _body(g, nodes) < 2 or all(sizes.get(c, 0) < 2 for c in got.candidates):
            continue  # (a body no candidate's torchlib makes of two nodes: a single-node one, as for the truth)
        if len(got.candidates) > 1:
            row.multi_ambiguous += 1
            continue
        row.multi_predicted += 1
        want = truth.get(nodes)
        if want is not None and got.candidates == (want.target,):
            row.multi_right += 1
        else:
            row.wrong.append(f"{got.target} at {sorted(nodes)} (truth: "
                             f"{want.target if want is not None else 'no call with these nodes'})")
    for nodes, got in found.items():
        want = truth.get(nodes)
        if want is None or got.candidates != (want.target,) or got.fx is None:
            continue
        bound = {b.parameter.name: b.value for b in call_signature(want).bound if b.provided}
        first = next((v for i in sorted(nodes) for v in g.node[i].input if v), None)
        for p, v in got.fx.kwargs.items():
            if p not in bound:
                continue
            if _same(v, bound[p], ranks.get(first) if first else None):
                row.args_right += 1
            else:
                row.args_wrong += 1
                row.wrong.append(f"{got.target} {p}: {v!r} (truth {bound[p]!r})")
    return row


def measure_zoo(folder: Path | None = None) -> list[Row]:
    """The rows of the zoo's dynamo exports, or of those in ``folder`` (``gen_heldout.py``'s held-out set)."""
    with tempfile.TemporaryDirectory(prefix="recognise-") as tmp:
        return [measure(p, Path(tmp)) for p in zoo_dynamo(folder)]


def table(rows: list[Row]) -> str:
    head = ("| model | nodes | multi-node truth | recall | ambiguous, truth among candidates | precision "
            "| ambiguous | single-node truth | in candidates | unique | no template | args right/wrong "
            "| nodes explained | recognised calls that are truth calls | named as torch named them right/wrong |")
    lines = [head, "|" + " --- |" * 15]
    for r in [*rows, total(rows)]:
        lines.append(f"| {r.model} | {r.nodes} | {r.multi_truth} | {r.recall:.3f} ({r.multi_found}) | "
                     f"{r.multi_in_candidates} | {r.precision:.3f} ({r.multi_right}/{r.multi_predicted}) | "
                     f"{r.multi_ambiguous} | {r.single_truth} | "
                     f"{r.coverage:.3f} ({r.single_covered}) | {r.single_unique} | {r.no_template} | "
                     f"{r.args_right}/{r.args_wrong} | {r.nodes_explained / max(r.nodes, 1):.2f} | "
                     f"{r.calls_right:.3f} ({r.recognised - r.not_calls}/{r.recognised}) | "
                     f"{r.names_right}/{r.names_wrong} |")
    return "\n".join(lines)


def total(rows: list[Row]) -> Row:
    t = Row("all", sum(r.nodes for r in rows))
    for name in ("multi_truth", "multi_found", "multi_predicted", "multi_right", "multi_ambiguous",
                 "multi_in_candidates", "single_truth", "single_covered",
                 "single_unique", "no_template", "args_right", "args_wrong", "nodes_explained", "recognised",
                 "not_calls", "names_right", "names_wrong"):
        setattr(t, name, sum(getattr(r, name) for r in rows))
    return t


def misses_table(rows: list[Row]) -> str:
    """The missed multi-node calls counted by (target, form, body, what was found), most first: the classes to fix.
    A model is of the unoptimised form when its name says so (``_noopt``, as ``gen_zoo.py`` names them)."""
    count: dict[tuple[str, str, str, str], int] = {}
    for r in rows:
        form = "noopt" if r.model.endswith("_noopt") else "opt"
        for target, ops, why in r.misses:
            key = (target, form, ops, why)
            count[key] = count.get(key, 0) + 1
    lines = ["| missed | target | form | found | body |", "| ---: | --- | --- | --- | --- |"]
    for (target, form, ops, why), n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| {n} | {target} | {form} | {why} | {ops} |")
    return "\n".join(lines)


def torchscript_share() -> list[tuple[str, int, int, int]]:
    """(model, nodes, nodes in calls of one target, nodes in ambiguous calls) for the zoo's TorchScript exports,
    matched as the index would if it looked there (it does not: ``recognise.applies``); main graph only."""
    from inspector.core.aten.templates import load_templates
    from inspector.core.model.graph import GraphMaps
    from inspector.core.model.recognise import onnx_opset, recognise

    out = []
    for path in sorted((REPO / "tests" / "zoo").glob("ts_*.onnx")):
        model = onnx.load(str(path), load_external_data=False)
        found = recognise(model.graph, GraphMaps(model.graph), set(), load_templates(), onnx_opset(model))
        unique = sum(len(r.nodes) for r in found if len(r.candidates) == 1)
        ambiguous = sum(len(r.nodes) for r in found if len(r.candidates) > 1)
        out.append((path.stem, len(model.graph.node), unique, ambiguous))
    return out


def speed(path: Path, runs: int = 5) -> list[tuple[str, float]]:
    """The matcher's CPU seconds on ``path`` (stripped first), each part the least of ``runs``."""
    import gc
    import time

    from inspector.core.model.functions import scan_model
    from inspector.core.model.graph import GraphMaps
    from inspector.core.model.recognise import Matcher, onnx_opset, recognised_calls
    from inspector.core.model.recognise_constants import GraphConstants
    from inspector.core.model.recognise_nodes import NodeSignatures, node_keys

    def least(fn: Any) -> float:
        times = []
        for _ in range(runs):
            c = time.process_time()
            fn()
            times.append(time.process_time() - c)
        return min(times)

    load = least(lambda: onnx.load(str(path), load_external_data=False))
    model = onnx.load(str(path), load_external_data=False)
    strip(model)
    graph, opset, templates = model.graph, onnx_opset(model), load_templates()
    maps = GraphMaps(graph, flat=True)
    scanning = least(lambda: scan_model(model, bare=True))
    bare = scan_model(model, bare=True).bare  # (the nodes' keys as the index's scan reads them for the matcher)
    recognised_calls(model, [], maps, bare)  # (the catalogue read and prepared, the producers mapped: once per process)
    collected: list[float] = []
    started = [0.0]

    def collector(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            collected[-1] += time.process_time() - started[0]

    gc.callbacks.append(collector)
    whole = []
    try:
        for _ in range(runs):
            collected.append(0.0)
            c = time.process_time()
            recognised_calls(model, [], maps, bare)
            whole.append((time.process_time() - c, collected[-1]))
    finally:
        gc.callbacks.remove(collector)
    total, in_gc = min(whole)
    keys = least(lambda: node_keys(graph, maps, opset, bare))
    k, kinds, full = node_keys(graph, maps, opset, bare)
    signatures = least(lambda: NodeSignatures(maps, kinds, full, GraphConstants(graph, maps, set(), k)))
    start = least(lambda: Matcher(graph, maps, set(), templates, opset, bare))
    one_node: list[float] = []

    class Timed(Matcher):
        def _one_node_calls(self, *args: Any) -> None:
            c = time.process_time()
            super()._one_node_calls(*args)
            one_node.append(time.process_time() - c)

    passes = []
    for m in [Timed(graph, maps, set(), templates, opset, bare) for _ in range(runs)]:
        c = time.process_time()
        m.calls()
        passes.append(time.process_time() - c)
    both, single = min(passes), min(one_node)
    return [("onnx.load", load), ("matcher", total), ("  of which the collector", in_gc),
            ("  node keys", keys), ("  node signatures (constants included)", signatures),
            ("  the matcher's other set-up", start - keys - signatures), ("  multi-node pass", both - single),
            ("  one-node pass", single), ("  making the calls", total - start - both),
            ("(the index's scan, which reads the nodes' keys)", scanning)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wrong", action="store_true", help="list every wrong call and argument")
    parser.add_argument("--misses", action="store_true",
                        help="count the missed multi-node calls by target, body and form (optimised or not)")
    parser.add_argument("--speed", type=Path, metavar="FILE", help="time the matcher on FILE instead (see above)")
    parser.add_argument("--runs", type=int, default=5, help="with --speed: runs of each part, the least is shown")
    parser.add_argument("--dir", type=Path, metavar="DIR",
                        help="measure the dynamo exports in DIR instead of the zoo's (scripts/gen_heldout.py)")
    args = parser.parse_args(argv)
    if args.speed:
        parts = speed(args.speed, args.runs)
        load = parts[0][1]
        for name, seconds in parts:
            print(f"{name:<40} {seconds:7.3f} s  {seconds / load:5.2f}x onnx.load")
        return 0
    rows = measure_zoo(args.dir)
    print(table(rows))
    if args.dir is not None:  # (the TorchScript share is the zoo's)
        rows_only(args, rows)
        return 0
    print("\n| TorchScript export | main-graph nodes | in calls of one target | in ambiguous calls | explained |")
    print("| --- | --- | --- | --- | --- |")
    for name, nodes, unique, ambiguous in torchscript_share():
        print(f"| {name} | {nodes} | {unique} | {ambiguous} | {(unique + ambiguous) / max(nodes, 1):.2f} |")
    rows_only(args, rows)
    return 0


def rows_only(args: argparse.Namespace, rows: list[Row]) -> None:
    """What ``--wrong`` and ``--misses`` print of ``rows``."""
    if args.wrong:
        for r in rows:
            for w in r.wrong:
                print(f"{r.model}: {w}")
    if args.misses:
        print("\n" + misses_table(rows))


if __name__ == "__main__":
    raise SystemExit(main())
