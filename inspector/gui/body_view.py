"""The main window's body view: the body behind a tree item analysed off the GUI thread, shown in the signature
panel with its torchlib source, and its specialised values marked in the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inspector.core.aten.torchlib_source import torchlib_functions
from inspector.core.bodies.literals import body_literals
from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import FunctionKey
from inspector.core.specialise.categories import classify, explain
from inspector.gui.analysis import Selection, TreeObject
from inspector.gui.graph_panel import scene_id

if TYPE_CHECKING:
    from inspector.gui.main_window import MainWindow


class BodyView:
    """``selection`` is the body shown; a newer request makes the results of older ones stale."""

    def __init__(self, window: MainWindow) -> None:
        self.w = window
        self.selection: Selection | None = None
        self._token = 0
        self._torchlib: dict[str, Any] = {}

    def reset(self) -> None:
        """Forget the shown body and drop the results of requests still running (another model was opened)."""
        self._token += 1
        self.selection = None

    def show(self, obj: TreeObject) -> None:
        """Analyse the family of ``obj`` off the GUI thread, then show its body; stale results are dropped."""
        w = self.w
        analyses = w.analyses
        if analyses is None:
            return
        self._token += 1
        token = self._token

        def done(selection: Selection | None) -> None:
            if token != self._token or analyses is not w.analyses:
                return
            if selection is None:
                w.signature.clear("No ONNX body for this item.")
                return
            w.signature.show_selection(selection)
            w.right.setCurrentWidget(w.signature)
            self.selection = selection
            self.mark_graph()
            pending, w.reviewing.pending_obj = w.reviewing.pending_obj, None
            w.reviewing.set_target(pending if pending is not None else selection.analysis)
            w.selection_shown.emit(selection)
            if selection.target:
                self._show_torchlib(selection.target)

        w.jobs.run(lambda: analyses.selection(obj), done, w.signature.clear)

    def _show_torchlib(self, target: str) -> None:
        signature = self.w.signature
        if target in self._torchlib:
            signature.show_source(target, self._torchlib[target])
            return

        def done(functions: Any) -> None:
            self._torchlib[target] = functions
            signature.show_source(target, functions)

        self.w.jobs.run(lambda: torchlib_functions(target), done)

    def mark_graph(self) -> None:
        """Highlight, in the graph, the nodes of the shown body that carry specialised values."""
        center = self.w.center
        sel, scene, view = self.selection, center.scene, center.current_view()
        if sel is None or scene is None or view is None:
            center.graph.mark({})
            return
        scope = view.scope
        same = (isinstance(scope, FunctionKey) and scope in sel.analysis.members) or (
            isinstance(scope, AtenCall) and any(m is scope for m in sel.analysis.members))
        if not same:
            center.graph.mark({})
            return
        # The analysis holds its first member's body; another aten call of the same body has its own nodes and
        # constants, whose literals line up one for one with the analysis's (the bodies are equal).
        body, here = sel.analysis.body, {id(lit): lit for lit in sel.analysis.literals}
        analyses = self.w.analyses
        if isinstance(scope, AtenCall) and analyses is not None and scope is not sel.analysis.members[0]:
            body = analyses.specialiser.body_of_call(scope)
            here = dict(zip((id(lit) for lit in sel.analysis.literals), body_literals(body), strict=True))
        marks: dict[str, tuple[str, str]] = {}
        for spec in sel.analysis.specialised:
            lit = here[id(spec.literal)]
            if lit.kind == "initializer":
                node_id = f"const:{lit.name}"
            elif lit.path:
                node_id = scene_id(body, lit.path)
            else:
                continue
            note = explain(spec)
            if node_id in marks:
                note = marks[node_id][1] + "\n\n" + note
            marks[node_id] = (classify(spec).colour, note)
        center.graph.mark(marks)
