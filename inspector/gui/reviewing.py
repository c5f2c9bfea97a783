"""The main window's review workflow: the Review panel's list and the tree's badges, the review bar's target,
and saving a review to the sidecar at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication, QMessageBox

from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.review.store import Review, ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import BodyAnalysis, SpecialisedValue
from inspector.core.util.errors import InspectorError
from inspector.gui.analysis import Analyses, Preempted
from inspector.gui.dialogs import show_message
from inspector.gui.review_panel import ReviewItem
from inspector.gui.worker import give_way

if TYPE_CHECKING:
    from inspector.gui.main_window import MainWindow

Reviewable = BodyAnalysis | SpecialisedValue  # an overload's body, or one specialised value


@dataclass(frozen=True, slots=True)
class Target:
    """What the review bar marks, bound to the model (its index and review store) it was chosen in."""

    item: ReviewItem
    index: ModelIndex
    store: ReviewStore


class Reviewing:
    """Reviews of the window's model: ``window.reviews`` is the store (None when reviewing is disabled)."""

    def __init__(self, window: MainWindow) -> None:
        self.w = window
        self.target: Target | None = None
        self.pending_obj: Reviewable | None = None  # to target once its body is shown (a jump from the panel)
        self.listing_pending = False  # list once the first graph is drawn, so it never delays it

    def reset(self) -> None:
        """Forget the target and everything pending: called when another model is opened."""
        self.target = None
        self.pending_obj = None
        self.listing_pending = False
        self.w.review_bar.set_target(None, None)
        self.w.review_panel.set_items([])

    def list_all(self) -> None:
        """Analyse every family off the GUI thread; then fill the Review panel and the tree's badges."""
        w = self.w
        analyses, store = w.analyses, w.reviews
        if analyses is None or store is None:
            return

        def done(result: tuple[list[tuple[ReviewItem, Review]], dict[int, tuple[int, int]]]) -> None:
            w.progress.setVisible(bool(w.jobs))
            if analyses is not w.analyses:
                return
            items, badges = result
            w.review_panel.set_items(items)
            w.families.set_badges(badges)
            w.reviews_listed.emit(len(items))

        w.jobs.run(lambda: review_items(analyses, store), done, w.statusBar().showMessage,
                   priority=-1)  # after layouts and selections

    def set_target(self, obj: Reviewable) -> None:
        """Point the review bar at an overload body or a specialised value of the shown selection."""
        w = self.w
        sel, store, analyses, index = w.bodies.selection, w.reviews, w.analyses, w.index
        self.target = None
        if sel is None or store is None or analyses is None or index is None or analyses.index is not index:
            w.review_bar.set_target(None, None)
            return
        fam = analyses.family_of(sel.analysis.members[0]) if sel.analysis.members else None
        family_analysis = analyses.family(fam) if fam is not None else None
        if family_analysis is None:
            w.review_bar.set_target(None, None)
            return
        for key, thing in review_keys(family_analysis):
            if thing is obj:
                item = ReviewItem(key, thing, family_analysis)
                self.target = Target(item, index, store)
                w.review_bar.set_target(item.label if key.kind == "value" else f"overload {sel.title}",
                                        store.get(key))
                return
        w.review_bar.set_target(None, None)

    def set_review(self, status: str, note: str) -> None:
        """Record a review and save the sidecar at once (atomically); a failure is shown, never swallowed."""
        w = self.w
        target = self.target
        if target is None or target.store is not w.reviews or target.index is not w.index:
            self.target = None  # a target from another model never writes (and the bar forgets it)
            w.review_bar.set_target(None, None)
            return
        item, store = target.item, target.store
        try:
            store.set(item.key, status, note, reviewed_value(item.obj))
        except (InspectorError, OSError, ValueError) as e:
            w.statusBar().showMessage(f"Review not saved: {e}")
            if QApplication.platformName() != "offscreen":
                show_message(w, QMessageBox.Icon.Warning, "Review not saved", str(e))
            return
        review = store.get(item.key)
        w.review_bar.set_target(w.review_bar.target.full_text(), review)
        items = [(i, store.get(i.key)) for i, _r in w.review_panel.items()]
        w.review_panel.set_items(items)
        w.families.set_badges(badges(items, w.index))
        w.statusBar().showMessage(f"Marked {status}: {item.label}", 4000)
        w.review_saved.emit(item.key, review)

    def jump_to(self, item: ReviewItem) -> None:
        """Show the body of ``item`` and target the item itself once it is shown."""
        body = item.body
        if body is None or not body.members:
            return
        self.pending_obj = item.obj
        self.w.select_in_tree(body.members[0])


def review_items(analyses: Analyses, store: ReviewStore
                 ) -> tuple[list[tuple[ReviewItem, Review]], dict[int, tuple[int, int]]]:
    """Every reviewable item of every family with its review, and per-overload badge counts."""
    items: list[tuple[ReviewItem, Review]] = []
    for fam in analyses.index.families:
        while True:
            give_way()  # a background job: what the user clicks meanwhile goes first
            try:
                fa = analyses.family(fam)
                break
            except Preempted:  # a selection needed the analyses meanwhile: this family again, after it
                continue
        for key, obj in review_keys(fa):
            items.append((ReviewItem(key, obj, fa), store.get(key)))  # type: ignore[arg-type]
    return items, badges(items, analyses.index)


def badges(items: list[tuple[ReviewItem, Review]], index: ModelIndex | None) -> dict[int, tuple[int, int]]:
    """(specialised values, unreviewed items) per overload, keyed by id(overload)."""
    if index is None:
        return {}
    owner: dict[int, int] = {}
    for fam in index.families:
        for ov in fam.overloads:
            if ov.function is not None:
                owner[hash(ov.function)] = id(ov)
            for call in ov.aten_calls:
                owner[id(call)] = id(ov)
    counts: dict[int, list[int]] = {}
    for item, review in items:
        body = item.body
        if body is None:
            continue
        ovs = {owner.get(hash(m) if isinstance(m, FunctionKey) else id(m)) for m in body.members}
        for ov_id in ovs - {None}:
            c = counts.setdefault(ov_id, [0, 0])  # type: ignore[arg-type]
            if item.key.kind == "value":
                c[0] += 1
            if review.status == "unreviewed":
                c[1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}

