"""The app's session: one object per main window holding the open model and what is shown of it, a QObject whose
signals every panel follows (napari's split: a model with events, apart from the widgets that listen).

It holds the model and its index, the sidecar review store, the family analyses, the search index, the running
jobs, what the graph and trees show (``shown``), the body of it (``selection``, the Signature tab) and the review
target. The target is worked out here and nowhere else, from what is shown: whichever way the user moves (tree,
search, graph click or double-click, Back/Forward, the Review list), the graph reports the scope it shows and the box
picked in it, and the Signature tab, the review bar and Ctrl+1 follow. What cannot be reviewed (the main graph, a
module) leaves no target and says why (``why``).

Model files are untrusted: the session keeps model strings as data; the widgets that show them escape them
(``gui.text``), and a model that cannot be read gives a one-line reason (``load_failed``), never a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx.defs
from PySide6.QtCore import QObject, Signal

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.torchlib import torchlib_version
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.index import ModelIndex, build_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.loader import load_model
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.values import GraphValues, graph_values
from inspector.core.model.walk import NodePath
from inspector.core.review.carried import carried_reviews, shown_review
from inspector.core.review.check import check_model
from inspector.core.review.store import Review, ReviewKey, ReviewStore, reviewed_value, template_siblings
from inspector.core.search import SearchIndex
from inspector.core.util.errors import InspectorError
from inspector.gui.analysis import Analyses, Selection, TreeObject, main_call_owners, same_scope, scope_of
from inspector.gui.collector import release_model
from inspector.gui.family_model import BadgeCounts, FamilyTree
from inspector.gui.review_panel import ReviewItem
from inspector.gui.reviewing import (
    Reviewable,
    Target,
    badges,
    find_target,
    review_items,
    target_label,
    value_reviews,
)
from inspector.gui.worker import Jobs, checkpoint
from inspector.render.overview import module_call_totals, module_totals
from inspector.render.scene import ATEN_CALL, FUNCTION_CALL, MODULE, OP, SceneNode

NO_MODEL = "Open a model to review its overloads and specialised values."
MAIN_GRAPH = "Main graph: nothing to review; select an overload or an aten call (tree, search or a call box)."


@dataclass(frozen=True, slots=True)
class Unreviewable:
    """Something shown that has no body to review (the main graph, a module, a node of no call), and why."""

    why: str


Shown = TreeObject | Unreviewable


@dataclass(frozen=True, slots=True)
class Opened:
    index: ModelIndex
    reviews: ReviewStore | None
    review_error: str
    search: SearchIndex
    values: GraphValues
    tree: FamilyTree  # the functions tree's rows
    totals: dict[int, int]  # nodes per module (module_totals)
    call_totals: dict[int, int]  # aten calls per module, with its submodules' (module_call_totals)
    owners: dict[NodePath, AtenCall]  # main-graph node -> its aten call (main_call_owners): for graph picks


def open_for_display(path: Path) -> Opened:
    """Index a model and prepare, still off the GUI thread, what the window shows first."""
    index = build_index(load_model(path, progress=checkpoint))  # a large file in pieces (worker.checkpoint)
    index.parameters()
    totals = module_totals(index.provenance.module_root)
    call_totals = module_call_totals(index.provenance.module_root)
    torchlib_version()  # parses the torchlib catalogue here, not on the GUI thread at the first selection
    SchemaCatalogue.default()  # and the aten schemas (60 ms), which the family analyses read
    # and onnx's operator registry, which node details read for an operator's documentation: its first look-up
    # costs 10 ms (the core reads operator facts from a generated table, so nothing else has made it yet)
    onnx.defs.get_schema("Identity", "")
    tree = FamilyTree(index)
    search = SearchIndex(index)  # its tables are built by the first search, on the search's worker (0.16 s at 100k)
    reviews: ReviewStore | None = ReviewStore(index.path)
    error = ""
    try:
        reviews.load()  # type: ignore[union-attr]
    except InspectorError as e:  # a sidecar we cannot read is left untouched, and reviewing is disabled
        reviews, error = None, str(e)
    # made here, not at the first pick in the graph: a dict of every main-graph node, 30 ms on the GUI thread at 100k
    # nodes (the bench's "jump to result" step)
    owners = main_call_owners(index)
    return Opened(index, reviews, error, search, graph_values(index.proto.graph), tree, totals, call_totals,
                  owners)


def _same(a: object, b: object) -> bool:
    """One shown thing: aten calls, overloads and families by identity, keys and reasons by value."""
    return a is b or (isinstance(a, (FunctionKey, Unreviewable)) and type(a) is type(b) and a == b)


def module_why(path: str) -> str:
    return f"Module {path} is not an overload: select one of its aten calls to review it."


def picked_object(scope: Scope | None, node: SceneNode, owners: dict[NodePath, AtenCall]) -> Shown:
    """What a box picked in the graph stands for: a call box its call, a box inside a body that body (None: the
    view's own item), a node of the main graph the aten call it came from, a module nothing reviewable."""
    if node.kind == ATEN_CALL and isinstance(node.ref, AtenCall):
        return node.ref
    if node.kind == FUNCTION_CALL and isinstance(node.ref, tuple) and node.ref and isinstance(node.ref[0],
                                                                                             FunctionKey):
        return node.ref[0]
    if not same_scope(scope, MAIN):
        return None
    if node.kind == MODULE:
        return Unreviewable(module_why(str(node.ref)))
    if node.kind == OP and isinstance(node.ref, tuple) and node.ref and isinstance(node.ref[0], int):
        owner = owners.get(node.ref)
        if owner is not None:
            return owner
        return Unreviewable(f"{node.label} node of the main graph belongs to no aten call: nothing to review.")
    return Unreviewable(MAIN_GRAPH)


class Session(QObject):
    """One open model and what is shown of it; widgets call its methods and listen to its signals."""

    model_loaded = Signal(object)  # ModelIndex, once every per-model state is the new model's
    load_failed = Signal(str)
    message = Signal(str, int)  # a line for the status bar, and for how long (ms; 0: until replaced)
    moved = Signal(object)  # Shown: changed by the graph or the Review list, so the trees follow
    selection_changed = Signal(object)  # Selection | None: the body shown (None: nothing to show, see ``why``)
    selection_shown = Signal(object)  # Selection, once shown and targeted
    target_changed = Signal()  # ``target`` (or ``why`` there is none) changed
    reviews_changed = Signal()  # ``review_list`` and ``badges`` changed
    reviews_listed = Signal(int)  # the first full list of a model is made
    review_saved = Signal(object, object)  # ReviewKey, Review
    review_failed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.jobs = Jobs()
        self.index: ModelIndex | None = None
        self.analyses: Analyses | None = None
        self.reviews: ReviewStore | None = None
        self.review_error = ""
        self.values: GraphValues | None = None
        self.search: SearchIndex | None = None
        self.tree: FamilyTree | None = None  # the functions tree's rows, made off the GUI thread
        self.totals: dict[int, int] | None = None  # nodes per module, for the modules tree
        self.call_totals: dict[int, int] | None = None  # aten calls per module, with its submodules
        self.review_list: list[tuple[ReviewItem, Review]] = []
        self.listed = False  # ``review_list`` is the model's whole list (made off the GUI thread after it opens)
        self.carried: dict[ReviewKey, Review] = {}  # reviews carried over from earlier bodies (``carried_reviews``)
        self.badges: dict[int, BadgeCounts] = {}
        self.listing_pending = False  # list once the first graph is drawn, so it never delays it
        self._token = 0  # bumped per request: the result of an older one is dropped
        self._clear_shown()

    def _clear_shown(self) -> None:
        self._view_item: Shown = None  # what the graph's view shows (a tree row, or the scope itself)
        self._picked: Shown = None  # a box picked in that view, if it stands for something else
        self._asked: Shown = Unreviewable(NO_MODEL)  # what ``selection`` is (being) worked out for
        self._view_scope: Scope | None = None  # the scope the graph was last asked to show
        self._token += 1
        self._owners: dict[NodePath, AtenCall] | None = None
        self.selection: Selection | None = None
        self.target: Target | None = None
        self.pending_value: Reviewable | None = None  # to target once its body is shown (a Review list jump)
        self.why = NO_MODEL
        self.signature_tab = False  # the move came from a tree or the Review list: the Signature tab comes forward

    # the model ------------------------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Load and index ``path`` on a worker thread; ``model_loaded`` or ``load_failed`` follows."""
        p = Path(path)
        self.message.emit(f"Opening {p.name}…", 0)
        self.jobs.run(lambda: open_for_display(p), self.set_opened, self.load_failed.emit)

    def set_opened(self, opened: Opened) -> None:
        """Show a model prepared by ``open_for_display``: everything of the previous one is forgotten first."""
        replacing = self.index is not None
        self.reset()
        self.index = opened.index
        self.analyses = Analyses(opened.index)
        self.reviews, self.review_error = opened.reviews, opened.review_error
        self.values, self.search = opened.values, opened.search
        self.tree, self.totals, self.call_totals = opened.tree, opened.totals, opened.call_totals
        self._owners = opened.owners
        self.listing_pending = opened.reviews is not None
        self.why = MAIN_GRAPH
        if replacing:
            release_model(opened.index.facts.total_nodes)
        self.model_loaded.emit(opened.index)
        self.target_changed.emit()

    def reset(self) -> None:
        """Forget the model and everything bound to it: what is shown, the target, pending results, reviews."""
        self.index = self.analyses = self.reviews = None
        self.values = self.search = None
        self.tree = self.totals = self.call_totals = None
        self.review_error = ""
        self.review_list, self.badges, self.carried = [], {}, {}
        self.listed = self.listing_pending = False
        self._clear_shown()
        self.selection_changed.emit(None)
        self.target_changed.emit()
        self.reviews_changed.emit()

    # what is shown ----------------------------------------------------------------------------------------------
    def shown(self) -> Shown:
        """What the graph and trees show now: the box picked in the graph, else the view's item."""
        return self._picked if self._picked is not None else self._view_item

    def show_object(self, obj: TreeObject) -> None:
        """A tree row (or a Review list item) chose ``obj``; the graph is asked to show it next. A row that stands
        for nothing (``… more calls``) changes nothing."""
        if obj is None:
            return
        self._view_item, self._picked = obj, None
        self._request(signature_tab=True)

    def follow_view(self, scope: Scope) -> None:
        """The graph was asked to show ``scope``, whichever way (a tree row, search, double-click, Back/Forward).
        The same scope again (boxes expanded or collapsed, the module overview) keeps what is shown."""
        if same_scope(scope, self._view_scope):
            return
        self._view_scope = scope
        current = self.shown()
        if current is not None and not isinstance(current, Unreviewable) and same_scope(scope_of(current), scope):
            self._view_item, self._picked = current, None
            return
        self._view_item = scope if isinstance(scope, (AtenCall, FunctionKey)) else Unreviewable(MAIN_GRAPH)
        self._picked = None
        if self._request():
            self.moved.emit(self.shown())

    def pick(self, scope: Scope | None, node: SceneNode | None) -> None:
        """A box was picked in the graph (None: the selection was cleared): a call box stands for its call."""
        if self.index is None:
            return
        if self._owners is None:
            self._owners = main_call_owners(self.index)
        self._picked = picked_object(scope, node, self._owners) if node is not None else None
        if self._request():
            self.moved.emit(self.shown())

    def jump_to_review(self, item: ReviewItem) -> None:
        """Show the body of a Review list item and target the item itself once it is shown."""
        body = item.body
        if body is None or not body.members:
            return
        self.pending_value = item.obj
        self._view_item, self._picked = body.members[0], None
        if not self._request(signature_tab=True):
            self._target_pending()
        self.moved.emit(self.shown())

    def _request(self, signature_tab: bool = False) -> bool:
        """Work out the body of what is shown, unless it is already (being) worked out; True when it changed."""
        obj, analyses = self.shown(), self.analyses
        if _same(obj, self._asked):
            return False
        self._asked, self.signature_tab = obj, signature_tab
        self._token += 1
        token = self._token
        self.selection, self.target = None, None
        if analyses is None or obj is None or isinstance(obj, (Unreviewable, ModuleNode)):
            self.why = (NO_MODEL if analyses is None else obj.why if isinstance(obj, Unreviewable) else
                        module_why(obj.path or "root") if isinstance(obj, ModuleNode) else MAIN_GRAPH)
            self.selection_changed.emit(None)
            self.target_changed.emit()
            return True
        self.why = "Analysing its family…"
        self.target_changed.emit()

        def done(selection: Selection | None) -> None:
            if token == self._token and analyses is self.analyses:
                self._selected(selection)

        def failed(reason: str) -> None:
            if token == self._token:
                self.why = f"Cannot analyse: {reason}"
                self.selection_changed.emit(None)
                self.target_changed.emit()

        self.jobs.run(lambda: analyses.selection(obj), done, failed)
        return True

    def _selected(self, selection: Selection | None) -> None:
        self.selection = selection
        if selection is None:
            self.why = "No ONNX body for this item: nothing to review."
            self.selection_changed.emit(None)
            self.target_changed.emit()
            return
        self.selection_changed.emit(selection)
        self._target_pending()
        self.selection_shown.emit(selection)

    def _target_pending(self) -> None:
        if self.selection is None:
            return
        pending, self.pending_value = self.pending_value, None
        self.set_target(pending if pending is not None else self.selection.analysis)

    # reviewing -------------------------------------------------------------------------------------------------
    def set_target(self, obj: Reviewable) -> None:
        """Point the review target at the shown body or one of its specialised values (a click in the Signature
        tab); anything else leaves no target."""
        sel, store, analyses, index = self.selection, self.reviews, self.analyses, self.index
        self.target = None
        if store is None:
            self.why = f"Reviews disabled: {self.review_error}" if self.review_error else NO_MODEL
        elif sel is None or analyses is None or index is None:
            self.why = MAIN_GRAPH
        else:
            self.target = find_target(analyses, index, store, sel, obj)
            self.why = "" if self.target is not None else "Not a reviewable item of the body shown."
        self.target_changed.emit()

    def target_text(self) -> str:
        """The review bar's line: the target (a value with its place, or the overload), or why there is none."""
        if self.index is not None and self.reviews is None and self.review_error:
            return f"Reviews disabled: {self.review_error}"
        if self.target is None or self.selection is None:
            return self.why
        return target_label(self.target, self.selection)

    def value_reviews(self, sel: Selection) -> dict[int, Review]:
        """Each specialised value's review in ``sel``'s body, by ``id`` of the value (none without a review store)."""
        if self.reviews is None or self.analyses is None or self.index is None:
            return {}
        return value_reviews(self.analyses, self.index, self.reviews, self.carried, sel)

    def target_review(self) -> Review | None:
        """The target's review as the Review list shows it (its own, else one carried over: ``shown_review``)."""
        if self.target is None:
            return None
        key = self.target.item.key
        return shown_review(self.target.store.get(key), self.carried.get(key))

    def set_review(self, status: str, note: str) -> None:
        """Record a review of the target and save the sidecar at once (atomically); a failure is reported."""
        target = self.target
        if target is None or target.store is not self.reviews or target.index is not self.index:
            self.target = None  # a target from another model never writes (and the bar forgets it)
            self.target_changed.emit()
            return
        item, store = target.item, target.store
        try:
            store.set(item.key, status, note, reviewed_value(item.obj), template_siblings(item.family, item.key))
        except (InspectorError, OSError, ValueError) as e:
            self.message.emit(f"Review not saved: {e}", 0)
            self.review_failed.emit(str(e))
            return
        review = store.get(item.key)
        if any(k.family == item.key.family for k in self.carried):  # what they carry may be this review, of a body
            # still in the model (``check``: the bodies that came after it), so they follow it as ``check`` would
            families = list({id(i.family): i.family for i, _r in self.review_list}.values())
            self.carried = carried_reviews(check_model(target.index, store, families).items)
        self.review_list = [(i, shown_review(store.get(i.key), self.carried.get(i.key))) for i, _r in self.review_list]
        self.badges = badges(self.review_list, self.index)
        self.target_changed.emit()
        self.reviews_changed.emit()
        self.message.emit(f"Marked {status}: {item.label}", 4000)
        self.review_saved.emit(item.key, review)

    def list_reviews(self) -> None:
        """Analyse every family off the GUI thread, then list every reviewable item (once per model)."""
        analyses, store = self.analyses, self.reviews
        self.listing_pending = False
        if analyses is None or store is None:
            return

        def done(result: tuple[list[tuple[ReviewItem, Review]], dict[int, BadgeCounts],
                               dict[ReviewKey, Review]]) -> None:
            if analyses is not self.analyses:
                return
            self.review_list, self.badges, self.carried = result
            self.listed = True
            self.reviews_changed.emit()
            self.reviews_listed.emit(len(self.review_list))

        self.jobs.run(lambda: review_items(analyses, store), done, lambda reason: self.message.emit(reason, 0),
                      priority=-1)  # after layouts and selections
