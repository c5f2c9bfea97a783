"""A cheap key per aten call group such that equal keys mean equal body fingerprints.

A 100k-node export has ~80k aten calls but a few hundred distinct bodies. Building each call's ``Body``
(``group_body``, which parses the FX arguments) and hashing it (``fingerprint``) costs ~0.1 ms per call; this key
reads the same nodes directly and costs a few microseconds, so the specialiser builds and fingerprints one body
per distinct key and binds every other call to it.

The key follows ``body.group_body`` and ``fingerprint.fingerprint`` step by step: the same constants (by
initializer name, which fixes their value), the same numbering of values (inputs by first use, constants,
node outputs), the same node fields (attributes as serialized bytes: stricter than their values, so a
difference there only costs a second body). Groups with subgraphs, or outside the main graph, get no key. The quick
paths for the common groups (one node, or several, whose values are distinct and named) must give the key of these
steps; the wirings of groups of several nodes they keep are bounded in number and size (``_wiring``), so that a hostile
file's many large groups take the general steps instead of growing a cache.

``group_shape`` also returns what the key is made from for this one call (its nodes, what it reads, its constants
and outputs, by name), which is all ``fold`` needs per call once the body of the key is built.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from functools import lru_cache
from itertools import chain, compress, count, repeat
from operator import attrgetter, gt, itemgetter
from typing import Any, NamedTuple

from onnx import AttributeProto

from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import FX_REF
from inspector.core.model.graph import GraphMaps
from inspector.core.model.keys import MAIN
from inspector.core.model.scan import NodeFields
from inspector.core.model.walk import NodePath

_serialized = AttributeProto.SerializeToString
_FIELDS = attrgetter("domain", "op_type", "overload", "attribute")  # a node's fields a key reads, in one C call
_FIRST = itemgetter(0)
_INTS = repeat(int)  # (stateless: shared by every map over it)
_ZEROS = repeat(0)
_ONE = {1}
_WIRED = 512  # names of the largest group whose wiring is kept (``_wiring``); larger ones take the general steps


class GroupShape(NamedTuple):
    """One call's group as ``group_body`` would build it, by name: equal keys mean equal body fingerprints. A named
    tuple, not a frozen dataclass, as ``FunctionKey`` is: fold makes one per call, and a frozen dataclass's
    ``__init__`` (``object.__setattr__`` per field) cost 1.5 us against 0.35 (CPU, 80k per 100k-node fold)."""

    key: Hashable
    indices: list[int]  # main-graph node indices, ascending
    reads: list[str]  # what the group reads, first use first, constants excluded (``Body.canonical_inputs``)
    constants: list[str]  # small initializers baked into the body (``Body.constants``, in order)
    outputs: list[str]  # what is read outside the group (``Body.outputs``)


def group_key(call: AtenCall, maps: GraphMaps) -> Hashable | None:
    """The key of ``call``'s group body (None when it has none that this shortcut covers)."""
    paths = call.node_paths
    if len(paths) == 1:  # most aten calls: the key alone, without the names fold needs
        p = paths[0]
        if len(p) == 1 and type(p[0]) is int and len(maps.inputs[p[0]]) <= 8:
            return None if p[0] in maps.captured else _one_node(call, p[0], maps)[0]
    shape = group_shape(call, maps)
    return shape.key if shape is not None else None


def group_keys(calls: Sequence[AtenCall], maps: GraphMaps) -> list[Hashable | None]:
    """``group_key`` of each of ``calls`` (None for a call outside the main graph, whose nodes ``maps`` do not hold):
    one loop over the calls of a family (``_batch``)."""
    return _batch(calls, maps, False)


def group_shapes(calls: Sequence[AtenCall], maps: GraphMaps) -> list[GroupShape | None]:
    """``group_shape`` of each of ``calls`` (None for a call outside the main graph), in one loop (``_batch``): what
    fold plans each call from."""
    return _batch(calls, maps, True)


def _batch(calls: Sequence[AtenCall], maps: GraphMaps, shapes: bool) -> list[Any]:
    """Keys (or, with ``shapes``, group shapes) of ``calls``. Two quick paths cover the common groups: one node whose
    inputs and outputs are distinct named values (``_one_node``'s quick path, inline: 73k of the Llama replica's 80k
    calls at 100k nodes, 30k of them reading small initializers: a Reshape's shape, a Slice's starts), and several
    such nodes (``_several``); any other call takes ``group_key`` (``group_shape``). One set made per call tells
    whether a node's names are distinct and named (``{"", *ins, *outs}`` has one element more than they do), and the
    node's fields are read in one ``attrgetter``. The keys of every call at 100k nodes, in-process (CPU, best of 7,
    interleaved with the steps before): 0.309 -> 0.286 s, their shapes 0.355 -> 0.329 s; of the keys, 0.095 s is
    reading the nodes' fields and attributes from protobuf alone, and ~0.1 s the cache misses of a model larger than
    the CPU's caches (3.7 us a call over the whole model, 2.5 over 256 calls keyed again and again)."""
    out: list[Any] = []
    add = out.append
    inputs, outputs, captured, bakeable, unread = maps.inputs, maps.outputs, maps.captured, maps.bakeable, maps.unread
    mentions, graph_nodes, main, fields, aten_call = maps.mentions, maps.graph.node, MAIN, _FIELDS, AtenCall
    in_upto, v_upto, v_refs, serialized, node_fields = _IN_UPTO, _V_UPTO, _V, _serialized, maps.fields
    general = group_shape if shapes else group_key
    said: dict[tuple[str, ...], tuple[str, ...]] = {}  # ``mentions`` of the constants of this batch's calls
    for call in calls:
        if call.scope is not main and call.scope != main:
            add(None)
            continue
        paths = call.node_paths
        if len(paths) != 1:
            shape = _several(call, paths, maps) if paths else None
            add(general(call, maps) if shape is None else shape if shapes else shape.key)
            continue
        p = paths[0]
        if len(p) == 1 and type(i := p[0]) is int:
            ins, outs = inputs[i], outputs[i]
            n, m = len(ins), len(outs)
            if n < _PRE and m < _PRE and len(named := {"", *ins, *outs}) == n + m + 1 and i not in captured:
                # inputs in0.. (constants c0..) in order, outputs v0.. in order, each read outside unless unread
                made = v_upto[m]
                every = not unread or unread.isdisjoint(outs)
                read = made if every else tuple([v_refs[k] for k, x in enumerate(outs) if x not in unread])
                if named.isdisjoint(bakeable):
                    baked: tuple[str, ...] = ()
                    refs = in_upto[n]
                else:
                    bakes = tuple(map(bakeable.__contains__, ins))  # (an output named as one is not read)
                    baked = tuple(compress(ins, bakes))
                    if baked:
                        named_by = said.get(baked)
                        if named_by is None:
                            named_by = said[baked] = mentions(baked)
                        if any(map(call.fx_text.__contains__, named_by)):
                            add(general(call, maps))  # the FX text may name one: the general steps decide
                            continue
                    refs = _refs(bakes) if baked else in_upto[n]
                # a scan's call holds its node (a slot); a recognised call holds none, and its ``first_node`` property
                # indexes the graph as this does, through a Python frame. With the attributes' bytes inline below, the
                # keys of the stripped 100k replica's 79,670 recognised calls 0.290-0.311 -> 0.280-0.300 s, now below
                # the same calls with metadata, 0.296-0.326 -> 0.292-0.326 (CPU, best of 5 in-process, 5 runs each,
                # alternating; ``group_keys`` a chunk of 256 calls at a time, as ``Specialiser.key_calls`` keys them)
                if node_fields is not None and (read_fields := node_fields[i])[3] is not None:
                    domain, op_type, overload, blob = read_fields  # (as the scan read them: not reached again)
                else:
                    node = call.first_node if type(call) is aten_call else None
                    domain, op_type, overload, attrs = fields(node if node is not None else graph_nodes[i])
                    # (``_attribute_bytes`` inline: a Python frame less per call with attributes)
                    blob = () if not attrs else (serialized(attrs[0]),) if len(attrs) == 1 else tuple(map(serialized,
                                                                                                         attrs[:]))
                key = (baked, ((domain, op_type, overload, refs, made, blob),), read)
                if shapes:
                    add(GroupShape(key, [i], [x for x in ins if x not in baked] if baked else list(ins),
                                   list(baked), list(outs) if every else [x for x in outs if x not in unread]))
                else:
                    add(key)
                continue
        add(general(call, maps))
    return out


def _several(call: AtenCall, paths: list[NodePath], maps: GraphMaps) -> GroupShape | None:
    """``group_shape`` of a group of several main-graph nodes whose values are named, none made twice and none read
    before the group makes it (as in a graph in topological order): the numbering then depends on the wiring alone,
    worked out once per distinct wiring (``_wiring``: the replica's 6,249 such calls at 100k nodes have 3), and each
    step per call is one C loop over the group's names (``map``, ``zip``, ``compress``). None for any other group,
    which takes the general steps. At 100k nodes (CPU, best of 5): 35 us a call of 11 nodes instead of 41 (cold; 21
    instead of 29 over calls keyed again), a call of 2 nodes as before (10.6 us, 6.9 keyed again: about 30 steps in
    C of 0.1-0.6 us each, and the two nodes' fields 1.1 us)."""
    if {*map(len, paths)} != _ONE:  # a node in a subgraph
        return None
    top = list(map(_FIRST, paths))
    captured = maps.captured
    if not all(map(isinstance, top, _INTS)) or (captured and not captured.keys().isdisjoint(top)):
        return None
    top.sort()
    ins_of = list(map(maps.inputs.__getitem__, top))
    outs_of = list(map(maps.outputs.__getitem__, top))
    made = list(chain.from_iterable(outs_of))
    names = list(chain.from_iterable(ins_of))
    names += made
    first: dict[str, int] = {}  # each name -> where it first occurs in ``names``: the wiring, whatever the names
    labels = tuple(map(first.setdefault, names, count()))
    if "" in first or len(names) > _WIRED:  # (a large group: its wiring is not kept)
        return None
    wiring = _wiring(labels, tuple(map(len, ins_of)), tuple(map(len, outs_of)))
    if wiring is None:
        return None
    inputs = list(map(names.__getitem__, wiring.external))
    constants: list[str] = []
    reads = wiring.reads
    bakeable = maps.bakeable
    if not bakeable.isdisjoint(inputs):
        outside = inputs
        inputs, constants = _baked(call, inputs, [x for x in inputs if x in bakeable], maps)
        if constants:
            reads = wiring.with_constants(tuple(map(set(constants).__contains__, outside)))
    # read outside the group: read more often in the graph than by the group's own nodes
    read_count, graph_outputs = maps.read_count, maps.graph_outputs
    if graph_outputs.isdisjoint(made):
        chosen = list(map(gt, map(read_count.get, made, _ZEROS), wiring.inside))
    else:
        chosen = [x in graph_outputs or read_count[x] > k for x, k in zip(made, wiring.inside)]
    domains, op_types, overloads, blobs = zip(*map(_node_fields, top, repeat(maps)))
    tokens = tuple(zip(domains, op_types, overloads, reads, wiring.made, blobs))
    return GroupShape((tuple(constants), tokens, tuple(compress(wiring.made_refs, chosen))), top, inputs, constants,
                      list(compress(made, chosen)))


def _node_fields(i: int, maps: GraphMaps) -> NodeFields:
    """Main-graph node ``i``'s fields as a key holds them: as the scan read them (``MainReads.fields``), or from the
    node where it did not (a Constant's attributes; maps made without the scan)."""
    if maps.fields is not None and (read := maps.fields[i])[3] is not None:
        return read
    domain, op_type, overload, attrs = _FIELDS(maps.graph.node[i])
    return domain, op_type, overload, _attribute_bytes(attrs) if attrs else ()


def _attribute_bytes(attrs: Sequence[AttributeProto]) -> tuple[bytes, ...]:
    """Each of a node's attributes serialized, the one of most nodes that have any without iterating the field (each
    wrapper an iteration makes cost more than its bytes)."""
    return (_serialized(attrs[0]),) if len(attrs) == 1 else tuple(map(_serialized, attrs[:]))


class _Wiring(NamedTuple):
    """What numbering a group takes from its wiring alone (``_wiring``): labels are where a name first occurs among the
    group's reads, then its outputs, node by node."""

    external: tuple[int, ...]  # the labels of what the group reads from outside, by first use
    inside: tuple[int, ...]  # how often the group's nodes read each value they make, in the order made
    made: tuple[tuple[str, ...], ...]  # each node's outputs: v0, v1, ... in the order made
    made_refs: tuple[str, ...]  # all of them
    reads: tuple[tuple[str, ...], ...]  # each node's reads, none of the external values a constant
    labels: tuple[int, ...]
    in_lens: tuple[int, ...]

    def with_constants(self, baked: tuple[bool, ...]) -> tuple[tuple[str, ...], ...]:
        """Each node's reads when the external values ``baked`` marks are constants (c0, c1, ...)."""
        return _wired_reads(self.labels, self.in_lens, self.external, baked)


@lru_cache(maxsize=256)
def _wiring(labels: tuple[int, ...], in_lens: tuple[int, ...], out_lens: tuple[int, ...]) -> _Wiring | None:
    """The numbering of a group of nodes reading ``in_lens`` and making ``out_lens`` values, its names labelled
    ``labels`` (``_several``), as ``_group_shape`` numbers them; None when a value is made twice or read before the
    group makes it (the general steps number those x0, x1, ...)."""
    reads = sum(in_lens)
    made = labels[reads:]
    if len(set(made)) != len(made) or len(made) > _PRE:
        return None
    maker: dict[int, int] = {}
    k = 0
    for node, m in enumerate(out_lens):
        maker.update(dict.fromkeys(made[k:k + m], node))
        k += m
    external: dict[int, None] = {}
    k = 0
    for node, n in enumerate(in_lens):
        for label in labels[k:k + n]:
            by = maker.get(label)
            if by is None:
                external[label] = None
            elif by >= node:
                return None
        k += n
    made_refs = _V[:len(made)]
    per_node: list[tuple[str, ...]] = []
    k = 0
    for m in out_lens:
        per_node.append(made_refs[k:k + m])
        k += m
    read_labels = labels[:reads]
    outside = tuple(external)
    return _Wiring(outside, tuple(map(read_labels.count, made)), tuple(per_node), made_refs,
                   _wired_reads(labels, in_lens, outside, (False,) * len(outside)), labels, in_lens)


@lru_cache(maxsize=256)
def _wired_reads(labels: tuple[int, ...], in_lens: tuple[int, ...], external: tuple[int, ...],
                 baked: tuple[bool, ...]) -> tuple[tuple[str, ...], ...]:
    """Each node's reads: the external values in0, in1, ... and the constants (``baked``) c0, c1, ..., each by first
    use (``_numbered``), the values the group makes v0, v1, ... in the order made."""
    refs: dict[int, str] = {}
    k = c = 0
    for label, constant in zip(external, baked):
        if constant:
            refs[label] = f"c{c}"
            c += 1
        else:
            refs[label] = _ref(k, _IN, "in")
            k += 1
    reads = sum(in_lens)
    refs.update(zip(labels[reads:], _V))
    out: list[tuple[str, ...]] = []
    k = 0
    for n in in_lens:
        out.append(tuple(map(refs.__getitem__, labels[k:k + n])))
        k += n
    return tuple(out)


def group_shape(call: AtenCall, maps: GraphMaps) -> GroupShape | None:
    """``call``'s group key with the names it was made from (None when the shortcut does not cover the group)."""
    paths = call.node_paths
    captured, all_inputs = maps.captured, maps.inputs
    if len(paths) == 1:  # most aten calls
        p = paths[0]
        if len(p) != 1 or type(p[0]) is not int:
            return None
        i = p[0]
        if len(all_inputs[i]) <= 8:  # list membership below stays cheap
            return None if i in captured else GroupShape(*_one_node(call, i, maps))
    top: list[int] = []
    for p in paths:
        if len(p) != 1 or not isinstance(p[0], int):
            return None
        top.append(p[0])
    top.sort()
    if any(i in captured for i in top):
        return None
    return _group_shape(call, top, maps)


def _group_shape(call: AtenCall, top: list[int], maps: GraphMaps) -> GroupShape:
    """``group_shape`` of the main-graph nodes ``top`` (ascending, none with a subgraph), step by step."""
    all_inputs, all_outputs = maps.inputs, maps.outputs
    # inputs and outputs as GraphMaps read them: reading a repeated field builds Python strings every time
    io = [(all_inputs[i], all_outputs[i]) for i in top]
    produced: set[str] = set()
    for _ins, outs in io:
        produced.update(outs)
    produced.discard("")
    # what group_body calls inputs (first use) and constants, in its order
    inputs: list[str] = []
    constants: list[str] = []
    candidates: list[str] = []  # small initializers: constants unless they are tensor arguments of the call
    seen: set[str] = set()
    bakeable = maps.bakeable
    for ins, _outs in io:
        for name in ins:
            if not name or name in produced or name in seen:
                continue
            seen.add(name)
            if name in bakeable:
                candidates.append(name)
            inputs.append(name)
    if candidates:
        inputs, constants = _baked(call, inputs, candidates, maps)
    names = _numbered(inputs, constants)
    # each node's reads are numbered before its outputs, as fingerprint does: what is neither an input, a constant
    # nor made by an earlier node of the group is x0, x1, ... by first use; outputs are v0, v1, ... as made. Inline,
    # not a closure per read: the 6,249 calls of several nodes of the Llama replica at 100k (24 -> 19 us a call)
    counter = 0
    tokens: list[Hashable] = []
    get = names.get
    for i, (ins, outs) in zip(top, io):
        read: list[str] = []
        for x in ins:
            if not x:
                read.append("_")
                continue
            r = get(x)
            if r is None:
                r = names[x] = _ref(len(names), _X, "x")
            read.append(r)
        made: list[str] = []
        for x in outs:
            if x:
                names[x] = r = _V[counter] if counter < _PRE else f"v{counter}"
                counter += 1
                made.append(r)
            else:
                made.append("_")
        domain, op_type, overload, blob = _node_fields(i, maps)
        tokens.append((domain, op_type, overload, tuple(read), tuple(made), blob))
    # read outside the group: read more often in the graph than by the group's own nodes
    read_count, graph_outputs = maps.read_count, maps.graph_outputs
    if len(io) == 1:
        only = io[0][0]
        outputs = [x for x in io[0][1] if x and (x in graph_outputs or read_count[x] > only.count(x))]
    else:
        inside = Counter(chain.from_iterable(ins for ins, _o in io))
        outputs = [x for _ins, outs in io for x in outs
                   if x and (x in graph_outputs or read_count[x] > inside[x])]
    key = tuple(constants), tuple(tokens), tuple([names[x] for x in outputs])  # each was numbered as made
    return GroupShape(key, top, inputs, constants, outputs)


def _baked(call: AtenCall, inputs: list[str], candidates: list[str],
           maps: GraphMaps) -> tuple[list[str], list[str]]:
    """(inputs, constants): the small-initializer candidates are constants unless they are tensor arguments."""
    constants = candidates
    fx = call.fx_text
    # the FX text is parsed only if a candidate is one of its references
    if _mentioned(fx, candidates, maps):
        refs = {maps.onnx_name.get(r, r) for r in FX_REF.findall(fx)}
        if any(c in refs for c in candidates):
            tensor_args = set(maps.tensor_args(call))
            constants = [c for c in candidates if c not in tensor_args]
    if constants:
        baked = set(constants)
        inputs = [x for x in inputs if x not in baked]
    return inputs, constants


def _mentioned(fx: str, candidates: list[str], maps: GraphMaps) -> bool:
    """Whether a candidate may be a tensor argument of the call of FX text ``fx``: tensor arguments are among the
    %references of the text, so a candidate can be one only if its name, or an FX name standing for it, is in the
    text at all (a substring test: the regex cost 8 us a call at 100k; ``GraphMaps.mentions``)."""
    return any(map(fx.__contains__, maps.mentions(tuple(candidates))))


@lru_cache(maxsize=1024)
def _refs(baked: tuple[bool, ...]) -> tuple[str, ...]:
    """The references of a node's distinct inputs, ``baked`` marking the constants: in0, in1, ... for the others
    and c0, c1, ... for the constants, each in order (``_numbered``)."""
    k = c = 0
    out: list[str] = []
    for is_constant in baked:
        if is_constant:
            out.append(f"c{c}")
            c += 1
        else:
            out.append(_IN[k])
            k += 1
    return tuple(out)


def _numbered(inputs: list[str], constants: list[str]) -> dict[str, str]:
    """fingerprint's numbering: inputs, then constants (then outputs as they are made, others by first use)."""
    names = dict(zip(inputs, _IN)) if len(inputs) <= _PRE else {name: f"in{k}" for k, name in enumerate(inputs)}
    for k, name in enumerate(constants):
        names[name] = f"c{k}"
    return names


_PRE = 64  # references numbered up to here are shared strings, not made per call
_IN = tuple(f"in{k}" for k in range(_PRE))
_X = tuple(f"x{k}" for k in range(_PRE))
_V = tuple(f"v{k}" for k in range(_PRE))
_IN_UPTO = tuple(_IN[:k] for k in range(_PRE))  # (in0, ..., in<k-1>): the reads of k distinct inputs
_V_UPTO = tuple(_V[:k] for k in range(_PRE))


def _ref(k: int, names: tuple[str, ...], prefix: str) -> str:
    return names[k] if k < _PRE else f"{prefix}{k}"


def _one_node(call: AtenCall, i: int, maps: GraphMaps) -> tuple[Hashable, list[int], list[str], list[str], list[str]]:
    """``group_shape``'s fields for a group of one node (most aten calls): the same steps as for several nodes,
    inlined, since this runs once per call of an 80k-call export."""
    ins, outs = maps.inputs[i], maps.outputs[i]
    domain, op_type, overload, blob = _node_fields(i, maps)
    read_count, graph_outputs = maps.read_count, maps.graph_outputs
    distinct = set(ins)
    n, m = len(ins), len(outs)
    small = maps.small_constants
    if (n == len(distinct) and n < _PRE and m < _PRE and "" not in distinct and distinct.isdisjoint(outs)
            and "" not in outs and m == len(set(outs))):
        # most calls: distinct named inputs, none made by the node itself, distinct named outputs. The steps below
        # then number the outputs v0, v1, ... in order, and (no output is among the inputs) read outside = read at all
        made_refs = _V_UPTO[m]
        unread = maps.unread
        if unread.isdisjoint(outs):
            outputs, out_refs = list(outs), made_refs
        else:
            outputs = [x for x in outs if x not in unread]
            out_refs = tuple([_V[k] for k, x in enumerate(outs) if x not in unread])
        if small.isdisjoint(distinct):  # none baked in: the inputs are in0, in1, ... in order
            token = (domain, op_type, overload, _IN_UPTO[n], made_refs, blob)
            return ((), (token,), out_refs), [i], list(ins), [], outputs
        # some are small initializers (a Reshape's shape, a Slice's starts), baked in unless the FX text names one
        # (then the general steps below decide): the inputs are then numbered in0, in1, ... and the constants c0,
        # c1, ... in order, which depends on where the constants sit alone (_refs, made once per such pattern)
        bakeable = maps.bakeable
        baked = [x for x in ins if x in bakeable]
        if not _mentioned(call.fx_text, baked, maps):
            token = (domain, op_type, overload, _refs(tuple([x in baked for x in ins])), made_refs, blob)
            return ((tuple(baked), (token,), out_refs), [i], [x for x in ins if x not in baked] if baked else list(ins),
                    baked, outputs)
    inputs: list[str] = []
    candidates: list[str] | None = None
    for name in ins:
        if not name or name in outs or name in inputs:
            continue
        if name in small and name not in maps.parameters:
            if candidates is None:
                candidates = []
            candidates.append(name)
        inputs.append(name)
    constants: list[str] = []
    if candidates:
        inputs, constants = _baked(call, inputs, candidates, maps)
    names = _numbered(inputs, constants)
    read: list[str] = []
    for x in ins:
        if not x:
            read.append("_")
            continue
        r = names.get(x)
        if r is None:
            r = names[x] = _ref(len(names), _X, "x")
        read.append(r)
    # the node's outputs are numbered v0, v1, ... after its reads (as fingerprint does)
    made: list[str] = []
    k = 0
    for x in outs:
        if x:
            names[x] = ref = _V[k] if k < _PRE else f"v{k}"
            k += 1
            made.append(ref)
        else:
            made.append("_")
    token = (domain, op_type, overload, tuple(read), tuple(made), blob)
    outputs = [x for x in outs if x and (x in graph_outputs or read_count[x] > ins.count(x))]
    out_refs = tuple([names[x] for x in outputs])  # every output was numbered above
    return (tuple(constants), (token,), out_refs), [i], inputs, constants, outputs
