"""What model A's reviews say of the body each change of a comparison is in, for the change's details.

Why: a re-export compared with the model that was reviewed showed its changes without a word of the reviews. Swin
exported again with another ``layer_norm_eps``: its changed ``LayerNormalization.epsilon`` had been marked ok in A,
with a note that said why; to read it the user went back to the main window and looked the body up again.

Only reviews of the body itself count (its overload, and its specialised values), as the sidecar holds them by
fingerprint: what ``check`` would carry over from earlier bodies is the main window's to show. The sidecar is read
off the GUI thread with the pair, and a sidecar that cannot be read gives no reviews (the main window says why when
it opens the model). Notes and values come from the sidecar and the model (untrusted): they are escaped where shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from inspector.core.diff.model import Change
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.review.store import Review, ReviewStore, review_keys
from inspector.core.specialise.categories import short_where, value_text
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, Member, SpecialisedValue, Specialiser
from inspector.core.util.errors import InspectorError

Reviewed = list[tuple[str, Review]]  # (what was reviewed: "body" or a value's place and value, its review)
READ = ("initializer", "input")  # changes of a value that calls read: shown, and reviewed, where the first one reads it
# changes whose scope is a call or a function (a body that may be reviewed), or a value a call reads (its first reader)
SECTIONS = ("aten_call", "function", *READ)


def reviews_of_changes(index: ModelIndex, changes: Sequence[Change],
                       scope_of: Callable[[Change], object]) -> dict[int, Reviewed]:
    """For each change (by ``id``) whose scope in ``index`` (``scope_of``: the change's call or function there, for a
    value the first call that reads it) is in a body with reviews in the model's sidecar: those reviews, the body's
    first. Scopes are looked up only where the sidecar holds a review; each family is analysed once."""
    store = ReviewStore(index.path)
    try:
        store.load()
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
