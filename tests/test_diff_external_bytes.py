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


def _in_folder(folder: Path, delta: float = 0.0) -> tuple[Path, np.ndarray]:
    """The zoo's ViT as ``folder/model.onnx`` with its weights in ``folder/model.onnx.data`` (one name in every
    folder, as an export names it), ``delta`` added to one value of its largest weight; that weight's values."""
    folder.mkdir()
    model = onnx.load(str(ZOO / "vit.onnx"))
    tensor = max(model.graph.initializer, key=lambda t: np.prod(t.dims))
    old = numpy_helper.to_array(tensor)
    if delta:
        new = old.copy()
        new.flat[5] += delta
        tensor.CopyFrom(numpy_helper.from_array(new, tensor.name))
    _save(model, folder / "model.onnx", "model.onnx.data")
    return folder / "model.onnx", old


def test_two_folders_of_exports_with_one_weights_file_name_compare_their_bytes(tmp_path: Path):
    """Every reference of the two is alike (``model.onnx.data``, same offsets), and that said nothing: a weight
    changed in B's file read no change at all. The folder diff pairs them by path and says the same."""
    a, old = _in_folder(tmp_path / "a")
    b, _old = _in_folder(tmp_path / "b", delta=-0.25)
    (change,) = diff_files(a, b).changes
    assert change.kind == "initializer_revalued" and change.detail.endswith(
        f"the most at {[int(i) for i in np.unravel_index(5, old.shape)]}: {np.float32(old.flat[5])!s} -> "
        f"{np.float32(old.flat[5] - np.float32(0.25))!s}"), change.detail
    from inspector.core.diff.folders import diff_dirs

    (row,) = diff_dirs(tmp_path / "a", tmp_path / "b", jobs=1).rows
    assert (row.path, row.status, row.changes, row.kinds) == ("model.onnx", "different", 1,
                                                             {"initializer_revalued": 1})


def test_two_folders_without_their_weights_or_sharing_one_file_are_equal(tmp_path: Path):
    """Exports shared without their weights files cannot be compared by bytes: by their references, alike, as
    before; a weights file linked into both folders is one file, equal whatever it holds."""
    a, _old = _in_folder(tmp_path / "a")
    b, _old = _in_folder(tmp_path / "b", delta=1.0)
    (tmp_path / "b" / "model.onnx.data").unlink()
    assert diff_files(a, b).equal
    os.link(tmp_path / "a" / "model.onnx.data", tmp_path / "b" / "model.onnx.data")
    assert diff_files(a, b).equal


def test_a_weight_in_a_file_of_holes_is_not_read(tmp_path: Path, monkeypatch):
    """A hostile pair whose 1 GiB weight lies in files that are all holes (``truncate``: nothing on disk) would be read
    as zeros, a gigabyte a side: not compared (no byte read), so the references decide: a change."""
    from onnx import TensorProto, helper

    import inspector.core.model.tensors as tensors

    paths = []
    for side in "ab":
        weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 28], data_location=TensorProto.EXTERNAL)
        for key, value in (("location", f"{side}.data"), ("offset", "0"), ("length", str(1 << 30))):
            weight.external_data.add(key=key, value=value)
        graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 28])], [weight])
        onnx.save(helper.make_model(graph), str(tmp_path / f"{side}.onnx"))
        with open(tmp_path / f"{side}.data", "wb") as fh:
            fh.truncate(1 << 30)
        paths.append(tmp_path / f"{side}.onnx")
    read = []
    pread = os.pread
    monkeypatch.setattr(tensors.os, "pread", lambda fd, n, at: read.append(n) or pread(fd, n, at))
    (change,) = diff_files(*paths).changes
    assert change.kind == "initializer_revalued" and not [n for n in read if n >= tensors.COMPARED_CHUNK]


def test_each_weights_file_is_opened_once_and_descriptors_stay_few(tmp_path: Path, monkeypatch):
    """Thousands of weights in one file: the file is opened once a side (each weight resolved and opened both files
    again: 3.3 s of a stripped 100k-node replica's diff), and a model with a file per weight keeps a bounded number
    open at once, whatever the count, and still finds the one weight that differs."""
    import inspector.core.model.tensors as tensors

    opened: list[str] = []
    real = tensors.open_regular

    def counting(path, *args, **kwargs):
        opened.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(tensors, "open_regular", counting)
    a, b, _old = _pair(tmp_path)
    assert diff_files(a, b).equal
    assert sorted(opened) == ["a.onnx.data", "b.onnx.data"]
    # one file per weight, in each of two folders, B's last weight changed
    model = onnx.load(str(ZOO / "vit.onnx"))
    weights = [t.name for t in model.graph.initializer if np.prod(t.dims) >= 16]
    monkeypatch.setattr(tensors.ExternalFiles, "KEPT_OPEN", 4)  # (of ViT's 20 files a side)
    assert len(weights) > 4 * tensors.ExternalFiles.KEPT_OPEN
    for side, delta in (("a", 0.0), ("b", 0.25)):
        (tmp_path / side).mkdir()
        m = onnx.load(str(ZOO / "vit.onnx"))
        (last,) = [t for t in m.graph.initializer if t.name == weights[-1]]
        values = numpy_helper.to_array(last).copy()
        values.flat[0] += delta
        last.CopyFrom(numpy_helper.from_array(values, last.name))
        onnx.save(m, str(tmp_path / side / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=False,
                  size_threshold=64)
    opened.clear()
    descriptors = len(os.listdir("/proc/self/fd"))
    most = [0]
    close = tensors.ExternalFiles.close

    def watching(self):
        most[0] = max(most[0], len(os.listdir("/proc/self/fd")) - descriptors)
        close(self)

    monkeypatch.setattr(tensors.ExternalFiles, "close", watching)
    changes = diff_files(tmp_path / "a" / "m.onnx", tmp_path / "b" / "m.onnx").changes
    assert [(c.kind, c.where) for c in changes] == [("initializer_revalued", weights[-1])]
    assert len(opened) >= 2 * len(weights) and 0 < most[0] <= 2 * tensors.ExternalFiles.KEPT_OPEN
