"""What a model's reviews say of the body each change of a diff is in: the compare window's change details and the
report with a diff (its Changes table) both show it.

Why: a re-export compared with the model that was reviewed showed its changes without a word of the reviews. Swin
exported again with another ``layer_norm_eps``: its changed ``LayerNormalization.epsilon`` had been marked ok in A,
with a note that said why; to read it the user went back to the main window and looked the body up again, and the
report handed to the model's owner said nothing of it at all.

Only reviews of the body itself count (its overload, and its specialised values), as the sidecar holds them by
fingerprint: what ``check`` carries over from earlier bodies is the Review panel's and the Reviews section's to
show. A changed initializer or input is said of the body of the first call that reads it (``diff.scopes``). The
sidecar is only read; a sidecar that cannot be read gives no reviews (whoever opened the model says why). Notes and
values come from the sidecar and the model (untrusted): each renderer escapes them where it shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from inspector.core.diff.model import Change
from inspector.core.diff.scopes import READ, calls_by_name, scope_for
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.review.store import Review, ReviewStore, review_keys
from inspector.core.specialise.categories import short_where, value_text
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, Member, SpecialisedValue, Specialiser
from inspector.core.util.errors import InspectorError

__all__ = ["SECTIONS", "Reviewed", "reviewed_place", "reviews_of_changes", "reviews_of_diff"]

Reviewed = list[tuple[str, Review]]  # (what was reviewed: "body" or a value's place and value, its review)
# changes whose scope is a call or a function (a body that may be reviewed), or a value a call reads (its first reader)
SECTIONS = ("aten_call", "function", *READ)


def reviewed_place(change: Change) -> str:
    """Which body a change's reviews are of, as a reader is told: the one the change is in, or for a value, the one
    of the first call that reads it."""
    return "the body of the first call that reads it" if change.section in READ else "the body this change is in"


def reviews_of_diff(index: ModelIndex, changes: Sequence[Change],
                    store: ReviewStore | None = None) -> dict[int, Reviewed]:
    """``reviews_of_changes`` with each change's scope looked up in ``index`` (the diff's side A), its calls by name
    and graph maps made only where the sidecar holds a review."""
    by_name: dict[str, AtenCall] | None = None

    def scope_of(change: Change) -> object:
        nonlocal by_name
        if by_name is None:
            by_name = calls_by_name(index)
        maps = index.graph_maps() if change.section in READ else None
        return scope_for(index, change, by_name, maps)

    return reviews_of_changes(index, changes, scope_of, store)


def reviews_of_changes(index: ModelIndex, changes: Sequence[Change], scope_of: Callable[[Change], object],
                       store: ReviewStore | None = None) -> dict[int, Reviewed]:
    """For each change (by ``id``) whose scope in ``index`` (``scope_of``: the change's call or function there, for a
    value the first call that reads it) is in a body with reviews in ``store`` (default: the model's sidecar): those
    reviews, the body's first. Scopes are looked up only where the sidecar holds a review; each family is analysed
    once."""
    if store is None:
        store = ReviewStore(index.path)
    try:
        len(store)  # (loads the sidecar if nobody has; never writes)
    except InspectorError:
        return {}
    if not any(r.status != "unreviewed" for _k, r in store.items()):
        return {}
    specialiser = Specialiser(index)
    analyses: dict[int, FamilyAnalysis] = {}
    said: dict[int, Reviewed] = {}  # per body (by ``id``): the changes of one body share its reviews
    out: dict[int, Reviewed] = {}
    for change in changes:
        if change.section not in SECTIONS:
            continue
        scope = scope_of(change)
        analysis = _analysis(index, specialiser, analyses, scope)
        if analysis is None:
            continue
        bodies = analysis.bodies_of([cast(Member, scope)])
        if not bodies:
            continue
        found = said.get(id(bodies[0]))
        if found is None:
            found = said[id(bodies[0])] = _reviewed(store, analysis, bodies[0])
        if found:
            out[id(change)] = found
    return out


def _analysis(index: ModelIndex, specialiser: Specialiser, analyses: dict[int, FamilyAnalysis],
              scope: object) -> FamilyAnalysis | None:
    if isinstance(scope, AtenCall):
        ns, name, _overload = scope.family
        fam = index.family("aten_call", ns, name)
    elif isinstance(scope, FunctionKey):
        fam = index.family("function", scope.domain, scope.name)
    else:
        return None
    if fam is None:
        return None
    known = analyses.get(id(fam))
    if known is None:
        known = analyses[id(fam)] = specialiser.analyse(fam)
    return known


def _reviewed(store: ReviewStore, analysis: FamilyAnalysis, body: BodyAnalysis) -> Reviewed:
    values = {id(s) for s in body.specialised}
    out: Reviewed = []
    for key, obj in review_keys(analysis):
        if obj is body:
            what = "body"
        elif isinstance(obj, SpecialisedValue) and id(obj) in values:
            what = f"{short_where(obj)} = {value_text(obj.literal.value)}"
        else:
            continue
        review = store.get(key)
        if review.status != "unreviewed":
            out.append((what, review))
    return out
