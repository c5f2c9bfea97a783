"""The left side of the main window: the filter box over the Functions tree, the Modules tree, the Review list and
Search, as tabs. It follows the session: a new model fills the trees (rows made off the GUI thread), a move made
elsewhere (the graph, search, the Review list) selects the row of what is now shown, and review counts become the
tree's badges. A row the user picks is announced as ``chosen``; a row selected to follow the session is not."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Signal
from PySide6.QtWidgets import QHeaderView, QTabWidget, QVBoxLayout, QWidget

from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.scan import TORCH_PRODUCER
from inspector.core.util.textsafe import one_line
from inspector.gui.analysis import TreeObject
from inspector.gui.distinct import use_distinct_elision
from inspector.gui.family_model import FamilyFilter, FamilyModel, FamilyTree, Matches
from inspector.gui.filtering import FilterBox
from inspector.gui.module_model import SHOWN_MATCHES, ModuleModel, module_matches, object_of
from inspector.gui.review_panel import ReviewPanel
from inspector.gui.search_panel import SearchPanel
from inspector.gui.session import Session
from inspector.gui.widgets import HintedTreeView
from inspector.gui.worker import Jobs

# call rows a filter opens its overloads for (the calls it found by name or module path), at most: a 100k-node export's
# "layers.1" keeps calls of most overloads, up to ``family_model.CAP`` rows each
OPENED_CALL_ROWS = 1000


class Trees(QWidget):
    """Functions, Modules, Review and Search tabs (``tabs``) under the functions filter box."""

    chosen = Signal(object)  # TreeObject: a row picked by the user in the Functions or Modules tree

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.families = FamilyModel()
        self.family_filter = FamilyFilter()
        self.family_filter.setSourceModel(self.families)
        self.filter_box = FilterBox(self.family_filter)
        self._expanded: list[object] = []  # the rows expanded before a filter (clearing it expands them again)
        self.filter_box.changing.connect(self._filter_changing)
        self.filter_box.changed.connect(self._filter_changed)
        self.family_view = HintedTreeView(self._families_hint)
        self.family_view.setModel(self.family_filter)
        self.family_view.setUniformRowHeights(True)
        self.family_view.setIndentation(12)  # call rows are two levels deep: 16 px more for their names
        self.family_names = use_distinct_elision(self.family_view)  # siblings share a module path: keep what differs
        header = self.family_view.header()  # names take the room left by the counts, so Review stays visible
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)  # fitted per model (_fit_counts)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(2, 100)  # "3 spec · 6 open", fitted to the widest badge (_fit_review)
        self.family_view.selectionModel().currentChanged.connect(self._family_selected)
        self.module_view = HintedTreeView(self._modules_hint)
        self.module_view.setUniformRowHeights(True)
        self.module_names = use_distinct_elision(self.module_view)
        self.review_panel = ReviewPanel()
        self.search_panel = SearchPanel()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.family_view, "Functions")
        self.tabs.addTab(self.module_view, "Modules")
        self.tabs.addTab(self.review_panel, "Review")
        self.tabs.addTab(self.search_panel, "Search")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.filter_box)
        lay.addWidget(self.tabs)
        self._following = False  # rows selected to follow the session are not the user's choice
        self._scroll_pending = False  # the functions tree followed while hidden: scroll to its row when shown
        self._modules_pending = False  # the filter changed while the Modules tab was hidden: filter it when shown
        self._module_token = 0  # (a newer filter, or model, makes a running module match stale)
        self._module_jobs = Jobs()
        self.shown_matches = SHOWN_MATCHES  # matching modules the filtered tree expands its way down to
        self.tabs.currentChanged.connect(self._tab_shown)
        session.model_loaded.connect(self._set_index)
        session.moved.connect(self.follow)
        session.reviews_changed.connect(self._reviews_changed)
        session.target_changed.connect(lambda: self.review_panel.show_target(
            session.target.item.key if session.target is not None else None))

    def _set_index(self, index: ModelIndex) -> None:
        """Forget the previous model's filter, search and selection, then show ``index``'s rows."""
        self._expanded = []
        self.filter_box.set_now("")
        self.search_panel.set_index(None)
        self.search_panel.box.clear()
        self.family_view.clearSelection()
        self.tabs.setCurrentWidget(self.family_view)
        self.families.set_tree(self.session.tree or FamilyTree(index))
        self.family_view.expandToDepth(0)  # families show their overloads; calls are rows only once expanded
        self._fit_counts(index)
        modules = ModuleModel(index.provenance.module_root if index.provenance.has_provenance else None,
                              self.session.totals, self.session.call_totals)
        self.module_view.setModel(modules)
        self.module_view.expand(modules.index(0, 0))
        self.module_view.setColumnWidth(0, 220)
        self.module_view.selectionModel().currentChanged.connect(
            lambda cur, _prev: None if self._following or self.module_view.focusing else
            self.chosen.emit(object_of(cur)))
        self.search_panel.set_index(self.session.search)

    def _filter_changing(self, _text: str) -> None:
        """Before the rows change: remember what is expanded while nothing is filtered."""
        if self.family_filter.text:
            return
        view, proxy = self.family_view, self.family_filter
        rows = [proxy.index(r, 0) for r in range(proxy.rowCount())]
        rows += [proxy.index(r, 0, fam) for fam in rows if view.isExpanded(fam) for r in range(proxy.rowCount(fam))]
        self._expanded = [row.data(FamilyModel.ObjectRole) for row in rows if view.isExpanded(row)]

    def _filter_changed(self, text: str, matches: Matches | None) -> None:
        """The Review list takes the filter too (with the calls it keeps). The filter was cleared: expand the rows that
        were expanded before it (a reset collapsed them all), and keep the current row in view."""
        self.review_panel.set_filter(text, matches.call_ids if matches is not None else frozenset())
        self._modules_pending = True
        if self.tabs.currentWidget() is self.module_view:
            self._filter_modules()
        if text:
            if matches is not None:  # the overloads kept for some of their calls show those calls
                view, proxy = self.family_view, self.family_filter
                for row in self.families.matched_overloads(matches, OPENED_CALL_ROWS):
                    view.expand(proxy.mapFromSource(row.parent()))
                    view.expand(proxy.mapFromSource(row))
            return
        self.family_view.collapseAll()  # (what the filter opened too: as it was before the filter)
        for obj in self._expanded:
            src = self.families.index_of(obj)
            if src.isValid():
                self.family_view.expand(self.family_filter.mapFromSource(src))
        if self.family_view.currentIndex().isValid():
            self.family_view.scrollTo(self.family_view.currentIndex())

    def _filter_modules(self) -> None:
        """The Modules tree keeps what the filter keeps of it (``module_matches``, off the GUI thread), expanded down
        to its first matches; cleared, the tree is as it opened (its root expanded). Done when the tab is shown, not
        at each filter typed on another tab."""
        self._modules_pending = False
        modules = self.module_view.model()
        if not isinstance(modules, ModuleModel) or modules.root is None:
            return
        self._module_token += 1
        text = self.family_filter.text.strip().casefold()
        if not text:
            if modules.kept is not None:
                modules.set_kept(None)
                self.module_view.expand(modules.index(0, 0))
            return
        token, root, shown = self._module_token, modules.root, self.shown_matches
        self._module_jobs.run(lambda: module_matches(root, text, shown),
                              lambda got: self._show_modules(token, modules, *got))

    def _show_modules(self, token: int, modules: ModuleModel, kept: frozenset[int],
                      opened: list[tuple[ModuleNode, ModuleNode]]) -> None:
        if token != self._module_token or self.module_view.model() is not modules or modules.root is None:
            return  # (a newer filter, or another model)
        modules.set_kept(kept)
        rows = {id(modules.root): modules.index(0, 0)}  # each opened module's row, found from its parent's
        self.module_view.expand(rows[id(modules.root)])
        for above, node in opened:
            parent = rows.get(id(above))
            row = modules.child_index(parent, above, node) if parent is not None else QModelIndex()
            if row.isValid():
                rows[id(node)] = row
                self.module_view.expand(row)

    def _reviews_changed(self) -> None:
        self.review_panel.set_items(self.session.review_list, self.session.listed)
        self.families.set_badges(self.session.badges)
        self._fit_review()

    def _families_hint(self) -> str:
        """Why the functions tree has no rows."""
        index = self.session.index
        if index is None:
            return "Open a model (File › Open, or drop a file here) to see its local functions and aten calls."
        if self.family_filter.text:
            return f"No function, overload or aten call matches “{self.family_filter.text}”."
        if index.provenance.has_provenance:
            return "No local functions or aten calls in this model."
        return (f"No local functions or aten calls: this model carries no pkg.torch.onnx metadata ({_made_by(index)}), "
                "so its nodes cannot be grouped by the aten call they came from. The graph, node details, search and "
                "diff work as usual.")

    def _modules_hint(self) -> str:
        """Why the modules tree has no rows."""
        if self.session.index is None:
            return "Open a model to see the PyTorch modules its nodes came from."
        model = self.module_view.model()
        if isinstance(model, ModuleModel) and model.kept is not None and model.root is not None:
            return f"No module's path or class matches “{self.family_filter.text}”."
        return ("No module tree: this model carries no pkg.torch.onnx metadata, which names the module each node "
                f"came from ({_made_by(self.session.index)}).")

    def _fit_counts(self, index: ModelIndex) -> None:
        """Size the Calls column to its widest text: a family's count, or a call's node count. Qt's
        ResizeToContents measured every shown row again on each change (4x the work of expanding 500 calls)."""
        model, metrics = self.families, self.family_view.fontMetrics()
        texts = ["Calls", *(["99 nodes"] if index.provenance.calls else []),
                 *(model.index(r, 1).data() for r in range(model.rowCount()))]
        self.family_view.header().resizeSection(1, max(metrics.horizontalAdvance(t) for t in texts) + 16)

    def _fit_review(self) -> None:
        """Size the Review column to its widest badge (family and overload rows): at a fixed 100 px, "18 spec · 10
        open" read "18 spec…10 open"; the names column takes what is left."""
        model, metrics = self.families, self.family_view.fontMetrics()
        rows = [model.index(r, 0) for r in range(model.rowCount())]
        rows += [model.index(r, 0, fam) for fam in rows for r in range(model.rowCount(fam))]
        texts = ["Review", *(str(i.siblingAtColumn(2).data() or "") for i in rows)]
        self.family_view.header().resizeSection(2, max(metrics.horizontalAdvance(t) for t in texts) + 16)

    def module_total(self, node: ModuleNode) -> int:
        """Nodes in a module and its submodules, as the modules tree counted them (off the GUI thread)."""
        model = self.module_view.model()
        return model.total(node) if isinstance(model, ModuleModel) else node.total_nodes()

    def module_calls(self, node: ModuleNode) -> int:
        """Aten calls of a module and its submodules, as counted off the GUI thread."""
        model = self.module_view.model()
        return model.calls(node) if isinstance(model, ModuleModel) else node.total_calls()

    def _family_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self.filter_box.filtering or self._following or self.family_view.focusing:  # rows came and went, the tree
            return  # follows, or the focus came in: no choice
        self.chosen.emit(current.siblingAtColumn(0).data(FamilyModel.ObjectRole))

    def _source_of(self, member: TreeObject) -> QModelIndex:
        """The row of an AtenCall, a FunctionKey's overload, a Family or an Overload (a call's row is made if it
        has none yet); invalid when it has none."""
        target = member
        index = self.session.index
        if isinstance(member, FunctionKey) and index is not None:
            target = next((o for fam in index.families for o in fam.overloads if o.function == member), None)
        return self.families.index_of(target)

    def select(self, member: TreeObject) -> bool:
        """Select (as the user would) the row of ``member``, clearing the filter if it hides the row."""
        src = self._source_of(member)
        if not src.isValid():
            return False
        proxy = self.family_filter.mapFromSource(src)
        if not proxy.isValid():
            self.filter_box.set_now("")
            proxy = self.family_filter.mapFromSource(src)
        self.tabs.setCurrentWidget(self.family_view)
        self.family_view.scrollTo(proxy)
        unchanged = self.family_view.currentIndex() == proxy
        self.family_view.setCurrentIndex(proxy)  # selects the row alone, even when it was current already
        if unchanged:  # no change of row to announce it: announce it here
            self.chosen.emit(proxy.data(FamilyModel.ObjectRole))
        return True

    def _tab_shown(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.search_panel:  # (clicked to: what is typed next is a search)
            self.search_panel.focus()
        if self._modules_pending and self.tabs.currentWidget() is self.module_view:
            self._filter_modules()
        if self._scroll_pending and self.tabs.currentWidget() is self.family_view:
            self._scroll_pending = False
            current = self.family_view.currentIndex()
            if current.isValid():
                self.family_view.scrollTo(current)

    def follow(self, shown: object) -> None:
        """What is shown changed elsewhere: the functions tree selects its row (none when it has no row, or the
        filter hides it), without announcing a choice."""
        current = self.family_view.currentIndex()
        if current.isValid() and current.data(FamilyModel.ObjectRole) is shown:
            return
        src = self._source_of(shown) if isinstance(shown, (AtenCall, FunctionKey)) else QModelIndex()
        proxy = self.family_filter.mapFromSource(src) if src.isValid() else QModelIndex()
        selection = self.family_view.selectionModel()
        self._following = True
        try:
            if proxy.isValid():
                flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
                selection.setCurrentIndex(proxy, flags)
                if self.tabs.currentWidget() is self.family_view:
                    self.family_view.scrollTo(proxy)
                else:  # a hidden tree scrolls when its tab is shown (a scroll of 100k rows' tree: 16 ms of a jump)
                    self._scroll_pending = True
            elif current.isValid():
                selection.clear()
        finally:
            self._following = False


def _made_by(index: ModelIndex) -> str:
    """Why a model may carry no pkg.torch.onnx metadata, as far as its producer says: a model of onnx's own test data
    (``onnx-caffe2``) read "a TorchScript export, or one whose metadata was removed". The producer's name is the
    model's text: made printable and short (the hint is drawn as plain text)."""
    facts = index.facts
    if facts.producer_name == TORCH_PRODUCER:
        return "a TorchScript export, or one whose metadata was removed"
    if not facts.producer_name:
        return "it names no producer"
    return f"made by {one_line(f'{facts.producer_name} {facts.producer_version}'.strip(), 60)}, not torch's exporter"
