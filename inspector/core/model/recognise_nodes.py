"""Each node of one graph as the template matcher (``recognise.Matcher``) reads it, numbered in one pass over the
nodes: its key (domain, op type, operands with trailing absent ones cut, outputs, attribute names) and its
*signature*: the key with the attributes' bytes, what makes each operand (the producing node's key; a constant, by its
canonical value; nothing; an outside value), which operand repeats another, and which outputs nobody reads.

Nodes of one signature are alike to everything the matcher decides from a node and what makes its operands (which
templates could end there, a one-node match), so that is decided once per signature, not once per node: the 100k-node
Llama replica has 46 signatures. Numbering them in one pass, each value coded once (by the node that makes it, or by
its constant value) and each read a dict lookup, replaced a context tuple and a signature tuple built per node, each
operand looked at twice (the 100k replica: 0.42 s -> 0.22 s of CPU, best of 5).
The threat is a hostile model: values are only hashed and compared, never evaluated; a value that several nodes make
is coded by the last one, as ``GraphMaps.producer`` says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import onnx

from inspector.core.aten.templates import SMALL_TENSOR
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise_constants import CONSTANT, GraphConstants
from inspector.core.model.recognise_templates import Key, attribute_defaults
from inspector.core.model.scan import attribute_bytes

ABSENT, OUTSIDE = -1, -2  # the codes of an absent operand and of a value that no node makes and no constant holds
_FIRST_CONSTANT = -3  # constants are coded -3, -4, ...: one code per (maker's key, canonical value)


def node_keys(graph: onnx.GraphProto, maps: GraphMaps, opset: int | None = None,
              bare: Sequence[object] = ()) -> tuple[list[Key], list[int], list[int]]:
    """Each node's key (equal keys are one object), its key's number and its key-with-attributes' number, read from
    protobuf once (a model has few distinct ones: the 100k Llama replica 20 keys, 22 with their attributes). A key
    names the attributes left out at their default at ``opset`` too (``attribute_defaults``), worked out once per
    distinct key. ``bare``: what the scan read of each node (``ScanResult.bare``), if it holds every node: then a node
    is read again only where its key is new (the 100k replica: 0.122 -> 0.022 s of CPU, best of 5; the scan took
    0.058 s more)."""
    numbers: dict[tuple[object, ...], int] = {}
    key_of: list[Key] = []  # by key-with-attributes number
    kind_of: list[int] = []
    kinds: dict[Key, int] = {}
    interned: dict[Key, Key] = {}
    full: list[int] = []
    add = full.append
    nodes = graph.node
    if len(bare) != len(nodes):
        bare = _read(nodes)
    for read, ins, outs in zip(bare, maps.inputs, maps.outputs):
        n = len(ins)
        while n and not ins[n - 1]:
            n -= 1
        f = (read, n, len(outs))
        number = numbers.get(f)
        if number is None:
            number = numbers[f] = len(key_of)
            node = nodes[len(full)]  # (this node's index)
            attrs, op = node.attribute, node.op_type
            names = () if not attrs else (attrs[0].name,) if len(attrs) == 1 else tuple(sorted(a.name for a in attrs))
            defaults = attribute_defaults(node.domain, op, opset) if op != CONSTANT else ()
            if defaults:
                names = tuple(sorted({*names, *(name for name, _v in defaults)}))
            k = (node.domain, op, n, len(outs), names)
            key_of.append(interned.setdefault(k, k))
            kind_of.append(kinds.setdefault(k, len(kinds)))
        add(number)
    return list(map(key_of.__getitem__, full)), list(map(kind_of.__getitem__, full)), full


def _read(nodes: Sequence[onnx.NodeProto]) -> list[object]:
    """The nodes as ``ScanResult.bare`` holds them: each one's op type ((domain, op type) outside the default domain),
    with the bytes of its attributes where it has some (a Constant's: their names; its tensor, maybe large, is not
    copied)."""
    out: list[object] = []
    add = out.append
    for node in nodes:
        domain, op, attrs = node.domain, node.op_type, node.attribute
        hk = (domain, op) if domain else op
        add((hk, attribute_bytes(op, attrs)) if attrs else hk)
    return out


class NodeSignatures:
    """The signature of each node of one graph as a number (``of``), and the first node of each signature (``first``)
    that stands for all of them."""

    def __init__(self, maps: GraphMaps, kinds: list[int], full: list[int], constants: GraphConstants) -> None:
        self.maps, self.constants = maps, constants
        self._values: dict[object, int] = {}  # a constant's hashable canonical value -> its number
        self._constant_codes: dict[tuple[int, int], int] = {}
        self._made: list[bool] = []  # per constant code: made by a node (a Constant node, or shadowing an initializer)
        self._reads_made: dict[int, bool] = {}
        # a value a node makes is coded by that node's key (``GraphMaps.producer``: the last node making it)
        code = self.code = {v: kinds[h] for v, h in maps.producer.items()}
        code[""] = ABSENT
        for v in constants.nodes:  # a Constant node's output: a constant, by its value
            code[v] = self._constant(v, code[v])
        for v in maps.initializers:  # a value made by a node and also an initializer is a constant too
            made_by = code.get(v)
            if made_by is None:  # (coded here, not on a KeyError at its first reader's)
                code[v] = self._constant(v, ABSENT)
            elif made_by >= 0:
                code[v] = self._constant(v, made_by)
        self.of, self.first = self._number(full)

    def reads_constant_node(self, sid: int) -> bool:
        """Whether the nodes of signature ``sid`` read a constant that a node makes (a Constant node's output joins
        the call of its first reader, ``Matcher._take``); False: none does, each reads initializers at most."""
        got = self._reads_made.get(sid)
        if got is None:
            codes = [self.code[v] for v in self.maps.inputs[self.first[sid]]]
            got = self._reads_made[sid] = any(c <= _FIRST_CONSTANT and self._made[_FIRST_CONSTANT - c] for c in codes)
        return got

    def _constant(self, value: str, made_by: int) -> int:
        t = self.maps.initializers.get(value) if made_by == ABSENT else None
        dims = tuple(t.dims) if t is not None else ()  # (read once: each read of a protobuf field costs ~0.3 us)
        if t is not None and (math.prod(dims) > SMALL_TENSOR or t.data_location == onnx.TensorProto.EXTERNAL):
            # a weight's canonical value is its type and shape (``canonical_tensor``), frozen as ``_frozen`` would
            # freeze it, without the dict and the recursion: the 100k replica's 11k weights, 0.04 s of CPU
            frozen: object = (("s", dims), ("t", t.data_type))
        else:
            frozen = _frozen(self.constants.value(value, keep=False))
        number = self._values.setdefault(frozen, len(self._values))
        k = self._constant_codes.setdefault((made_by, number), len(self._constant_codes))
        if k == len(self._made):
            self._made.append(made_by >= 0)
        return _FIRST_CONSTANT - k

    def _missing(self, value: str) -> int:
        """The code of a value no node makes: an initializer, or an outside value (a graph input)."""
        got = self.code[value] = self._constant(value, ABSENT) if value in self.maps.initializers else OUTSIDE
        return got

    def _number(self, full: list[int]) -> tuple[list[int], list[int]]:
        maps, code, missing = self.maps, self.code, self._missing
        known = code.__getitem__
        # the values nobody reads, as the group keys test them later (``GraphMaps.unread``, made once, in C): a look-up
        # per output instead of two (0.133 -> 0.102 s for the 100k replica's signatures, CPU, best of 7)
        unread_values = maps.unread
        numbers: dict[tuple[object, ...], int] = {}
        of: list[int] = []
        first: list[int] = []
        add = of.append
        # a signature is one flat tuple (key number, unread outputs, repeats, each operand's code), each operand's code
        # made once, and an operand repeating another looked for by a comparison where there are two (most nodes):
        # 0.094 -> 0.072 s at 100k nodes against a tuple of the codes inside one of four and a set of every node's
        # operands (CPU, best of 7)
        for f, ins, outs in zip(full, maps.inputs, maps.outputs):
            if len(outs) == 1:
                v = outs[0]
                unread: object = not v or v in unread_values
            else:
                unread = tuple([not v or v in unread_values for v in outs])
            n = len(ins)
            if (n == 2 and ins[0] != ins[1]) or n < 2 or len(set(ins)) == n:  # (no operand repeats another)
                try:
                    s = (f, unread, None, *map(known, ins))  # (map in C: 30 ms less than a comprehension)
                except KeyError:
                    s = (f, unread, None, *[code[v] if v in code else missing(v) for v in ins])
            else:
                codes = tuple([code[v] if v in code else missing(v) for v in ins])
                s = (f, unread, _repeats(ins, codes), *codes)
            number = numbers.get(s)
            if number is None:
                number = numbers[s] = len(first)
                first.append(len(of))  # (this node's index)
            add(number)
        return of, first


def _repeats(ins: list[str], codes: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where each operand made by a node or from outside first occurs among the operands (x * x: (0, 0)); None when
    none repeats another (a constant read twice is its value twice, as for two constants of one value). Linear in the
    operands (a hostile Concat may read one value 100k times)."""
    first: dict[str, int] = {}
    out = tuple([first.setdefault(v, k) if c >= 0 or c == OUTSIDE else k for k, (v, c) in enumerate(zip(ins, codes))])
    return None if out == tuple(range(len(ins))) else out


def _frozen(value: Any) -> object:
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in sorted(value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
