"""Aten calls: the ONNX nodes that one FX node (one aten call) of a dynamo export was translated into, and the
metadata keys exporters write on every such node.

Apart from ``provenance`` (which builds the calls and the module tree) so that the scan, the keys and the
signature binder can name an ``AtenCall`` without importing the index that makes them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TypeAlias

import onnx

from inspector.core.model.fx import FxNode, TensorRef, parse_fx_node
from inspector.core.model.keys import FunctionKey, GraphScope, MainGraph
from inspector.core.model.walk import NodePath, as_text

FX_NODE = "pkg.torch.onnx.fx_node"
RULED_OUT = "ruled out by the names of its values"  # why a recognised call's other fits are not its target
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
RULE_NAME = "pkg.onnxscript.rewriter.rule_name"
NAMESPACE = "namespace"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
STACK_TRACE = "pkg.torch.onnx.stack_trace"
# torch's placeholder for an empty module stack: a node a pass adds with no argument to copy the stack from is given
# this one module (``_EMPTY_NN_MODULE_STACK_KEY`` in torch/_export/passes/_node_metadata_hook.py; gpt2_dynamic's
# sym_size calls). It names no module of the model, so a call under it belongs to the root.
EMPTY_MODULE_STACK = "_empty_nn_module_stack_from_metadata_hook"


def made_inside(name: str) -> bool:
    """Whether ``name`` is named as a value made inside a call's torchlib body (``val_<n>``: the exporter numbers
    them; a value torch's FX graph made keeps its FX name)."""
    return name.startswith("val_") and name[4:].isdigit() and name.isascii()


def add_rules(seen: list[str], value: str) -> None:
    """Add the rewrite rules a node's ``RULE_NAME`` metadata names to ``seen``, each once, in the order applied: the
    rewriter writes the rules it applied to a node one after the other, comma-separated (MobileNetV2's convolutions
    read ``RemoveOptionalBiasFromConv, FuseBatchNormIntoConv, RemoveOptionalBiasFromConv, FuseConvPad``, which the
    summary repeated whole, its first rule twice)."""
    for rule in value.split(","):
        rule = rule.strip()
        if rule and rule not in seen:
            seen.append(rule)


@dataclass(slots=True)
class AtenCall:
    """The ONNX nodes one FX node (one aten call) was translated into."""

    fx_text: str
    name: str  # FX node name, e.g. "transpose_2"
    raw_target: str  # "torch.ops.aten.transpose.int"
    target: str  # "aten::transpose.int", or the raw target when it is not a torch op
    scope: GraphScope
    node_paths: list[NodePath]
    first_node: onnx.NodeProto | None = field(default=None, repr=False)
    rule_names: tuple[str, ...] = ()
    # the first node's name_scopes text as the scan read it ("" when it has none); None: not read yet
    scopes_text: str | bytes | None = field(default=None, repr=False)
    _fx: FxNode | None = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)
    _meta: dict[str, str] | None = field(default=None, repr=False)
    _module_path: str | None = field(default=None, repr=False)
    # a call recognised by body template (no fx metadata; ``core.model.recognise``): the templates that fit, and the
    # targets they stand for (several: an ambiguous body, whose ``target`` names no single aten overload)
    recognised: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    # ... and the targets the body fits too that the names of its values rule out (``recognise_narrow``: the exporter
    # names a call's output after its op, and a number the call made a constant of ``val_<n>``), so that a reader sees
    # why one target of several was kept (``RULED_OUT``, wherever it is shown)
    ruled_out: tuple[str, ...] = ()

    @property
    def is_aten(self) -> bool:
        return self.target.startswith("aten::")

    @property
    def family(self) -> tuple[str, str, str]:
        """``(namespace, op, overload)`` of the target, e.g. ``("aten", "transpose", "int")``."""
        return split_target(self.target)

    @property
    def fx(self) -> FxNode | None:
        """Parsed FX text (target, args, kwargs); computed on first use."""
        if not self._parsed:
            self._fx = parse_fx_node(self.fx_text)
            self._parsed = True
        return self._fx

    @property
    def metadata(self) -> dict[str, str]:
        """The first node's ``metadata_props`` (the same for every node of the call), read on first use."""
        if self._meta is None:
            props = self.first_node.metadata_props if self.first_node else ()
            self._meta = {as_text(p.key): as_text(p.value) for p in props}
        return self._meta

    @property
    def stack_trace(self) -> str:
        return self.metadata.get(STACK_TRACE, "")

    @property
    def module_chain(self) -> list[tuple[str, str]]:
        """``[(module path, class)]`` from the root module down to the one that made this call."""
        return module_chain(self.metadata)

    @property
    def module_path(self) -> str:
        if self._module_path is None:
            chain = self.module_chain
            self._module_path = chain[-1][0] if chain else ""
        return self._module_path

    @property
    def place(self) -> str:
        """Where the call is, as the app names it: its module path and FX name (``model.layers.1.self_attn ›
        softmax_1``; ``root › …`` for a call of the root module)."""
        return f"{self.module_path or 'root'} › {self.name}"

    def tensor_args(self) -> list[str]:
        fx = self.fx
        if fx is None:
            return []
        out: list[str] = []
        for v in (*fx.args, *fx.kwargs.values()):
            for item in v if isinstance(v, (list, tuple)) else (v,):
                if isinstance(item, TensorRef):
                    out.append(item.name)
        return out


def split_target(target: str) -> tuple[str, str, str]:
    if "::" in target:
        ns, _, rest = target.partition("::")
        name, _, overload = rest.partition(".")
        return ns, name, overload or "default"
    return "python", target, "default"


Scope: TypeAlias = "MainGraph | FunctionKey | AtenCall"
"""Anything shown, laid out or searched as one body: a graph, or the nodes of one aten call in a graph."""


@functools.cache
def _quoted() -> re.Pattern[str]:
    """One quoted entry of a list and its comma; compiled on first use, for a list that is not plain (start-up)."""
    return re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*(,|$)""")


def parse_str_list(text: str) -> list[str] | None:
    """Read ``"['', 'layers.0']"`` without eval; None when it is not such a list."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        return None
    plain = "\\" not in s and '"' not in s and "'" not in s[2:-2].replace("', '", "")
    if plain and s.startswith("['") and s.endswith("']"):
        return s[2:-2].split("', '")  # the common repr of a list of plain strings
    body = s[1:-1]
    out: list[str] = []
    pos = 0
    quoted = _quoted()
    while pos < len(body):
        m = quoted.match(body, pos)
        if not m or m.end() == pos:
            return None
        raw = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(raw.replace("\\'", "'").replace('\\"', '"') if "\\" in raw else raw)
        pos = m.end()
    return out


def module_chain(meta: dict[str, str]) -> list[tuple[str, str]]:
    """``[(module path, class)]`` from name_scopes/class_hierarchy, else from ``namespace``."""
    scopes_text = meta.get(NAME_SCOPES, "")
    scopes = parse_str_list(scopes_text) if scopes_text else None
    if scopes and len(scopes) >= 2:
        mods = scopes[:-1]  # the last entry names the FX node itself
        classes_text = meta.get(CLASS_HIERARCHY, "")
        cls = (parse_str_list(classes_text) or [])[: len(mods)] if classes_text else []
        cls += [""] * (len(mods) - len(cls))
        return [(m, c) for m, c in zip(mods, cls) if m != EMPTY_MODULE_STACK]
    pairs: list[tuple[str, str]] = []
    for part in meta.get(NAMESPACE, "").split("/")[:-1]:
        path, _, cls_name = part.partition(": ")
        if path.strip() != EMPTY_MODULE_STACK:
            pairs.append((path.strip(), cls_name.strip()))
    return pairs
