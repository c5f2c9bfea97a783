"""With a checkpoint (``core.util.progress``), the pair cut's passes over a whole side run ``STEP`` nodes at a time,
the checkpoint after each (the app passes its job's: one C loop over 100k nodes held the interpreter 165-370 ms while
the GUI thread waited). Stepped or not, they give the same: the producer of every value, and the diff of an edited
pair."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from inspector.core.diff import follow
from inspector.core.diff.run import diff_models
from inspector.core.model.index import build_index
from inspector.core.model.loader import load_model
from inspector.report.diff_render import render_diff

ZOO = Path(__file__).resolve().parent / "zoo"


def _naive_producers(nodes: list[onnx.NodeProto]) -> dict[str, int] | None:
    out: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in node.output:
            if name:
                if name in out:
                    return None
                out[name] = i
    return out


@pytest.mark.parametrize("step", [1, 3, 64, follow.STEP])
@pytest.mark.parametrize("name", ["llama_gqa", "bert_noopt", "whisper"])
def test_producers_in_steps_are_every_value_s_producer(monkeypatch, name: str, step: int):
    monkeypatch.setattr(follow, "STEP", step)
    nodes = list(onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False).graph.node)
    steps: list[int] = []
    assert follow._producers(nodes, lambda done, total: steps.append(done)) == _naive_producers(nodes)
    assert steps == [min(k + step, len(nodes)) for k in range(0, len(nodes), step)]
    assert follow._producers(nodes) == _naive_producers(nodes)  # without a checkpoint: one loop
    twice = [*nodes, nodes[len(nodes) // 2]]  # a value made twice: no map
    assert follow._producers(twice, lambda done, total: None) is None and follow._producers(twice) is None


def test_an_edited_pair_diffs_the_same_in_steps_of_three(monkeypatch, tmp_path: Path):
    model = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    for init in model.graph.initializer:  # one small constant changed under its name
        if init.data_type == onnx.TensorProto.INT64 and len(init.int64_data) == 0 and init.raw_data \
                and len(init.raw_data) == 8:
            init.raw_data = (int.from_bytes(init.raw_data, "little", signed=True) + 1).to_bytes(8, "little",
                                                                                               signed=True)
            break
    b = tmp_path / "b.onnx"
    onnx.save(model, str(b))

    checked: list[int] = []

    def diff(progress: Callable[[int, int], None] | None) -> str:
        ia = build_index(load_model(ZOO / "llama_gqa.onnx"))
        ib = build_index(load_model(b), like=ia)
        assert follow.cut_pair(ia, ib)[2] is not None  # cut as a pair, the loops above run
        return render_diff(diff_models(ia, ib, progress=progress), "json")

    whole = diff(None)
    monkeypatch.setattr(follow, "STEP", 3)
    assert diff(lambda done, total: checked.append(done)) == whole
    assert len(checked) > 30
    assert "\"equal\": false" in whole and "value_changed" in whole
