"""diff names the aten argument a changed value came from, with its value in each export: checked on the zoo pairs
against the arguments torch bound (the truth files), for flat and folded exports, in both directions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.core.diff import ArgChange, Change, diff_dict, diff_files
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index

ZOO = Path(__file__).resolve().parent / "zoo"

# pair -> (the aten target its hyperparameter flows into, the argument, the family the diff reports it under)
PAIRS = {
    "eps": ("aten::layer_norm", "eps", "aten::layer_norm"),
    "transpose": ("aten::transpose.int", "dim1", "aten::transpose"),
    "scale": ("aten::scaled_dot_product_attention", "scale", "aten::scaled_dot_product_attention"),
    "heads": ("aten::view", "size", "aten::view"),
}


def _truth(name: str) -> dict[str, Any]:
    return json.loads((ZOO / f"{name}.truth.json").read_text("utf-8"))


def _torch_args(name: str, target: str, parameter: str) -> dict[str, Any]:
    """FX node name -> the value torch bound to ``parameter`` in each call of ``target``."""
    return {n["name"]: n["args"][parameter] for n in _truth(name)["fx_nodes"] if n["target"] == target}


def _values(changes: list[Change]) -> list[Change]:
    return [c for c in changes if c.kind == "value_changed"]


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("reverse", [False, True], ids=["a-b", "b-a"])
def test_a_pair_names_the_argument_with_the_values_torch_bound(pair: str, reverse: bool):
    target, parameter, family = PAIRS[pair]
    a, b = (f"pair_{pair}_b", f"pair_{pair}_a") if reverse else (f"pair_{pair}_a", f"pair_{pair}_b")
    args_a, args_b = _torch_args(a, target, parameter), _torch_args(b, target, parameter)
    differing = {name for name in args_a if args_a[name] != args_b.get(name)}
    assert differing  # the hyperparameter reaches this argument (torch side)
    d = diff_files(ZOO / f"{a}.onnx", ZOO / f"{b}.onnx")
    named = [c for c in _values(d.changes) if c.arguments]
    # every call whose argument torch bound differently is a site of a change naming exactly that argument
    assert {s for c in named for s in c.sites} == differing
    for c in named:
        assert c.family == family
        for site in c.sites:
            assert c.arguments == (ArgChange(parameter, args_a[site], args_b[site]),)
        old, new = ("None" if v is None else str(v) for v in (c.arguments[0].old, c.arguments[0].new))
        assert c.detail.startswith(f"{parameter} (")
        # the argument's values follow the value's, unless they read the same (eps: the epsilon itself; heads:
        # the view's size, the Reshape's shape): then the label names it alone
        if pair in ("eps", "heads"):
            assert c.detail.endswith(f"): {old} -> {new}") and "; " not in c.detail
        else:
            assert c.detail.endswith(f"; {parameter}: {old} -> {new}")
    # values the argument did not change are not said to come from a changed argument
    assert all(not c.arguments for c in _values(d.changes) if not set(c.sites) & differing)


def test_transpose_names_dim1_alone_not_dim0():
    d = diff_files(ZOO / "pair_transpose_a.onnx", ZOO / "pair_transpose_b.onnx")
    (change,) = d.changes
    assert change.detail == "dim1 (Transpose.perm): [0, 2, 1, 3] -> [0, 3, 2, 1]; dim1: 2 -> 3"
    assert sorted(change.sites) == ["transpose", "transpose_1", "transpose_2", "transpose_3"]


def test_heads_pair_default_scale_is_linked_but_no_argument_changed():
    """The SDPA scale changes with the head dim while ``scale`` stays at its default (None) in both exports: the
    label names the argument it derives from, and no argument change is claimed."""
    d = diff_files(ZOO / "pair_heads_a.onnx", ZOO / "pair_heads_b.onnx")
    scale = [c for c in _values(d.changes) if isinstance(c.old, float)]
    assert [(c.detail, c.arguments) for c in scale] == [("scale (Mul.B): 0.5 -> 0.59460354", ())]
    reshapes = [c for c in _values(d.changes) if c.family == "aten::scaled_dot_product_attention"
                and isinstance(c.old, list)]
    assert reshapes and all(not c.arguments and c.detail.startswith("Reshape.shape") for c in reshapes)


def test_the_text_json_and_markdown_name_the_argument(capsys):
    a, b = ZOO / "pair_scale_a.onnx", ZOO / "pair_scale_b.onnx"
    assert main(["diff", str(a), str(b)]) == 1
    text = capsys.readouterr().out
    assert "scale (Mul.B): 0.59460354 -> 0.5477226; scale: None -> 0.3" in text
    assert main(["diff", str(a), str(b), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    named = [c for c in data["changes"] if "arguments" in c]
    assert named and all(c["arguments"] == [{"parameter": "scale", "old": None, "new": 0.3}] for c in named)
    assert all("arguments" not in c for c in data["changes"] if c["kind"] != "value_changed")
    for fmt in ("md", "html"):  # (pages write the arrow as the app does; they read "-&gt;", ">" escaped, before)
        assert main(["diff", str(a), str(b), "--format", fmt]) == 1
        assert "scale (Mul.B): 0.5 → 0.5477226; scale: None → 0.3" in capsys.readouterr().out


def test_flat_and_folded_exports_alike(tmp_path: Path):
    folded = {}
    for half in ("a", "b"):
        model, _ = fold_model(open_index(ZOO / f"pair_transpose_{half}.onnx"))
        folded[half] = tmp_path / f"{half}.onnx"
        folded[half].write_bytes(model.SerializeToString())
    flat_folded = diff_files(ZOO / "pair_transpose_a.onnx", folded["b"])
    both_folded = diff_files(folded["a"], folded["b"])
    want = (ArgChange("dim1", 2, 3),)
    for d in (flat_folded, both_folded):
        named = [c for c in _values(d.changes) if c.arguments]
        assert named and all(c.arguments == want for c in named)
        assert all(c.detail.startswith("dim1 (Transpose.perm): [0, 2, 1, 3] -> [0, 3, 2, 1]") for c in named)
    assert diff_dict(both_folded)["changes"]
