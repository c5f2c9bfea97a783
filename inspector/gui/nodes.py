"""Node details: a node's attributes, types, metadata, operator docs and tensor previews in the Details tab, for a
search hit or a box clicked in the graph, of the session's model. External tensor data is read only on request (a
model's external-data paths are untrusted: ``read_tensor`` reads only regular files inside the model's folder)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QTabWidget, QTextBrowser

from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope
from inspector.core.model.module_tree import ModuleNode, bare_modules
from inspector.core.model.tensors import read_tensor
from inspector.core.model.walk import resolve_path
from inspector.core.util.errors import InspectorError
from inspector.gui import details
from inspector.gui.graph_panel import GraphPanel, scope_label
from inspector.gui.node_details import node_html, tensor_preview
from inspector.gui.session import Session
from inspector.render.scene import SceneNode


class NodeView:
    """Shows nodes of the session's model in ``details`` (a tab of ``tabs``); the graph ``center`` reveals them."""

    def __init__(self, session: Session, details: QTextBrowser, tabs: QTabWidget, center: GraphPanel,
                 module_total: Callable[[ModuleNode], int], module_calls: Callable[[ModuleNode], int]) -> None:
        self.session, self.details, self.tabs, self.center = session, details, tabs, center
        self.module_total, self.module_calls = module_total, module_calls
        self.shown: tuple[GraphScope, tuple[Any, ...], str] | None = None
        self._bare: dict[int, ModuleNode] | None = None  # (``_module_of``: made on first use, per model)
        details.anchorClicked.connect(self.link_clicked)
        session.model_loaded.connect(self._forget)

    def _forget(self, _index: ModelIndex) -> None:
        self.shown = None
        self._bare = None

    def _module_of(self, scope: GraphScope, path: tuple[Any, ...]) -> str:
        """`` › module`` for a main-graph node of no call the module tree places in a module (by its own metadata, or,
        with none, by its neighbours: said so), else ""."""
        index = self.session.index
        if index is None or scope != MAIN or len(path) != 1 or not index.provenance.module_root.children:
            return ""
        if self._bare is None:
            self._bare = bare_modules(index.provenance.module_root)
        module = self._bare.get(path[0])
        if module is None:
            return ""
        bare = not index.proto.graph.node[path[0]].metadata_props
        return f" › {module.path}" + (" (no metadata: placed where its neighbours are)" if bare else "")

    def show(self, scope: GraphScope, path: tuple[Any, ...], where: str) -> None:
        """Node details (attributes, types, metadata, operator docs, tensors) in the Details tab."""
        if self.session.index is None:
            return
        self.shown = (scope, path, where)
        if self._render(scope, path, where, {}):
            self.tabs.setCurrentWidget(self.details)

    def _render(self, scope: GraphScope, path: tuple[Any, ...], where: str, loaded: dict[str, str]) -> bool:
        """Node details with previews of its inline initializers (and of external ones already ``loaded``)."""
        index, values = self.session.index, self.session.values
        if index is None or values is None:
            return False
        graph = index.proto.graph
        nodes = index.functions.functions[scope].node if isinstance(scope, FunctionKey) else graph.node
        try:
            node = resolve_path(nodes, path)
        except KeyError:
            return False
        types, initializers = values
        inits = {n: initializers[n] for n in node.input if n in initializers}
        previews = {n: self._preview(t, inline_only=True) for n, t in inits.items()} | loaded
        self.details.setHtml(node_html(index, node, where, types, inits, {k: v for k, v in previews.items() if v}))
        return True

    def _preview(self, tensor: onnx.TensorProto, inline_only: bool) -> str:
        if inline_only and tensor.data_location == onnx.TensorProto.EXTERNAL:
            return ""
        try:
            index = self.session.index
            return tensor_preview(read_tensor(tensor, index.path.parent if index is not None else Path(".")))
        except InspectorError as e:
            return f"cannot read: {e}"

    def link_clicked(self, url: QUrl) -> None:
        """'load values' links read external tensor data on demand (only from inside the model's folder)."""
        text = url.toString()
        values = self.session.values
        if not text.startswith("tensor:") or self.session.index is None or self.shown is None:
            return
        name = text[len("tensor:"):]
        tensor = values[1].get(name) if values else None
        if tensor is None:
            return
        scope, path, where = self.shown

        def done(preview: str) -> None:
            if self.shown == (scope, path, where):
                self._render(scope, path, where, {name: preview})

        self.session.jobs.run(lambda: self._preview(tensor, inline_only=False), done)

    def reveal(self, scope: GraphScope, path: tuple[Any, ...], call: AtenCall | None) -> None:
        """Show the graph that holds a node and select its box there (the box of its top-level node when it sits
        in a subgraph): the body of its aten call, the function body, or the main graph."""
        first = path[0] if path else None
        if not isinstance(first, int):
            return
        self.center.show_scope(call if call is not None else scope, focus=f"n:{first}")

    def graph_node_selected(self, scope: Scope, node: SceneNode | None) -> None:
        """A box clicked in the graph: an op or a function call shows its node, others describe themselves."""
        index = self.session.index
        if node is None or index is None:
            return
        graph_scope = scope if not isinstance(scope, AtenCall) else MAIN
        if node.kind == "op" and isinstance(node.ref, tuple):
            if _scope_nodes(index, scope) is not None:
                where = f"{scope_label(scope)}{self._module_of(graph_scope, node.ref)} / {node.detail or node.label}"
                self.show(graph_scope, node.ref, where)
        elif node.kind == "aten_call" and isinstance(node.ref, AtenCall):
            self.details.setHtml(details.describe(index, node.ref))
            self.tabs.setCurrentWidget(self.details)
        elif node.kind == "function_call" and isinstance(node.ref, tuple):
            self.show(graph_scope, node.ref[1], f"{scope_label(scope)} / call of {node.ref[0]}")
        elif node.kind == "module":
            self.details.setHtml(details.describe(index, module_node(index, str(node.ref)), self.module_total,
                                                  self.module_calls))
            self.tabs.setCurrentWidget(self.details)


def _scope_nodes(index: ModelIndex, scope: Scope) -> Sequence[onnx.NodeProto] | None:
    if isinstance(scope, FunctionKey):
        f = index.functions.functions.get(scope)
        return f.node if f is not None else None
    return index.proto.graph.node


def module_node(index: ModelIndex, path: str) -> ModuleNode | None:
    """The module-tree node at ``path`` ("" for the root)."""
    stack = [index.provenance.module_root]
    while stack:
        m = stack.pop()
        if m.path == path:
            return m
        stack.extend(m.children.values())
    return None
