"""The functions tree's filter box: debounced, worked out off the GUI thread, and it only filters (changing the
rows never navigates)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from inspector.gui.family_model import FamilyFilter, FamilyModel, Matches
from inspector.gui.widgets import LineEdit
from inspector.gui.worker import Jobs

DEBOUNCE_MS = 200


class FilterBox(LineEdit):
    """Typing restarts a 200 ms timer; the filter is applied when it fires (or at once by ``apply``). While
    rows come and go, ``filtering`` is True, so the tree's current-row signal can be told from a user's choice.
    ``changing`` and ``changed`` (the new text; after, what it keeps: ``Matches``, None for a blank text) come before
    and after the rows change, so the tree can keep what was expanded and the Review list filter alike."""

    changing = Signal(str)
    changed = Signal(str, object)

    def __init__(self, proxy: FamilyFilter, parent: QObject | None = None) -> None:
        super().__init__(placeholderText="Filter functions, overloads, aten targets, modules, reviews…")
        self.setClearButtonEnabled(True)
        self.proxy = proxy
        self.filtering = False
        self.jobs = Jobs()
        self._token = 0
        self.timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.timer.timeout.connect(self.apply)
        self.textChanged.connect(lambda _t: self.timer.start())

    def apply(self) -> None:
        """Work out the rows to keep off the GUI thread, then show them (a newer text makes older results stale)."""
        self.timer.stop()
        text, model = self.text(), self.source()
        if text == self.proxy.text or model is None:
            return
        self._token += 1
        token, tree = self._token, model.tree  # the rows of this model as they are now; a reset makes them stale
        if tree is None:
            return
        self.jobs.run(lambda: tree.matching(text),
                      lambda found: self._show(text, found) if token == self._token and model.tree is tree else None)

    def set_now(self, text: str) -> None:
        """Set the text and filter at once, on this thread (tests, jumps that must reveal a row)."""
        self.setText(text)
        self.timer.stop()
        self._token += 1
        model = self.source()
        if model is not None and text != self.proxy.text:
            self._show(text, model.matching(text))

    def source(self) -> FamilyModel | None:
        model = self.proxy.sourceModel()
        return model if isinstance(model, FamilyModel) else None

    def _show(self, text: str, matches: Matches | None) -> None:
        """The calls each overload keeps become its rows, then the family and overload rows are filtered."""
        model = self.source()
        self.changing.emit(text)
        self.filtering = True
        try:
            if model is not None:
                model.apply(matches)
            self.proxy.set_kept(text, matches.kept if matches is not None else None)
        finally:
            self.filtering = False
        self.changed.emit(text, matches)
