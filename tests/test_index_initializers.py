"""What an index reads of the initializers, read once for all who ask: the parameter statistics and the external-data
files an output may never replace come from one pass (a report asks for both: each pass cost 0.015-0.02 s at 100k
nodes), and the graph inputs that are not initializers take the initializers' names from the graph maps once read."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from inspector.core.model import index as index_module
from inspector.core.model.index import open_index
from inspector.core.util.paths import model_files
from tests.conftest import FIXTURES, ROOT

MODELS = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")), *sorted(FIXTURES.glob("*.onnx")),
          FIXTURES / "external" / "model.onnx"]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.parent.name + "/" + p.name)
def test_external_files_and_user_inputs_are_those_the_definitions_give(path: Path) -> None:
    index = open_index(path)
    g = index.proto.graph
    external = onnx.TensorProto.EXTERNAL
    locations = sorted({e.value for t in g.initializer if t.data_location == external
                        for e in t.external_data if e.key == "location"})
    assert index.protected_files() == model_files(index.path, locations)
    names = {t.name for t in g.initializer}
    expected = [v.name for v in g.input if v.name not in names]
    assert index.user_inputs() == expected  # maps read or not: the same
    index.graph_maps()
    assert index.user_inputs() == expected


def test_parameters_and_external_files_come_from_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "external" / "model.onnx"
    passes: list[int] = []
    real = index_module._initializer_facts

    def counted(g: onnx.GraphProto) -> object:
        passes.append(len(g.initializer))
        return real(g)

    monkeypatch.setattr(index_module, "_initializer_facts", counted)
    for first in ("parameters", "protected_files"):
        passes.clear()
        index = open_index(path)
        getattr(index, first)()
        params, files = index.parameters(), index.protected_files()
        assert len(passes) == 1, first
        assert params.external_bytes > 0 and path.parent / "weights.bin" in files
