"""The body of what is shown, in the Signature tab and in the graph: it follows the session's selection (analysed
off the GUI thread there), shows the torchlib source of its aten target, and marks its specialised values on the
boxes of the graph when the graph shows that body."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTabWidget

from inspector.core.aten.torchlib_source import torchlib_functions
from inspector.core.bodies.literals import body_literals
from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.specialise.categories import classify, explain
from inspector.gui.analysis import Selection
from inspector.gui.graph_panel import GraphPanel, scene_id
from inspector.gui.session import Session
from inspector.gui.signature_panel import SignaturePanel


class BodyView:
    """Keeps the Signature tab and the graph's marks on the session's selection."""

    def __init__(self, session: Session, signature: SignaturePanel, tabs: QTabWidget, center: GraphPanel) -> None:
        self.session, self.signature, self.tabs, self.center = session, signature, tabs, center
        self._torchlib: dict[str, Any] = {}
        session.selection_changed.connect(self.show)
        session.reviews_changed.connect(self._reviews_changed)
        signature.value_clicked.connect(session.set_target)

    def show(self, selection: Selection | None) -> None:
        """The session's body (None: what is shown has none, and the tab says why)."""
        if selection is None:
            self.signature.clear(self.session.why if self.session.index is not None else
                                 "Select an overload or an aten call.")
            self.mark_graph()
            return
        self.signature.show_selection(selection, self.session.value_reviews(selection))
        if self.session.signature_tab:
            self.tabs.setCurrentWidget(self.signature)
        self.mark_graph()
        if selection.target:
            self._show_torchlib(selection.target)

    def _reviews_changed(self) -> None:
        """A review saved (or the Review list made): the values' reviews in the body shown, where they are still."""
        sel = self.session.selection
        if sel is not None and self.signature.shown() is sel:
            self.signature.set_reviews(self.session.value_reviews(sel))

    def _show_torchlib(self, target: str) -> None:
        signature = self.signature
        if target in self._torchlib:
            signature.show_source(target, self._torchlib[target])
            return

        def done(functions: Any) -> None:
            self._torchlib[target] = functions
            signature.show_source(target, functions)

        self.session.jobs.run(lambda: torchlib_functions(target), done)

    def mark_graph(self) -> None:
        """Highlight, in the graph, the nodes of the shown body that carry specialised values: the body is the
        graph's scope, or an aten call expanded in place in the main graph (its nodes keep the marks they have in
        the call's own view)."""
        center = self.center
        sel, scene, view = self.session.selection, center.scene, center.current_view()
        if sel is None or scene is None or view is None:
            center.graph.mark({})
            return
        scope, members = view.scope, sel.analysis.members
        if isinstance(scope, FunctionKey) and scope in members:
            shown: list[FunctionKey | AtenCall] = [scope]
        elif isinstance(scope, AtenCall):
            shown = [m for m in members if m is scope]
        elif scope == MAIN:  # the main graph's ids of an expanded call's nodes are its own view's ids
            shown = [m for m in members if isinstance(m, AtenCall) and f"call:{m.name}" in view.expanded]
        else:
            shown = []
        marks: dict[str, tuple[str, str]] = {}
        for member in shown:
            self._mark_member(sel, member, marks)
        center.graph.mark(marks)

    def _mark_member(self, sel: Selection, member: FunctionKey | AtenCall,
                     marks: dict[str, tuple[str, str]]) -> None:
        # The analysis holds its first member's body; another aten call of the same body has its own nodes and
        # constants, whose literals line up one for one with the analysis's (the bodies are equal).
        body, here = sel.analysis.body, {id(lit): lit for lit in sel.analysis.literals}
        analyses = self.session.analyses
        if isinstance(member, AtenCall) and analyses is not None and member is not sel.analysis.members[0]:
            body = analyses.specialiser.body_of_call(member)
            here = dict(zip((id(lit) for lit in sel.analysis.literals), body_literals(body), strict=True))
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
