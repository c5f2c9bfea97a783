"""The model index: everything the GUI, diff and reports read about one model, built in a few passes.

Families unify local functions (``kind="function"``: overloads of one ``(domain, name)``) and aten calls of
flat exports (``kind="aten_call"``: ``aten::transpose.int`` is family ``(aten, transpose)``, overload
``int``).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import onnx

from inspector.core.model.calls import AtenCall, split_target
from inspector.core.model.functions import FunctionIndex, build_function_index, call_targets, overload_label, scan_model
from inspector.core.model.graph import GraphMaps, declared_names
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.loader import LoadedModel, load_model
from inspector.core.model.provenance import ProvenanceIndex, build_provenance
from inspector.core.model.scan import MainReads, ScanResult, applies
from inspector.core.model.tensor_sizes import TENSOR_BITS, element_count, tensor_size
from inspector.core.model.walk import STANDARD_DOMAINS, SUBGRAPH_OPS
from inspector.core.util.paths import model_files
from inspector.core.util.progress import Progress
from inspector.core.util.sanitize import sanitize_text
from inspector.core.util.units import plural

if TYPE_CHECKING:
    from inspector.core.model.findings import Finding
    from inspector.core.model.parameters import ParameterStats
    from inspector.core.model.scan_like import Earlier

FamilyKind = Literal["function", "aten_call"]  # local-function overloads, or aten calls of one target


@dataclass(slots=True)
class Overload:
    """One member of a family: a function overload, or one aten overload (``int`` of ``aten::transpose``)."""

    kind: FamilyKind
    domain: str
    name: str
    overload: str  # as shown to a user ("" for the default)
    function: FunctionKey | None = None
    call_count: int = 0
    aten_calls: list[AtenCall] = field(default_factory=list)
    aten_target: str | None = None  # for a function that stands for an aten overload (a fold's function)

    @property
    def target(self) -> str | None:
        """``aten::transpose.int`` for aten overloads and for functions that stand for one."""
        if self.kind != "aten_call":
            return self.aten_target
        if self.domain == "python":
            return self.name
        return f"{self.domain}::{self.name}" + ("" if self.overload == "default" else f".{self.overload}")

    @property
    def label(self) -> str:
        if self.kind == "aten_call":
            return self.target or self.name
        return str(self.function) if self.function else self.name


@dataclass(slots=True)
class Family:
    """Overloads sharing (domain, name): a function family, or the aten calls of one target."""

    kind: FamilyKind
    domain: str
    name: str
    overloads: list[Overload] = field(default_factory=list)
    torchscript_variants: bool = False
    aten_family: str | None = None  # ``aten::view`` when every overload stands for an overload of that aten op

    @property
    def call_count(self) -> int:
        return sum(o.call_count for o in self.overloads)

    @property
    def label(self) -> str:
        if self.aten_family is not None:
            return self.aten_family
        if self.kind == "aten_call":
            return f"{self.domain}::{self.name}" if self.domain != "python" else self.name
        return f"{self.domain}.{self.name}" if self.domain else self.name


@dataclass(slots=True)
class ModelFacts:
    """What a model says about itself: IR version, opsets, producer, graph, counts and sizes."""

    ir_version: int
    opsets: dict[str, int]
    producer_name: str
    producer_version: str
    domain: str
    model_version: int
    graph_name: str
    doc_string: str
    metadata: dict[str, str]
    main_nodes: int
    total_nodes: int
    function_count: int
    initializer_count: int
    graph_inputs: list[str]  # including initializers that old exporters list as inputs; see user_inputs()
    outputs: list[str]
    file_size: int
    format: str


def parameter_stats(g: onnx.GraphProto) -> ParameterStats:
    return _initializer_facts(g)[0]


def _initializer_facts(g: onnx.GraphProto) -> tuple[ParameterStats, list[str]]:
    """Parameter count and bytes, and the external-data locations the initializers name (sorted, distinct), in one
    pass: a report asks for both, and each pass over the 11k initializers of a 100k-node export cost 0.015-0.02 s.
    Each tensor's dims are taken as a list made in C (``min`` and ``prod`` then iterate a list, not the repeated
    field) and its external-data entries without a generator: 0.034 -> 0.0255 s for the 10,956 initializers (10,940
    external) of the Llama replica at 100k nodes (CPU, best of 11)."""
    from inspector.core.model.parameters import ParameterStats  # (made where asked for: a check never asks)

    params = nbytes = external = 0
    external_code = onnx.TensorProto.EXTERNAL
    bits = TENSOR_BITS
    locations: set[str] = set()
    for t in g.initializer:
        numel = element_count(t.dims[:])
        size = (numel * bits.get(t.data_type, 0) + 7) // 8
        params += numel
        nbytes += size
        if t.data_location == external_code:
            external += size
            for e in t.external_data:  # (every entry: a location named twice protects both files)
                if e.key == "location":
                    locations.add(e.value)
    for sp in g.sparse_initializer:
        numel, size = tensor_size(sp.values)
        params += numel
        nbytes += size
    return ParameterStats(params, nbytes, external), sorted(locations)


@dataclass(slots=True)
class ModelIndex:
    """One model indexed: facts, functions, provenance, families, op histogram and findings."""

    model: LoadedModel
    facts: ModelFacts
    functions: FunctionIndex
    provenance: ProvenanceIndex
    families: list[Family]
    op_histogram: Counter[tuple[str, str]]
    findings: list[Finding]
    # made like another model's index (``scan_like``): that index, and the main-graph nodes that differ from it
    followed: ModelIndex | None = field(default=None, repr=False)
    unequal: list[int] | None = field(default=None, repr=False)
    _parameters: ParameterStats | None = field(default=None, repr=False)
    _locations: list[str] | None = field(default=None, repr=False)  # (external data, read with the parameters)
    _maps: GraphMaps | None = field(default=None, repr=False)
    _declared: list[str] | None = field(default=None, repr=False)
    _read: MainReads | None = field(default=None, repr=False)  # (the scan's, until the maps take them over)

    @property
    def proto(self) -> onnx.ModelProto:
        return self.model.proto

    @property
    def path(self) -> Path:
        return self.model.path

    @property
    def flat_main(self) -> bool:
        """Whether no node of the main graph can hold a subgraph or call a function (all are standard-domain ops
        other than If/Loop/Scan/SequenceMap), by the op histogram. A pass over such a graph may take each node's
        inputs as all it reads and its position as its path, instead of walking every node's attributes or keeping
        a path per node: a cost a 100k-node graph pays per node (search's name tables, the diff's cut)."""
        return not any(domain not in STANDARD_DOMAINS or op in SUBGRAPH_OPS for domain, op in self.op_histogram)

    def parameters(self) -> ParameterStats:
        """Parameter count and bytes from tensor metadata (no external data is read); computed once, on demand."""
        if self._parameters is None:
            self._parameters, self._locations = _initializer_facts(self.proto.graph)
        return self._parameters

    def protected_files(self) -> list[Path]:
        """The files of this model that no output may replace: the model, its review sidecar (with lock and
        backup) and its external-data files (``paths.model_files``), read with the parameters."""
        if self._locations is None:
            self._parameters, self._locations = _initializer_facts(self.proto.graph)
        return model_files(self.path, self._locations)

    def graph_maps(self, progress: Progress | None = None, declarations: bool = False) -> GraphMaps:
        """The main graph's data flow (each node's inputs and outputs, producers, read counts, initializers), read
        from protobuf once, on first use, and shared by all that need it: specialisation, scenes, fold, diff.
        A 100k-node graph takes ~0.4 s to read; each of those used to read it again. ``progress``: for the first
        use, as for ``GraphMaps``; ``declarations``: the first use will ask for ``declared_names`` too."""
        if self._maps is None:
            self._maps = GraphMaps(self.proto.graph, flat=self.flat_main, progress=progress, declarations=declarations,
                                   read=self._read)
            self._read = None
        return self._maps

    def node_io(self) -> tuple[list[list[str]], list[list[str]]] | None:
        """Each main-graph node's inputs and outputs as the scan (``open_index(maps=True)``) or the graph maps read
        them, for a pass that would read them again (the diff's producers and readers); None where neither did."""
        if self._maps is not None:
            return self._maps.inputs, self._maps.outputs
        if self._read is not None:
            return self._read.inputs, self._read.outputs
        return None

    def declared_names(self, progress: Progress | None = None) -> list[str]:
        """The names the main graph declares (its inputs, value infos and outputs, in that order), read once and
        shared by what looks types or shapes up by name (the specialiser's shapes, the scenes' value types): from the
        graph maps when they kept them, else by a pass of their own (``graph.declared_names``, with ``progress``)."""
        if self._declared is None:
            maps = self._maps
            kept = maps.declared if maps is not None else None
            self._declared = kept if kept is not None else declared_names(self.proto.graph, progress)
        return self._declared

    def user_inputs(self) -> list[str]:
        """Graph inputs that are not initializers (reads every initializer's name, so not done at index time)."""
        g = self.proto.graph
        if not g.input:
            return []
        maps = self._maps  # (their initializers by name, when they were read: one pass over them less)
        initializers = maps.initializers if maps is not None else {t.name for t in g.initializer}
        return [n for n in self.facts.graph_inputs if n not in initializers]

    def family(self, kind: FamilyKind, domain: str, name: str) -> Family | None:
        for fam in self.families:
            if (fam.kind, fam.domain, fam.name) == (kind, domain, name):
                return fam
        return None


def open_index(path: str | os.PathLike[str], modules: bool = True, like: ModelIndex | None = None,
               maps: bool = False) -> ModelIndex:
    """Load and index a model file (the one call most callers need). ``modules=False`` for a caller that never
    builds the module tree: the scan then skips reading each call's name_scopes (1 us per call, 8% of a 100k-node
    scan); the tree, if asked for after all, reads them from the nodes. ``like``: an index of a model this one
    probably mostly equals (the other side of a diff), whose scan this one takes over where nodes are equal
    (``inspector.core.model.scan_like``). ``maps``: the caller will make the graph maps and group keys at once
    (specialisation, fold), so the scan reads the main graph's nodes for them while it is at each node
    (``scan.MainReads``): at 100k nodes 0.07-0.1 s less in all, with no garbage collected meanwhile, as a command
    runs; with CPython's collector on, the lists made earlier cost its collections more than that (``open_index``,
    ``graph_maps``, then ``gc.collect()``: 1.12-1.15 s against 1.05-1.08 without), so it is not the default."""
    return build_index(load_model(path), modules, like, maps)


_NODE_PATHS = attrgetter("node_paths")

# Below this size every model is checked for invalid-UTF-8 strings up front (a few ms); larger ones only when
# indexing trips over one, so that ordinary large exports do not pay for a pass over every string.
EAGER_TEXT_CHECK_NODES = 20_000


def build_index(model: LoadedModel, modules: bool = True, like: ModelIndex | None = None,
                maps: bool = False, node_io: bool = False) -> ModelIndex:
    """``open_index`` of a loaded model; ``node_io``: the caller will read each main-graph node's inputs and
    outputs but not make the group keys (the diff's pair of cuts): the scan reads those alone (``ModelIndex.node_io``;
    ``diff`` at 100k nodes 1.42 -> 1.34 s, median of 6 alternating pairs)."""
    repaired = 0
    if len(model.proto.graph.node) + sum(len(f.node) for f in model.proto.functions) <= EAGER_TEXT_CHECK_NODES:
        repaired = sanitize_text(model.proto)
    try:
        index = _build_index(model, modules, like, maps, node_io)
    except (TypeError, AttributeError, UnicodeError):
        repaired = sanitize_text(model.proto)
        if not repaired:
            raise
        index = _build_index(model, modules, like, maps, node_io)
    if repaired:
        from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

        index.findings.append(Finding("invalid_text", "warning", f"{repaired} strings in the model are not valid "
                                      "UTF-8; they are shown with replacement characters"))
    return index


def _build_index(model: LoadedModel, modules: bool, like: ModelIndex | None = None, reads: bool = False,
                 node_io: bool = False) -> ModelIndex:
    proto = model.proto
    followed = None
    if like is not None:  # (scan_like and the template matcher are imported where they are used: a command on a
        # model with its metadata needs neither, and they made 9 of the 49 dataclasses of a summary's process)
        from inspector.core.model.scan_like import scan_like

        followed = scan_like(proto, _earlier(like), modules)
    scanned = followed[0] if followed is not None else scan_model(proto, modules, recognition_applies(proto),
                                                                  reads or node_io, fields=reads)
    fidx = build_function_index(proto, scanned)
    prov = build_provenance(proto, scanned)
    histogram: Counter[tuple[str, str]] = Counter(scanned.histograms.get(MAIN, {}))
    maps = _recognise(proto, prov, histogram, scanned)
    if followed is not None and like is not None and like.provenance.recognised:
        # calls that ``like``'s templates recognised, taken over where the nodes are equal, are this side's too
        prov.recognised = sum(1 for c in prov.calls if c.recognised)
    total = sum(scanned.node_counts.values())
    main_nodes = len(proto.graph.node)
    if fidx.functions:
        fidx.note_call_targets(call_targets(fidx, prov.calls))
    functions = _function_families(fidx)
    families = functions + _aten_families(prov, _folded_calls(fidx, functions))
    findings = list(fidx.findings)
    if prov.damaged:
        from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

        findings.append(Finding("damaged_metadata", "warning",
                                f"{plural(prov.damaged, 'node')} {'carries' if prov.damaged == 1 else 'carry'} "
                                "fx_node metadata that could not be read as FX text"))
    facts = _facts(model, main_nodes, total, len(fidx.functions))
    index = ModelIndex(model, facts, fidx, prov, families, histogram, findings, _maps=maps,
                       _read=scanned.main if maps is None else None)
    if followed is not None:
        index.followed, index.unequal = like, followed[1]
    return index


def _recognise(proto: onnx.ModelProto, prov: ProvenanceIndex, histogram: Counter[tuple[str, str]],
               scanned: ScanResult) -> GraphMaps | None:
    """Calls recognised by body template among main-graph nodes without fx metadata, added to ``prov.calls``; the
    graph maps this reads are the index's (built here once instead of on first use), from the nodes as the scan read
    them (``ScanResult.main``, ``ScanResult.bare``)."""
    flat = not any(domain not in STANDARD_DOMAINS or op in SUBGRAPH_OPS for domain, op in histogram)
    if flat and not proto.functions:  # every call is of main-graph nodes, one path step each: counted in C
        if prov.nodes_with_metadata - prov.nodes_without_fx >= len(proto.graph.node):
            return None  # (every node has fx metadata, so is a call's, as the scan counted: 4.5 ms at 100k nodes)
        covered = sum(map(len, map(_NODE_PATHS, prov.calls)))  # (0.012 s less at 100k nodes than the loop below)
    else:
        covered = sum(1 for c in prov.calls if c.scope == MAIN for p in c.node_paths if len(p) == 1)
    if covered >= len(proto.graph.node) or not recognition_applies(proto):
        return None
    maps = GraphMaps(proto.graph, flat=flat, read=scanned.main)
    from inspector.core.model.recognise import recognised_calls

    found = recognised_calls(proto, prov.calls, maps, scanned.bare)
    prov.calls.extend(found)
    prov.recognised = len(found)
    return maps


def recognition_applies(proto: onnx.ModelProto) -> bool:
    """Whether body templates are looked for in ``proto`` (``scan.applies``); the scan then also reads each
    node without fx metadata as the matcher keys it (``ScanResult.bare``), which a model the matcher never looks at
    does not pay for (0.06 s at 100k nodes)."""
    return applies(proto)


def _earlier(index: ModelIndex) -> Earlier:
    from inspector.core.model.scan_like import Earlier

    calls = index.provenance.calls
    prov = index.provenance
    return Earlier(index.proto.graph.node, calls, index.op_histogram, prov.nodes_with_metadata, prov.nodes_without_fx,
                   all(c.scopes_text is not None for c in islice(calls, 1)), prov.damaged_texts,
                   bool(index.proto.functions))


def _function_families(fidx: FunctionIndex) -> list[Family]:
    """Function families; one whose functions all stand for overloads of one aten op (a folded model) *is* that
    aten family: labelled ``aten::view``, each overload with its aten target."""
    out: list[Family] = []
    by_aten: dict[str, Family] = {}
    for (domain, name), fam in sorted(fidx.families.items()):
        family = Family("function", domain, name, torchscript_variants=fam.torchscript_variants)
        for key in fam.members:
            family.overloads.append(Overload("function", domain, name, overload_label(fidx, fam, key), key,
                                             fidx.call_count(key), aten_target=fidx.aten_target(key)))
        ops = {split_target(o.aten_target)[:2] if o.aten_target else None for o in family.overloads}
        if len(ops) == 1 and None not in ops:
            ns, op = next(iter(o for o in ops if o is not None))
            family.aten_family = f"{ns}::{op}"
            first = by_aten.setdefault(family.aten_family, family)
            if first is not family:  # another producer's name for the same aten op: one family, listed once
                first.overloads.extend(family.overloads)
                continue
        out.append(family)
    return out


def _folded_calls(fidx: FunctionIndex, families: list[Family]) -> set[tuple[object, ...]]:
    """``(scope, path)`` of the call nodes of functions that are aten families (in the main graph or a function
    body): their aten calls are shown there, not a second time as flat aten calls."""
    keys = {o.function for f in families if f.aten_family is not None for o in f.overloads if o.function}
    return {(site.caller, tuple(site.path)) for key in keys for site in fidx.calls.get(key, ())}


def _aten_families(prov: ProvenanceIndex, folded: set[tuple[object, ...]] | None = None) -> list[Family]:
    by_target: dict[str, list[AtenCall]] = {}
    for call in prov.calls:
        if folded and len(call.node_paths) == 1 and (call.scope, tuple(call.node_paths[0])) in folded:
            continue  # a call of a function that is this aten family (a folded model)
        calls = by_target.get(call.target)
        if calls is None:
            by_target[call.target] = [call]
        else:
            calls.append(call)
    if not folded:
        prov.keep_targets(by_target)  # (every call's: ``ProvenanceIndex.by_target`` hands them out again)
    by_family: dict[tuple[str, str], dict[str, Overload]] = {}
    for target, calls in by_target.items():
        ns, name, overload = split_target(target)
        ovs = by_family.setdefault((ns, name), {})
        ov = ovs.get(overload)
        if ov is None:
            ov = ovs[overload] = Overload("aten_call", ns, name, overload)
        ov.aten_calls.extend(calls)
        ov.call_count += len(calls)
    out = []
    for (ns, name), ovs in sorted(by_family.items()):
        out.append(Family("aten_call", ns, name, [ovs[k] for k in sorted(ovs)]))
    return out


def _facts(model: LoadedModel, main_nodes: int, total_nodes: int, function_count: int) -> ModelFacts:
    proto = model.proto
    g = proto.graph
    return ModelFacts(
        ir_version=proto.ir_version,
        opsets={o.domain: o.version for o in proto.opset_import},
        producer_name=proto.producer_name,
        producer_version=proto.producer_version,
        domain=proto.domain,
        model_version=proto.model_version,
        graph_name=g.name,
        doc_string=proto.doc_string,
        metadata={p.key: p.value for p in proto.metadata_props},
        main_nodes=main_nodes,
        total_nodes=total_nodes,
        function_count=function_count,
        initializer_count=len(g.initializer) + len(g.sparse_initializer),
        graph_inputs=[v.name for v in g.input],
        outputs=[v.name for v in g.output],
        file_size=model.file_size,
        format=model.format,
    )
