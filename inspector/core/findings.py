"""Findings: problems in a model reported to the user instead of crashing on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing worth a reviewer's attention, e.g. a call to a function that is not in the model."""

    kind: str  # "missing_function", "missing_overload", "recursion", "unknown_operator", "custom_domain", ...
    severity: str
    message: str
    where: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "message": self.message, "where": list(self.where)}
