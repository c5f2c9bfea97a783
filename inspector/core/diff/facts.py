"""Comparing what is not a body: model facts, initializers, graph inputs and outputs (the wiring of matched units
is ``wiring.py``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import onnx
from onnx import TensorProto

from inspector.core.diff.compare import Recorder
from inspector.core.diff.model import Change, ChangeKind, FoldRelation, MatchCount
from inspector.core.diff.units import UnitPairs
from inspector.core.diff.values import (
    changed_text,
    external_difference,
    renamed_text,
    same_content,
    short,
    tensor_summary,
    tensor_type,
    value_difference,
)
from inspector.core.model.keys import FunctionKey
from inspector.core.model.provenance import ProvenanceIndex
from inspector.core.model.values import type_text

if TYPE_CHECKING:
    from inspector.core.model.tensors import ExternalFiles

# added, removed, retyped
_VALUE_KINDS: dict[str, tuple[ChangeKind, ChangeKind, ChangeKind]] = {
    "input": ("input_added", "input_removed", "input_retyped"),
    "output": ("output_added", "output_removed", "output_retyped"),
}


class GraphComparer:
    """Model facts, initializers, graph inputs and outputs."""

    def __init__(self, pairs: UnitPairs, recorder: Recorder, matched: dict[str, MatchCount]) -> None:
        self.pairs = pairs
        self.A, self.B = pairs.A, pairs.B
        self.add = recorder.add
        self.matched = matched  # graph inputs and outputs are matched while compared
        self._folders: bool | None = None  # (``_two_folders``, worked out once)
        self._files: tuple[ExternalFiles, ExternalFiles] | None = None  # each side's, opened once (``_same_external``)

    def compare_model_facts(self, fold: FoldRelation | None, explained: set[FunctionKey]) -> None:
        fa, fb = self.A.index.facts, self.B.index.facts
        fold_domains = {k.domain for k in explained}
        if fa.ir_version != fb.ir_version:
            flat_ir, folded_ir = (fa.ir_version, fb.ir_version) if fold is None or fold.folded == "b" else \
                (fb.ir_version, fa.ir_version)
            if fold is None or folded_ir != max(flat_ir, 10):  # fold raises the IR version to 10 (overloads)
                self.add(Change("ir_version", "model", "", "ir_version", fa.ir_version, fb.ir_version,
                                f"ir_version {fa.ir_version} -> {fb.ir_version}", ["ir_version"]))
        for domain in sorted(set(fa.opsets) | set(fb.opsets)):
            shown = domain or "ai.onnx"
            va, vb = fa.opsets.get(domain), fb.opsets.get(domain)
            if va == vb or domain in fold_domains:
                continue
            kind: ChangeKind = "opset_added" if va is None else "opset_removed" if vb is None else "opset_changed"
            self.add(Change(kind, "model", "", f"opset {shown}", va, vb, f"opset {shown}: {va} -> {vb}",
                            [f"opset {shown}"]))
        for name in ("producer_name", "producer_version"):
            va, vb = getattr(fa, name), getattr(fb, name)
            if va != vb:
                self.add(Change("producer", "model", "", name, va, vb, f"{name}: {va!r} -> {vb!r}", [name]))
        for name in ("domain", "model_version"):
            va, vb = getattr(fa, name), getattr(fb, name)
            if va != vb:
                self.add(Change("model_field", "model", "", name, va, vb, f"{name}: {va!r} -> {vb!r}", [name]))
        pa, pb = self.A.index.provenance, self.B.index.provenance
        # (two exports whose every call was recognised differ in that count only as in their calls': a stripped
        # GPT-NeoX made sequential, two LayerNorm calls more, read "71 recognised by body template -> 73")
        if pa.recognised != pb.recognised and not (pa.recognised == len(pa.calls) and pb.recognised == len(pb.calls)):
            # the calls of one side (or more of them) come from body templates, not from fx metadata: its families
            # and calls are what the templates tell, so the aten-level changes may come from that alone (a stripped
            # export against its original: the same nodes, and 31 changes with no word of why)
            ta, tb = _call_sources(pa), _call_sources(pb)
            removed: ChangeKind = "metadata_removed" if pb.recognised > pa.recognised else "metadata_added"
            self.add(Change(removed, "model", "", "fx metadata", ta, tb, f"aten calls: {ta} -> {tb}",
                            ["fx metadata"]))
        for key in sorted(set(fa.metadata) | set(fb.metadata)):
            ma, mb = fa.metadata.get(key), fb.metadata.get(key)
            if ma == mb:
                continue
            meta: ChangeKind = "metadata_added" if ma is None else "metadata_removed" if mb is None \
                else "metadata_changed"
            self.add(Change(meta, "model", "", f"metadata {key}", ma, mb,
                            f"metadata {key!r}: {short(ma)} -> {short(mb)}", [f"metadata {key}"]))

    def compare_initializers(self, tmap: dict[int, int]) -> None:
        try:
            self._compare_initializers(tmap)
        finally:
            for files in self._files or ():
                files.close()
            self._files = None

    def _compare_initializers(self, tmap: dict[int, int]) -> None:
        A, B = self.A, self.B
        inits_a, inits_b = A.graph.initializer, B.graph.initializer
        # a pair of equal initializers (one comparison in C) is no change, baked into a call or not; only the rest
        # are asked about (``Side.baked``: constants compared as part of aten call bodies are not listed here)
        left = [(t, kb) for ka, t in enumerate(inits_a) if (kb := tmap.get(ka)) is None or t != inits_b[kb]]
        if self._two_folders():  # (external data referred to alike in two folders: two files, maybe other bytes)
            left += [(t, kb) for ka, t in enumerate(inits_a) if t.data_location == TensorProto.EXTERNAL
                     and (kb := tmap.get(ka)) is not None and t == inits_b[kb]]
        matched_b = set(tmap.values())
        added = [u for kb, u in enumerate(inits_b) if kb not in matched_b]
        baked_a = A.baked({t.name for t, _kb in left})
        baked_b = B.baked({inits_b[kb].name for _t, kb in left if kb is not None} | {u.name for u in added})
        shown = [(t, kb) for t, kb in left if t.name not in baked_a and (kb is None or inits_b[kb].name not in baked_b)]
        read_a = A.readers({t.name for t, _kb in shown})  # (a few more than are listed: those of equal content)
        read_b = B.readers({u.name for u in added if u.name not in baked_b})
        for t, kb in shown:
            read = _read_by(t.name, read_a.get(t.name))
            if kb is None:
                self.add(Change("initializer_removed", "initializer", "", t.name, tensor_summary(t), None,
                                f"{t.name} {tensor_type(t)}", [t.name], read_by=read))
                continue
            u = inits_b[kb]
            if t.data_type != u.data_type or list(t.dims) != list(u.dims):
                self.add(Change("initializer_reshaped", "initializer", "", t.name, tensor_type(t), tensor_type(u),
                                f"{renamed_text(t.name, u.name)} {tensor_type(t)} -> {tensor_type(u)}",
                                [t.name], read_by=read))
            elif not (self._same_external(t, u) if t.data_location == u.data_location == TensorProto.EXTERNAL
                      else same_content(t, u)):
                old, new = tensor_summary(t), tensor_summary(u)
                external = t.data_location == TensorProto.EXTERNAL or u.data_location == TensorProto.EXTERNAL
                difference = external_difference(t, A.folder, u, B.folder) if external and A.folder and B.folder \
                    else value_difference(t, u)
                self.add(Change("initializer_revalued", "initializer", "", t.name, old, new,
                                f"{renamed_text(t.name, u.name)} {tensor_type(t)}: "
                                f"{changed_text(old, new, difference, typed=True)}", [t.name], read_by=read))
        for u in added:
            if u.name not in baked_b:
                read = _read_by(u.name, read_b.get(u.name))
                self.add(Change("initializer_added", "initializer", "", u.name, None, tensor_summary(u),
                                f"{u.name} {tensor_type(u)}", [u.name], read_by=read))
        count = self.matched.get("initializers")
        if count is not None:
            count.baked = sum(1 for t, kb in left if kb is None and t.name in baked_a) + \
                sum(1 for u in added if u.name in baked_b)

    def _same_external(self, t: TensorProto, u: TensorProto) -> bool:
        """Whether two tensors held as external data hold the same bytes: by their references where both sides read
        one file at one place (one model's folder), else by the bytes (``tensors.same_external_bytes``): each export
        naming its weights file after itself (every reference differs), or two folders of exports whose files have
        one name (every reference alike, any weight may differ). Where either cannot be read, by the references, as
        before any were read (two folders of exports shared without their weights files differ in nothing)."""
        same_reference = t.external_data == u.external_data
        if not self.A.folder or not self.B.folder or (same_reference and not self._two_folders()):
            return same_reference
        from inspector.core.model.tensors import ExternalFiles, same_external_bytes  # (here: data read; start-up)

        if self._files is None:
            self._files = (ExternalFiles(self.A.folder), ExternalFiles(self.B.folder))
        got = same_external_bytes(t, self._files[0], u, self._files[1])
        return same_reference if got is None else got

    def _two_folders(self) -> bool:
        """Whether the two models lie in two folders (their external data, referred to alike, are two files)."""
        if self._folders is None:
            a, b = self.A.folder, self.B.folder
            try:
                self._folders = a is not None and b is not None and a.resolve() != b.resolve()
            except (OSError, RuntimeError):
                self._folders = False
        return self._folders

    def compare_values(self, section: Literal["input", "output"], va: Sequence[onnx.ValueInfoProto],
                       vb: Sequence[onnx.ValueInfoProto]) -> dict[int, int]:
        """Graph inputs or outputs: matched by name, then position; types compared."""
        added, removed, retyped = _VALUE_KINDS[section]
        pos_b = {v.name: k for k, v in enumerate(vb)}
        vmap = {k: pos_b[v.name] for k, v in enumerate(va) if v.name in pos_b}
        left_b = [k for k in range(len(vb)) if k not in set(vmap.values())]
        for k, kb in zip([k for k in range(len(va)) if k not in vmap], left_b):
            vmap[k] = kb
        for k, v in enumerate(va):
            found = vmap.get(k)
            if found is None:
                self.add(Change(removed, section, "", v.name, type_text(v.type), None,
                                f"{v.name}: {type_text(v.type)}", [v.name]))
                continue
            ta, tb = type_text(v.type), type_text(vb[found].type)
            if ta != tb:
                self.add(Change(retyped, section, "", v.name, ta, tb,
                                f"{renamed_text(v.name, vb[found].name)}: {ta} -> {tb}", [v.name]))
        mapped = set(vmap.values())
        for kb, v in enumerate(vb):
            if kb not in mapped:
                self.add(Change(added, section, "", v.name, None, type_text(v.type),
                                f"{v.name}: {type_text(v.type)}", [v.name]))
        renamed = sum(1 for k, kb in vmap.items() if va[k].name != vb[kb].name)
        self.matched[f"{section}s"] = MatchCount(len(vmap), len(va) - len(vmap), len(vb) - len(vmap), renamed)
        return vmap


def _read_by(name: str, readers: list[tuple[str, str]] | None) -> str:
    """What reads an initializer whose name does not say (the optimizer's ``val_35``, a transposed weight; torch's
    ``unsqueeze_14``, a rotary table), so that a changed weight is found by its layer: the first aten call as its
    place, and how many more (``encoder.layers.0.blocks.0.attention.q_proj › linear and 3 more``); nothing for a
    parameter of the module that reads it (``encoder.layers.0.blocks.0.mlp.fc1.bias``) or for what nothing reads."""
    if not readers:
        return ""
    module, first = readers[0]
    if module and name.startswith(module + "."):
        return ""
    more = f" and {len(readers) - 1} more" if len(readers) > 1 else ""
    return f"{module + ' › ' if module else ''}{first}{more}"


def _call_sources(p: ProvenanceIndex) -> str:
    """Where a side's aten calls come from: ``80 from fx metadata, 17 recognised by body template``, a part of none
    left out."""
    parts = [f"{n} {source}" for n, source in ((len(p.calls) - p.recognised, "from fx metadata"),
                                               (p.recognised, "recognised by body template")) if n]
    return ", ".join(parts) or "none"
