"""Weights held as external data are compared by their bytes where the two exports' references differ: two exports of
one model name their weights files after themselves (``a.onnx.data``, ``b.onnx.data``), so every reference differs
however equal the weights are, and CLIP saved so read twenty weights "re-valued" for the one a test changed. Bytes are
read only from inside each model's folder, never through a symbolic link; what cannot be read is a change, as
before. Truth: the values this test changes, with numpy, in copies of a zoo export."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from inspector.core.diff import diff_files
from tests.conftest import ZOO


def _save(model: onnx.ModelProto, path: Path, location: str) -> None:
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=64)


def _pair(folder: Path, delta: float = 0.0) -> tuple[Path, Path, np.ndarray]:
    """``a.onnx`` with ``a.onnx.data`` and ``b.onnx`` with ``b.onnx.data`` of the zoo's ViT; ``delta`` added to one
    value of one weight in B; the weight's values in A."""
    _save(onnx.load(str(ZOO / "vit.onnx")), folder / "a.onnx", "a.onnx.data")
    model = onnx.load(str(ZOO / "vit.onnx"))  # (a save moves the tensors it writes out of the model: a fresh copy)
    name = max(model.graph.initializer, key=lambda t: np.prod(t.dims)).name  # (a weight: held externally)
    (tensor,) = [t for t in model.graph.initializer if t.name == name]
    old = numpy_helper.to_array(tensor)
    if delta:
        new = old.copy()
        new.flat[3] += delta
        tensor.CopyFrom(numpy_helper.from_array(new, name))
    _save(model, folder / "b.onnx", "b.onnx.data")
    return folder / "a.onnx", folder / "b.onnx", old


def test_equal_weights_in_files_of_other_names_are_no_change(tmp_path: Path):
    a, b, _old = _pair(tmp_path)
    externals = [t for t in onnx.load(str(a), load_external_data=False).graph.initializer
                 if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(externals) > 10  # (the case: many weights, each referenced by its own file's name)
    d = diff_files(a, b)
    assert d.equal or d.equivalent, [c.detail for c in d.changes]
    assert not [c for c in d.changes if c.section == "initializer"]


def test_a_changed_weight_is_the_one_change_with_where_it_differs(tmp_path: Path):
    a, b, old = _pair(tmp_path, delta=0.5)
    d = diff_files(a, b)
    (change,) = d.changes
    assert change.kind == "initializer_revalued"
    index = [int(i) for i in np.unravel_index(3, old.shape)]
    assert change.detail.endswith(f"1 of {old.size} values differ, the most at {index}: "
                                  f"{np.float32(old.flat[3])!s} -> {np.float32(old.flat[3] + np.float32(0.5))!s}"), \
        change.detail
    assert "@a.onnx.data+" in change.detail and "@b.onnx.data+" in change.detail


def _referring(model: onnx.ModelProto, location: str, path: Path) -> Path:
    """``model`` saved at ``path`` with every external tensor's location set to ``location``."""
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    onnx.save(model, str(path))
    return path


def test_weights_outside_the_folder_or_behind_a_link_are_not_read(tmp_path: Path):
    """B's references point outside its folder, then through a symbolic link, to bytes equal to A's: never read, so
    its weights are changes (they cannot be compared), as they were before any were read."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, _b, _old = _pair(tmp_path / "a")
    model = onnx.load(str(a), load_external_data=False)
    os.symlink(tmp_path / "a" / "a.onnx.data", tmp_path / "b" / "linked.data")
    for location, name in (("../a/a.onnx.data", "out.onnx"), ("linked.data", "linked.onnx")):
        d = diff_files(a, _referring(model, location, tmp_path / "b" / name))
        assert [c for c in d.changes if c.kind == "initializer_revalued"], location
