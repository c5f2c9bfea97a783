"""Shared test helpers: fixture paths and in-memory model builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = ROOT / "resources" / "samples" / "sample_export.onnx"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
