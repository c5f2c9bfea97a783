"""What ``check`` carries over to a review item with no review of its own, as the app and the report show it.

A model exported again over itself keeps its sidecar, but its bodies have new fingerprints: no review applies to
them by key. ``check`` then looks for a review of the same slot on an earlier body (one the model no longer has, or
one it still has that was reviewed before this body appeared: ``check``'s module doc) and passes a value that is the
same as the one reviewed (``basis`` ``same_value``) or fails the item as ``changed`` (``earlier_body``). The app's
Review list and the report show those items as ``check`` decides them, from here: before, the app listed them
unreviewed while ``check`` passed or failed them, and the report said "reviewed before the values changed" of
sibling bodies in the same model (one of GPT-2's view bodies marked wrong made 7 items of the others read so), which
``check`` and the app left unreviewed.

The notes and values come from the sidecar and the model (untrusted); they are escaped wherever they are shown.
"""

from __future__ import annotations

from inspector.core.review.check import CheckItem
from inspector.core.review.store import Review, ReviewKey
from inspector.core.specialise.categories import value_text


def carried_items(checked: list[CheckItem]) -> dict[ReviewKey, CheckItem]:
    """The items of ``check_model`` whose status comes from a review of an earlier body, by key."""
    return {item.key: item for item in checked
            if item.basis == "same_value" or (item.basis == "earlier_body" and item.status == "changed")}


def carried_review(item: CheckItem) -> Review:
    """An item of ``carried_items`` as a review to show: the earlier review's status where the value is the same,
    else ``changed`` with what it was; the earlier review's note follows."""
    said = f": {item.note}" if item.note else ""
    if item.basis == "same_value":
        return Review(item.status, f"kept from an earlier body, same value{said}", value=item.reviewed_value)
    if item.key.kind == "value":
        was = f"was {value_text(item.reviewed_value)} when reviewed {item.review_status}"
    else:
        was = f"body changed since reviewed {item.review_status}" + "".join(
            f"; {c.where}: {value_text(c.old)} → {value_text(c.new)}" for c in item.changes)
    return Review("changed", was + said, value=item.reviewed_value)


def carried_reviews(checked: list[CheckItem]) -> dict[ReviewKey, Review]:
    """What ``check`` carried over to items with no review of their own, as reviews to show (``carried_review``).
    Which items get one does not change while the model is reviewed (a review written now records the model's bodies
    as its siblings); what one says does when the review it comes from, of a body still in the model, is changed."""
    return {key: carried_review(item) for key, item in carried_items(checked).items()}


def shown_review(own: Review, carried: Review | None) -> Review:
    """The review shown for an item: its own, else the one carried over from an earlier body."""
    return own if own.status != "unreviewed" or carried is None else carried
