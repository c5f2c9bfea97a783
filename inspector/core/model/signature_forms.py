"""Aten signatures bound once per *form* of FX text (``fold``: tens of thousands of calls, a few hundred forms).

Apart from ``signature`` for start-up: a command that binds each call on its own (summary, check, diff) does not
make these classes (about 4 million instructions a dataclass, callgrind, ``benchmarks/bench_startup.py
--instructions``). FX text comes from the model (untrusted): a text whose references could not be replaced by
placeholders, or that already holds one, gets no form and is bound on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import FX_REF, FxNode, Symbol, TensorRef, parse_fx_node
from inspector.core.model.signature import CallSignature, signature_of

_PLACEHOLDER = "__ref_"


@dataclass(frozen=True, slots=True)
class SignatureForm:
    """The signature shared by the calls whose FX text differs only in the %names it references: the k-th
    reference of the text is bound as ``TensorRef(f"__ref_{k}")`` (see ``reference``)."""

    signature: CallSignature
    fx: FxNode  # the parsed form (its references are placeholders)

    @staticmethod
    def reference(ref: TensorRef) -> int | None:
        """Which reference of the text a placeholder stands for."""
        tail = ref.name[len(_PLACEHOLDER):]
        return int(tail) if ref.name.startswith(_PLACEHOLDER) and tail.isdigit() else None


class SignatureForms:
    """``call_signature`` for many calls: the FX text is parsed and bound once per *form* (the text with its
    %references numbered in order), and each call only lists the names it references. A 100k-node export has
    ~80k aten calls but a few hundred forms."""

    def __init__(self, catalogue: SchemaCatalogue | None = None) -> None:
        self.catalogue = catalogue or SchemaCatalogue.default()
        self._forms: dict[tuple[str, str], SignatureForm | None] = {}

    def form(self, call: AtenCall) -> tuple[SignatureForm, list[str]] | None:
        """The call's form and the names its references stand for, in text order; None when this call's text
        cannot share a form (then ``call_signature`` binds it on its own)."""
        text = call.fx_text
        head, eq, rest = text.partition(" = ")
        if not eq or not head.startswith("%") or _PLACEHOLDER in rest:
            return None
        parts = FX_REF.split(rest)  # text, name, text, name, ..., text: one scan of the text
        names = parts[1::2]
        # the k-th ``%_`` of the pattern is the k-th reference, so the pattern keys the form
        key = (call.target, "%_".join(parts[0::2]))
        if key not in self._forms:
            self._forms[key] = self._make(*key, len(names))
        form = self._forms[key]
        return (form, names) if form is not None else None

    def _make(self, target: str, pattern: str, refs: int) -> SignatureForm | None:
        counter = iter(range(refs))
        numbered = FX_REF.sub(lambda _m: f"%{_PLACEHOLDER}{next(counter, refs)}", pattern)
        fx = parse_fx_node(f"%{_PLACEHOLDER}call : = {numbered}")
        if fx is None:
            return None
        sig = signature_of(target, fx, self.catalogue)
        # every reference must come back as a tensor argument of its own, and nowhere else
        seen: list[int] = []
        for b in sig.bound:
            if not _placeholders(b.value, seen, b.parameter.is_tensor):
                return None
        if sorted(seen) != list(range(refs)) and (sig.bound or sorted(_refs(fx)) != list(range(refs))):
            return None
        return SignatureForm(sig, fx)


def _placeholders(value: Any, seen: list[int], tensor: bool) -> bool:
    """Collect the placeholders in a bound value; False when one sits where it cannot be replaced by a name
    (inside a Symbol or string, or a non-tensor parameter's value)."""
    if isinstance(value, TensorRef):
        k = SignatureForm.reference(value)
        if k is None or not tensor:
            return False
        seen.append(k)
        return True
    if isinstance(value, (list, tuple)):
        return all(_placeholders(v, seen, tensor) for v in value)
    if isinstance(value, dict):
        return all(_placeholders(v, seen, tensor) for v in value.values())
    if isinstance(value, (Symbol, str)):
        return _PLACEHOLDER not in (value.text if isinstance(value, Symbol) else value)
    return True


def _refs(fx: FxNode) -> list[int]:
    out: list[int] = []
    for v in (*fx.args, *fx.kwargs.values()):
        for item in v if isinstance(v, (list, tuple)) else (v,):
            if isinstance(item, TensorRef):
                k = SignatureForm.reference(item)
                out.append(-1 if k is None else k)
    return out
