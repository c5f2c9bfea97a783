"""What a value's name says about the call that made it, read as torch's dynamo exporter names values: the output of an
aten call is named after its FX node, and FX names a node after its aten op, with a counter from the second on
(``linear``, ``linear_16``, ``_unsafe_view_2``); a value made inside a call's torchlib body is named ``val_<n>``.

Why the template matcher (``recognise``) reads names: a body is structure, and two structures can be one. BART's head
is ``linear`` without bias, then ``add`` of a 2-D bias: MatMul then Add, which is also linear's body with a bias; CLIP's
``t`` of a computed tensor, then ``matmul``, is linear's body without one. The graph's wiring cannot tell them apart,
and a lone Reshape is ``view`` or ``_unsafe_view`` alike. Metadata stripping (the reason to recognise at all) keeps
the names, and they tell: a value made and read inside a matched body that is named as a call's output is a boundary
between two calls, and a body that fits several overloads is the one its output is named after: after its op, or as
its template's export named it where that is another name (``Template.named``: a batch norm the optimizer fused into a
Conv makes ``getitem``, its first result, where a convolution's call makes ``conv2d_3``).

Measured on the exports whose metadata is the truth (the zoo's 23 dynamo exports and the 16 held-out ones of
``scripts/gen_heldout.py``): of 2,707 aten calls, 2,699 have an FX name that is their op's name (with a counter) and
2,628 an output of that name (the others: batch norms, whose outputs are ``getitem``'s, and values shared with another
call); of 2,163 values made and read inside one call, every one is named ``val_<n>``. The constants a body reads
are named so too: a number passed to the call is made a tensor inside its body (``val_<n>``), a Tensor argument comes
from outside it, named as another call's output (``constant_says``; ``recognise_narrow`` tells ``pow.Tensor_Scalar``
from ``pow.Tensor_Tensor`` by it). A node a graph pass made is named after its overload as well
(``scalar_tensor_default``). A name proves nothing alone: it narrows the candidates that the structure allows (never
adds one), and a name that is no aten op's FX name (a graph renamed by another tool: ``/model/MatMul_output_0``) says
nothing. The threat is a hostile model: names are only compared with the catalogue's op names, never evaluated or
shown from here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache
from typing import Literal

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.templates import Template
from inspector.core.model.calls import made_inside


def named_op(name: str, ops: Collection[str]) -> str | None:
    """The op of ``ops`` that ``name`` names as an FX node's output (``view_3`` -> ``view``), or None. The name as
    written first: an op may end in digits of its own (``conv2d``)."""
    if name in ops:
        return name
    head, sep, tail = name.rpartition("_")
    if sep and head in ops and tail.isdigit() and tail.isascii():
        return head
    return None


def is_call_output(name: str) -> bool:
    """Whether ``name`` is named as the output of an aten call (any op of the schema catalogue), as no value made inside
    a call's body is (those are ``val_<n>``)."""
    if not name or name.startswith("val_"):
        return False
    return _names_op(name)


@lru_cache(maxsize=4096)
def _names_op(name: str) -> bool:
    head, sep, tail = name.rpartition("_")
    base = head if sep and tail.isdigit() and tail.isascii() else name
    # a node a graph pass made is named after its overload too: ``scalar_tensor_default`` (t5's relative position
    # buckets; clip's and cond's, folded into constants by the optimizer, which keeps the name)
    return any(_is_op(c) for c in (name, base, base.removesuffix(_DEFAULT)))


_DEFAULT = "_default"


@lru_cache(maxsize=4096)
def _is_op(name: str) -> bool:
    """Whether ``aten::name`` has a schema (any overload): the first look-up keys the schema catalogue by op (3-4 ms,
    once per process, and only for a graph with a value inside a matched body that is not named ``val_<n>``)."""
    return bool(name) and bool(SchemaCatalogue.default().overloads("aten::" + name)) if _plain(name) else False


def _plain(name: str) -> bool:
    return name.replace("_", "a").isalnum() and name.isascii()



Read = Literal["x", "s"]  # how a template reads an operand: an outside tensor, or a constant made inside its body


def reads_of(t: Template, nodes: Mapping[int, int]) -> dict[tuple[int, int], Read]:
    """(graph node, operand) -> how a match of ``t`` (template node -> graph node: ``nodes``) reads it, where it reads
    an outside tensor (``x``) or a constant slot (``s``): made inside the call's body, from a number a parameter gave
    (relation ``scalar``) or by torchlib itself (an instance norm without weight makes ones). A template's constants
    are all made so: its one-op export passed every tensor as a graph input. So a model's parameter is no such constant
    (its graph signature marks it: ``ConstantNames``): padnet's instance norms, with their affine weight and without,
    and dwconv's Convs of the model's own weights, which a batch norm fused into the convolution would have replaced."""
    out: dict[tuple[int, int], Read] = {}
    for j, g in nodes.items():
        for k, ref in enumerate(t.nodes[j].inputs):
            if ref.kind == "x":
                out[(g, k)] = "x"
            elif ref.kind == "c":
                out[(g, k)] = "s"
    return out


def differing(reads: Sequence[Mapping[tuple[int, int], Read]]) -> list[tuple[int, int]]:
    """The operands that the matches of one body (``reads_of`` each) read differently: the only ones whose names can
    tell them apart (``pow.Tensor_Scalar`` reads its exponent as a number's constant, ``pow.Tensor_Tensor`` as a
    tensor), in order."""
    every = sorted({p for r in reads for p in r})
    return [p for p in every if len({r.get(p) for r in reads}) > 1]


def constant_says(name: str) -> Read | None:
    """How a constant named ``name`` was read by the call it was made for: ``s``, made inside it from a number
    (``val_<n>``: torchlib makes a number a tensor in the call's body); ``x``, made by another call (named as a call's
    output: ``scalar_tensor_default``, read as a Tensor argument); None when the name says neither (a graph renamed by
    another tool, a parameter's state-dict name)."""
    if made_inside(name):
        return "s"
    return "x" if is_call_output(name) else None


def reads_named(reads: Sequence[Mapping[tuple[int, int], Read]], at: Sequence[tuple[int, int]],
                inputs: Sequence[Sequence[str]], says: Callable[[str], Read | None]) -> list[bool]:
    """Per match of one body (``reads_of`` each), whether the constants it reads at the operands ``at`` (``differing``)
    are what ``says`` says of them (``ConstantNames``): a tensor from outside is no ``val_<n>``, a number's constant no
    call's output and no parameter. Where nothing is said (a name that says nothing, no constant), every match
    keeps."""
    keep = [True] * len(reads)
    for g, k in at:
        ins = inputs[g]
        value = ins[k] if k < len(ins) else ""
        said = says(value) if value else None
        if said is not None:
            for n, r in enumerate(reads):
                got = r.get((g, k))
                if got is not None and got != said:
                    keep[n] = False
    return keep


class ConstantNames:
    """What a constant operand says of how the call that reads it took it (``Read``): a parameter or buffer of the
    model (its graph signature's input kind, which stripping keeps: ``GraphMaps.parameters``) is a Tensor argument, as
    is a constant named as a call's output (a folded ``scalar_tensor_default``, ``exp``); one named ``val_<n>`` is a
    number the call made a tensor (``constant_says``). Nothing is said of a value that is no constant."""

    __slots__ = ("constant", "parameters")

    def __init__(self, constant: Callable[[str], bool], parameters: Collection[str]) -> None:
        self.constant, self.parameters = constant, parameters

    def __call__(self, value: str) -> Read | None:
        if not self.constant(value):
            return None
        return "x" if value in self.parameters else constant_says(value)


def output_name(outputs: Sequence[Sequence[str]], t: Template, nodes: Mapping[int, int]) -> str:
    """The name of the value a match of ``t`` (template node -> graph node: ``nodes``) makes as its first output, of
    the graph's node ``outputs``; "" when it makes none."""
    j, o = t.outputs[0] if t.outputs else (len(t.nodes) - 1, 0)
    g = nodes.get(j)
    outs = outputs[g] if g is not None else ()
    return outs[o] if o < len(outs) else ""


def inside_named(outputs: Sequence[Sequence[str]], t: Template, nodes: Mapping[int, int]) -> bool:
    """Whether a match of ``t`` makes values other than its outputs, and every one is named as a value made inside a
    call's body (``made_inside``): what tells one call from a chain of lone calls that lower to the same nodes
    (``recognise_templates.chain_of_calls``: ``ne.Scalar``'s Equal then Not, ``eq.Scalar`` then ``bitwise_not``),
    whose values between them would be named after their ops."""
    last, seen = len(t.nodes) - 1, False
    for j, g in nodes.items():
        if j != last:
            for o, value in enumerate(outputs[g]):
                if value and (j, o) not in t.outputs:
                    if not made_inside(value):
                        return False
                    seen = True
    return seen


def splits_calls(outputs: Sequence[Sequence[str]], t: Template, nodes: Mapping[int, int]) -> bool:
    """Whether a value that a node of a match of ``t`` other than its last makes, and that is no output of ``t``, is
    named as an aten call's output (``is_call_output``): no value made inside one call is, so the match is two calls.
    Most are ``val_<n>``: a prefix test each (the 100k replica's 6.2k multi-node calls)."""
    last = len(t.nodes) - 1
    for j, g in nodes.items():
        if j != last:
            for o, value in enumerate(outputs[g]):
                if value and not value.startswith("val_") and is_call_output(value) and (j, o) not in t.outputs:
                    return True
    return False
