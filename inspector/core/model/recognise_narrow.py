"""A body that fits several targets, narrowed by what the names of its values say (``recognise_names``): the name of
its output (the op FX named the call after), and the names of the constants it reads where the targets read them
differently.

Why: the structure of ``Pow(x, c)`` is ``pow.Tensor_Scalar`` and ``pow.Tensor_Tensor`` alike (every RMSNorm of a Llama),
as ``Equal(x, c)`` then ``Not`` is ``ne.Scalar`` and ``ne.Tensor``; the names tell them apart. torchlib makes a number
passed to the call into a constant inside its body, named ``val_<n>`` like every value made there, while a Tensor
argument is made outside it, by another call (a folded ``scalar_tensor``: ``scalar_tensor_default``), as a parameter
or as a graph input. Measured on the exports whose metadata is the truth: of the stripped zoo's recognised calls, 40
have a sibling overload of their op ruled out so (28 ``pow.Tensor_Scalar``, ``ge.Scalar``, ``where.ScalarOther``,
``ne.Scalar``, ``lt.Scalar``, ``gt.Scalar``, cond's ``gt.Tensor``), of the held-out set's (``scripts/gen_heldout.py``)
38 (34 ``pow.Tensor_Scalar``, 3 ``ne.Scalar``, clip's ``eq.Tensor``), each the target torch's metadata names, and no
call, there or in the zoo, has its own target ruled out by any name. The same names choose between the templates of
one target that read an operand differently (``mul.Tensor`` of a number, ``#0``, or of a tensor, ``#1``), which
decides what comes back as the call's arguments: held-out Gemma's ``embed_scale`` buffer (a parameter by the graph
signature's input kind, which stripping keeps) and CLIP's folded ``exp`` are tensors, not the numbers they were given
back as (held-out arguments right/wrong 1011/2 -> 1011/0).
A name narrows only between the targets the structure allows, never adds one. In a body of several nodes both names
are read, and where they disagree (the output names one target, the constants another) the body keeps every candidate:
never a single guess. A one-node body whose output names one of its targets is that target without its constants
being read (at 100k nodes, 14k MatMuls of folded weights; on the zoo and the held-out exports the two never
disagree: the same calls are unique either way). The threat is a hostile model: names are only compared with the
catalogue's op names and the ``val_<n>`` form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspector.core.aten.evidence import op_name
from inspector.core.aten.templates import Template
from inspector.core.model.recognise_names import Read, differing, named_op, reads_named, reads_of

# templates, targets, arguments, and the targets the body fits too that the names of its values rule out
Verdict = tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, Any], ...], tuple[str, ...]]


Fits = list[tuple[Template, Any]]  # one body's fits: each template with its match (``recognise._Match``: its ``nodes``)
VerdictOf = Callable[[list[Template], Any], Verdict]  # the verdict of templates of one body, from a match of theirs


class ByName:
    """The verdict of a one-node body that fits several targets, narrowed at each call by the name of its output and
    of the constants it reads (``narrowed``), worked out once per op named and what those constants' names say."""

    __slots__ = ("at_operands", "by_key", "fits", "inputs", "node", "ops", "outputs", "reads", "says", "verdict",
                 "verdict_of")

    def __init__(self, verdict_of: VerdictOf, fits: Fits, verdict: Verdict, says: Callable[[str], Read | None],
                 inputs: Sequence[list[str]], outputs: Sequence[list[str]]) -> None:
        """``fits``: the templates that fit the body at one node, with their matches; ``verdict``: theirs, before
        narrowing; ``says``: what a value of the graph says of how it was read (``recognise_names.ConstantNames``);
        ``inputs``, ``outputs``: each graph node's (``GraphMaps``)."""
        self.verdict_of, self.fits, self.verdict, self.says = verdict_of, fits, verdict, says
        self.inputs, self.outputs = inputs, outputs
        self.ops = frozenset(n for t, _m in fits if t.target in verdict[1] for n in names_of(t))
        self.reads = [reads_of(t, m.nodes) for t, m in fits]
        self.node = next(iter(fits[0][1].nodes.values()))  # (a one-node body: the node the matches are at)
        self.at_operands = [k for _g, k in differing(self.reads)]  # (most bodies: none, and no name is looked at)
        self.by_key: dict[tuple[str | None, tuple[Read | None, ...]], Verdict] = {}

    def at(self, i: int) -> Verdict:
        """The verdict of the call of graph node ``i`` (of the body's signature)."""
        outputs = self.outputs[i]
        op = named_op(outputs[0], self.ops) if outputs else None
        if op is not None:  # where the output's name names one target of several, the constants are not looked at
            # (on the zoo and the held-out exports they never say otherwise; the 100k replica's 14k MatMuls of folded
            # weights); where the body's templates are of one target, they tell which template (its arguments)
            got = self.by_key.get((op, ()))
            if got is None:
                got = self.by_key[(op, ())] = narrowed(self.verdict_of, self.fits, op) or self.verdict
            if not self.at_operands or len(got[1]) == 1 < len(self.verdict[1]):
                return got
        said: tuple[Read | None, ...] = ()
        if self.at_operands:
            inputs = self.inputs[i]
            said = tuple([self.says(v) if (v := inputs[k] if k < len(inputs) else "") else None
                          for k in self.at_operands])
        if op is None and not any(said):
            return self.verdict
        key = (op, said)
        got = self.by_key.get(key)
        if got is None:
            keep = None
            if any(said):
                node = self.node
                keep = [all(s is None or r.get((node, k)) in (None, s) for k, s in zip(self.at_operands, said))
                        for r in self.reads]
            got = self.by_key[key] = narrowed(self.verdict_of, self.fits, op or "", keep) or self.verdict
        return got


def by_name(verdict_of: VerdictOf, fits: Fits, verdict: Verdict, says: Callable[[str], Read | None],
            inputs: Sequence[list[str]], outputs: Sequence[list[str]]) -> Verdict | ByName:
    """The verdict of a one-node body, narrowed at each call (``ByName``) where its fits are of several targets, or of
    one target read differently (``mul.Tensor`` of a number's constant, or of a tensor: its arguments, a number or a
    tensor, come from the template the names keep); else the body's verdict, for every call alike."""
    if len(verdict[1]) == 1 and (len(fits) < 2 or not differing([reads_of(t, m.nodes) for t, m in fits])):
        return verdict
    return ByName(verdict_of, fits, verdict, says, inputs, outputs)


def narrowed(verdict_of: VerdictOf, fits: Fits, name: str, keep: Sequence[bool] | None = None) -> Verdict | None:
    """The verdict of the templates of ``fits`` (one body that fits several targets) that the names of its values
    name: ``name``, the body's output's, names their op's FX name or the name their export gave its output
    (``Template.named``: a batch norm fused into a Conv makes ``getitem``); ``keep``, per fit, whether the constants
    it reads are named as it reads them (``recognise_names.reads_named``). None when neither narrows, or when what
    one keeps the other rules out."""
    every = range(len(fits))
    kept = set(every)
    by_name = {n for n in every if named_op(name, names_of(fits[n][0])) is not None} if name else set()
    by_reads = {n for n in every if keep[n]} if keep is not None else set()
    for narrower in (by_name, by_reads):
        if narrower:  # (a name that names none of them says nothing)
            kept &= narrower
    if not kept or len(kept) == len(fits):
        return None
    chosen = [fits[n] for n in sorted(kept)]
    templates, targets, arguments, _ = verdict_of([t for t, _m in chosen], chosen[0][1])
    fitting = verdict_of([t for t, _m in fits], fits[0][1])[1]  # (public aliases dropped: ``multiply`` is ``mul``)
    return templates, targets, arguments, tuple(sorted(set(fitting) - set(targets)))


def reads_keep(fits: Fits, inputs: Sequence[Sequence[str]], says: Callable[[str], Read | None]) -> list[bool] | None:
    """Per fit of one body of several nodes, whether the constants it reads are named as it reads them (``narrowed``'s
    ``keep``); None where the fits read every operand alike."""
    reads: list[Mapping[tuple[int, int], Read]] = [reads_of(t, m.nodes) for t, m in fits]
    at = differing(reads)
    return reads_named(reads, at, inputs, says) if at else None


def names_of(t: Template) -> frozenset[str]:
    """The names ``t``'s output takes as a call's (``narrowed``)."""
    return frozenset((op_name(t.target), t.named)) if t.named else frozenset((op_name(t.target),))
