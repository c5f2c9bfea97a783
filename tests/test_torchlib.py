"""The torchlib source tab: shown when onnxscript is installed, a clear None otherwise (never a crash)."""

from __future__ import annotations

import importlib.util

import pytest

from inspector.core.aten.torchlib_source import torchlib_functions


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None, reason="onnxscript (optional) not installed")
def test_trace_only_transpose_source():
    functions = torchlib_functions("aten::transpose.int")
    assert functions
    assert any(f.trace_only and "def aten_transpose" in f.source for f in functions)


def test_without_onnxscript_returns_none(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name.startswith("onnxscript"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    assert torchlib_functions("aten::transpose.int") is None
