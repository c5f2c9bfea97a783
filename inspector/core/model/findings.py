"""Findings: problems in a model reported to the user instead of crashing on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
FindingKind = Literal[
    "missing_function",  # a call to a function the model does not define
    "missing_overload",  # a call to an overload the model does not define (others of its family exist)
    "custom_operator",  # neither a standard op nor a local function
    "unknown_operator",  # a standard domain's op that is not in the ONNX operator set
    "duplicate_function",  # two functions with one key
    "recursion",  # functions that call themselves, directly or not
    "invalid_text",  # string fields that were not valid UTF-8
    "damaged_metadata",  # metadata that could not be parsed
    "aten_evidence",  # a local function whose evidence names two aten overloads (core/model/aten_functions.py)
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing worth a reviewer's attention, e.g. a call to a function that is not in the model."""

    kind: FindingKind
    severity: Severity
    message: str
    where: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "message": self.message, "where": list(self.where)}
