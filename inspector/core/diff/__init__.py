"""Structural diff of two models: what changed between two exports, with renaming alone changing nothing.

Matching, in this order (names are only ever one of several keys, so a consistently renamed copy matches):

- local functions by key ``(domain, name, overload)``; left-overs within one family by template fingerprint;
- aten calls of flat exports by (target, FX node name, module path), then, where one side's calls are recognised
  by body template and the other's come from fx metadata, by the same nodes at the same place (``diff.sources``),
  then per target by position in module order (aligned on module path and body template, so an inserted call does
  not shift the others);
- calls of local functions in the main graph by callee and position among that callee's calls;
- the other main-graph nodes by neighbourhood hashes (op, domain, attribute names, the same of producers and
  consumers; two rounds, no recursion), unique hashes first, then by node name, then by op and position;
- initializers by name with equal content, then by dtype + shape + content digest under any name (the
  optimizer's value names shift between exports), then by name alone, then by the role they play (same input
  of matched, same-template calls). External data is never read: location/offset/length stand for the content;
- graph inputs and outputs by name, then by position.

Matched bodies (function overloads, aten call groups) are compared by fingerprint. Equal templates report the
*specialised values* that changed, slot by slot, with the aten arguments they came from by the evidence of
``specialise.links`` and the arguments' values in both calls (``dim1: 2 -> 3``); different templates report
node-level edits. Small initializers
baked into aten call bodies (the SDPA scale, Reshape shapes) are reported with their call, not as initializers.
A flat export and its fold (``fold.aten_fold``) are recognised: each aten call is compared with the body of
the function its folded call node calls, and the whole difference is one ``folded`` change (``equivalent``).
"""

from inspector.core.diff.bodies import align_nodes
from inspector.core.diff.cut import UnitKind
from inspector.core.diff.model import (
    CHANGE_KINDS,
    DIFF_FORMAT,
    DIFF_VERSION,
    EQUIVALENT_KINDS,
    SECTIONS,
    ArgChange,
    Change,
    ChangeKind,
    EditOp,
    FoldRelation,
    MatchCount,
    ModelDiff,
    NodeEdit,
    Section,
    diff_dict,
)
from inspector.core.diff.run import diff_files, diff_models
from inspector.core.diff.values import content_digest, show_value

__all__ = [
    "CHANGE_KINDS", "DIFF_FORMAT", "DIFF_VERSION", "EQUIVALENT_KINDS", "SECTIONS", "ArgChange", "Change", "ChangeKind",
    "EditOp", "FoldRelation", "MatchCount", "ModelDiff", "NodeEdit", "Section", "UnitKind", "align_nodes",
    "content_digest", "diff_dict", "diff_files", "diff_models", "show_value",
]
