"""The run: match, detect a fold, compare, check the wiring, in that order."""

from __future__ import annotations

import os

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.diff.compare import Comparer, Recorder, compare_nodes
from inspector.core.diff.facts import GraphComparer
from inspector.core.diff.fold import detect_fold, explained_functions
from inspector.core.diff.matching import Matcher
from inspector.core.diff.model import Change, FoldRelation, ModelDiff
from inspector.core.diff.module_fold import inline_module_folds, module_relation
from inspector.core.diff.sources import Sources
from inspector.core.diff.units import Side, UnitPairs, aten_family
from inspector.core.diff.wiring import WiringCheck
from inspector.core.model.index import ModelIndex, build_index
from inspector.core.model.loader import ReadBuffer, load_model
from inspector.core.util.progress import Progress
from inspector.core.util.sanitize import retry_repaired


def diff_files(path_a: str | os.PathLike[str], path_b: str | os.PathLike[str],
               keep: list[object] | None = None) -> ModelDiff:
    """Open, index and diff two model files. ``keep``: see ``diff_models``; the two indexes go there too."""
    buffer = ReadBuffer((path_a, path_b))  # B's bytes go where A's went (see ReadBuffer)
    # A's nodes' inputs and outputs read by its scan, which reaches each node anyway: the pair's producers and readers
    # take them (``ModelIndex.node_io``) instead of reading every node of A again
    a = build_index(load_model(path_a, buffer=buffer), modules=False, node_io=True)
    model_b = load_model(path_b, buffer=buffer)
    del buffer  # (before B is indexed: no more memory is held at once than with a fresh read of each)
    # like A: two exports of one model have mostly equal nodes, read once
    b = build_index(model_b, modules=False, like=a)
    del model_b
    if keep is not None:
        keep += (a, b)
    return diff_models(a, b, keep=keep)


def diff_models(a: ModelIndex, b: ModelIndex, catalogue: SchemaCatalogue | None = None,
                keep: list[object] | None = None, progress: Progress | None = None) -> ModelDiff:
    """The structural diff of two indexed models. ``keep``: a list that takes what the diff built (each side's
    units) instead of freeing it, for a process that ends next (``inspector.commands``). ``progress``: a checkpoint
    (``core.util.progress``) between the steps of the passes over a whole model (``diff.follow``)."""
    sides: list[Side] = []
    try:
        return retry_repaired(lambda: _run(a, b, catalogue, sides, progress), a.proto, b.proto)
    finally:
        if keep is not None:
            keep += sides


def _run(a: ModelIndex, b: ModelIndex, catalogue: SchemaCatalogue | None, sides: list[Side],
         progress: Progress | None = None) -> ModelDiff:
    protected = [*a.protected_files(), *b.protected_files()]
    flat_a, flat_b = a, b
    a, b, inlined, module_side = inline_module_folds(a, b)  # a module fold is compared with its calls inlined
    A, B = Side.pair(a, b, progress)  # cut as a pair when B is mostly A: what they share is not read (diff.follow)
    sides += (A, B)
    pairs = UnitPairs(A, B)
    matcher = Matcher(pairs)
    recorder = Recorder()
    comparer = Comparer(pairs, recorder, catalogue)
    graph = GraphComparer(pairs, recorder, matcher.matched)
    fmap = matcher.match_functions()
    umap: dict[int, int] = {}  # unit of A -> unit of B
    sources = Sources(A, B)  # calls recognised by template on one side, from fx metadata on the other
    matcher.match_aten(umap, sources)
    matcher.match_calls(fmap, umap)
    matcher.match_nodes(umap)
    sources.cover(umap)
    fold = detect_fold(A, B, umap)
    explained = explained_functions(A, B, fold, umap)
    if fold is not None:
        recorder.add(_folded(fold))
    graph.compare_model_facts(fold, explained)
    comparer.compare_families(fmap, explained, sources)
    comparer.compare_functions(fmap)
    comparer.compare_aten(umap, fmap, sources)
    comparer.compare_calls(umap, fmap)
    compare_nodes(pairs, recorder, umap, sources)
    tmap = matcher.match_initializers(umap)
    graph.compare_initializers(tmap)
    imap = graph.compare_values("input", A.inputs, B.inputs)
    omap = graph.compare_values("output", list(A.graph.output), list(B.graph.output))
    wiring = WiringCheck(pairs, recorder.add, umap, tmap, imap)
    wiring.run(omap)
    if wiring.stand_ins:
        merged_calls(recorder.changes, wiring.stand_ins)
    if wiring.replaced:
        replaced_calls(recorder.changes, wiring.replaced)
    if fold is not None:  # the explanation is written once everything else is known, so it agrees with it
        fold.other_changes = sum(1 for c in recorder.changes if c.kind != "folded")
        for c in recorder.changes:
            if c.kind == "folded":
                c.detail = fold.explanation
    if inlined is not None:
        relation = module_relation(inlined, module_side, flat_b if module_side == "a" else flat_a, recorder.changes)
        relation.other_changes = sum(1 for c in recorder.changes if c.kind != "folded")
        recorder.changes.insert(0, _folded(relation))
        fold = fold or relation
    return ModelDiff(str(a.path), str(b.path), recorder.changes, fold, matcher.matched, protected)


def merged_calls(changes: list[Change], stand_ins: dict[tuple[str, str], str]) -> None:
    """A call one side added whose readers read, on the other side, a call of the same target: the change says which
    (``A reads layer_norm where B reads layer_norm_1``), so that it reads as one call doing the work of two, not as a
    call from nowhere (``WiringCheck.stand_ins``)."""
    for c in changes:
        kind = "added" if c.kind == "call_added" else "removed" if c.kind == "call_removed" else ""
        if not kind or c.section != "aten_call":
            continue
        said = [(stand_ins[(kind, site)], site) for site in c.sites if (kind, site) in stand_ins]
        c.stand_in = stand_ins.get((kind, c.where), "")
        if said:
            one, two = ("A", "B") if kind == "added" else ("B", "A")
            c.detail += "; " + ", ".join(f"{one} reads {x} where {two} reads {y}" for x, y in said) + \
                f": one call of {one} for two of {two}"


def replaced_calls(changes: list[Change], replaced: dict[tuple[str, str], tuple[str, str]]) -> None:
    """A call removed and a call added of another target that matched calls read at one place: each change says
    which call it stands for (``WiringCheck.replaced``), a removed family by which target and calls (``aten::gelu``:
    ``replaced by aten::relu where its calls were read (gelu by relu, gelu_1 by relu_1)``)."""
    by_a = {name: (b, tb) for (name, _ta), (b, tb) in replaced.items()}
    by_b = {b: (name, ta) for (name, ta), (b, _tb) in replaced.items()}
    for c in changes:
        if c.section != "aten_call":
            continue
        if c.kind in ("call_added", "call_removed"):
            mine, word, by = (by_b, "in place of", "for") if c.kind == "call_added" else (by_a, "replaced by", "by")
            said: dict[str, list[str]] = {}  # the other side's target -> "site for/by its call" of each site
            for site in c.sites:
                if site in mine:
                    other, target = mine[site]
                    said.setdefault(target, []).append(f"{site} {by} {other}")
            if said:
                c.stand_in = mine[c.where if c.where in mine else next(s for s in c.sites if s in mine)][0]
                c.detail += "; " + "; ".join(f"{word} {t} ({', '.join(x)})" for t, x in said.items())
        elif c.kind in ("family_removed", "family_added"):
            removed = c.kind == "family_removed"  # (its calls are A's; an added family's are B's)
            pairs = [(x, y, ty) for (a, ta), (b, tb) in replaced.items()
                     for x, y, tx, ty in ((a, b, ta, tb) if removed else (b, a, tb, ta),)
                     if aten_family(tx) == c.family]
            if pairs:
                c.stand_in = pairs[0][1]
                targets = ", ".join(dict.fromkeys(t for _x, _y, t in pairs))
                word, by, tense = ("replaced by", "by", "were") if removed else ("in place of", "for", "are")
                c.detail += f"; {word} {targets} where its calls {tense} read (" + \
                    ", ".join(f"{x} {by} {y}" for x, y, _t in pairs) + ")"


def _folded(fold: FoldRelation) -> Change:
    new: dict[str, object] = {"folded": fold.folded, "calls": fold.calls, "functions": fold.functions,
                              "domains": fold.domains, "identical": fold.identical}
    if fold.unit == "module":
        new.update(unit="module", differ=fold.differ)
    return Change("folded", "model", "", "model", {"flat": "a" if fold.folded == "b" else "b"}, new,
                  fold.explanation)
