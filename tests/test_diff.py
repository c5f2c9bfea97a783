"""diff: structural diff of two exports; renaming changes nothing, a fold is equivalent, values are tied to calls."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from inspector.cli import main
from inspector.core.diff import Change, ModelDiff, diff_dict, diff_files
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import open_index
from inspector.report.diff_render import render_diff as render
from inspector.report.diff_text import diff_text
from tests.conftest import FIXTURES
from tests.gfm import shown, tags

BLOCK = FIXTURES / "dynamo_block.onnx"
H4 = FIXTURES / "dynamo_block_h4.onnx"
NOOPT = FIXTURES / "dynamo_block_noopt.onnx"
RENAMED = FIXTURES / "dynamo_block_renamed.onnx"
SDPA = "aten::scaled_dot_product_attention"


def _find(d: ModelDiff, kind: str, family: str | None = None) -> list[Change]:
    return [c for c in d.changes if c.kind == kind and (family is None or c.family == family)]


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


# --- exports of one model with a different head count --------------------------------------------------------------


def test_head_count_change_reports_the_sdpa_scale_and_reshape_shapes_per_family():
    d = diff_files(BLOCK, H4)
    assert not d.equal and not d.equivalent
    values = _find(d, "value_changed")
    assert {c.family for c in values} == {SDPA, "aten::view"}
    assert len(values) == len(d.changes)  # nothing else: same aten calls, weights and wiring
    (scale,) = [c for c in values if c.family == SDPA and isinstance(c.old, float)]
    assert math.isclose(scale.old, 0.5946, rel_tol=1e-3) and math.isclose(scale.new, 0.7071, rel_tol=1e-3)
    assert scale.detail.startswith("scale ")  # tied to SDPA's scale parameter (default 1/sqrt(E), split)
    assert sorted(scale.sites) == ["scaled_dot_product_attention", "scaled_dot_product_attention_1"]
    shapes = {(tuple(c.old), tuple(c.new)) for c in values if c.family == SDPA and isinstance(c.old, list)}
    assert shapes == {((1, 2, 8, 8), (1, 4, 4, 8)), ((-1, 8, 8), (-1, 8, 4))}
    (view,) = _find(d, "value_changed", "aten::view")
    assert (view.old, view.new) == ([1, 8, 2, 8], [1, 8, 4, 4])
    assert "Reshape.shape" in view.detail and "size" in view.detail  # the aten argument it came from
    assert sorted(view.sites) == ["view", "view_1", "view_2", "view_4", "view_5", "view_6"]
    assert d.matched["aten_calls"].matched == 40 and not d.matched["aten_calls"].only_a


def test_head_count_change_cli_text_and_exit_code(capsys):
    assert main(["diff", str(BLOCK), str(H4)]) == 1
    out = capsys.readouterr().out
    assert "aten::scaled_dot_product_attention" in out and "aten::view" in out
    assert "scale (Mul.B): 0.59460354 -> 0.70710677" in out
    assert "[1, 2, 8, 8] -> [1, 4, 4, 8]" in out and "[1, 8, 2, 8] -> [1, 8, 4, 4]" in out


def test_optimized_vs_unoptimized_export_same_calls_different_bodies():
    d = diff_files(BLOCK, NOOPT)
    m = d.matched["aten_calls"]
    assert (m.matched, m.only_a, m.only_b) == (40, 0, 0)  # the same aten call set
    assert not [c for c in d.changes if c.kind in ("call_added", "call_removed", "family_added", "family_removed",
                                                   "overload_added", "overload_removed")]
    changed = {c.family for c in _find(d, "body_changed")}
    assert {"aten::linear", "aten::view", SDPA} <= changed
    linear = _find(d, "body_changed", "aten::linear")
    assert len(linear) == 1 and len(linear[0].sites) == 12  # one change for the 12 identical call sites
    assert any(e.op == "added" and e.node == "Transpose" for e in linear[0].edits)
    sdpa = _find(d, "body_changed", SDPA)[0]
    assert sdpa.new["nodes"] > sdpa.old["nodes"]


# --- names are not changes -------------------------------------------------------------------------------------------


def test_a_renamed_copy_is_equal(capsys):
    d = diff_files(BLOCK, RENAMED)
    assert d.equal and d.equivalent and not d.changes, diff_text(d)
    assert d.renamed >= 40 + 31  # every aten call and initializer has another name
    assert main(["diff", str(BLOCK), str(RENAMED)]) == 0
    assert "equal" in capsys.readouterr().out


def test_renamed_copy_reports_the_same_values_as_the_original():
    direct = {(c.kind, c.family, c.detail) for c in diff_files(H4, BLOCK).changes}
    renamed = {(c.kind, c.family, c.detail) for c in diff_files(H4, RENAMED).changes}
    assert direct == renamed and direct


def test_renamed_plain_model_with_functions_is_equal(tmp_path: Path):
    m = onnx.load(str(FIXTURES / "overloads.onnx"))
    names: dict[str, str] = {}

    def r(name: str) -> str:
        return names.setdefault(name, f"v{len(names) * 7919 % 1009}") if name else ""

    for v in (*m.graph.input, *m.graph.output, *m.graph.value_info):
        v.name = r(v.name)
    for n in m.graph.node:
        n.name = r("node " + n.name)
        n.input[:] = [r(x) for x in n.input]
        n.output[:] = [r(x) for x in n.output]
    d = diff_files(FIXTURES / "overloads.onnx", _save(m, tmp_path / "renamed.onnx"))
    assert d.equal, diff_text(d)
    assert d.matched["function_calls"].matched == 12 and d.renamed >= 12


# --- a flat export and its fold --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folded_block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, report = fold_model(open_index(BLOCK))
    assert report.calls_folded == 40
    path = tmp_path_factory.mktemp("fold") / "block_folded.onnx"
    onnx.save(model, str(path))
    return path


def test_a_model_and_its_fold_are_equivalent_not_equal(folded_block: Path, capsys):
    d = diff_files(BLOCK, folded_block)
    assert not d.equal and d.equivalent
    (change,) = d.changes  # the fold explains everything: no other change
    assert change.kind == "folded"
    assert d.fold is not None and d.fold.folded == "b" and d.fold.calls == 40 and d.fold.identical == 40
    assert d.fold.domains == ["pkg.torch.aten"] and d.fold.functions == 8
    assert d.fold.explanation == ("B is A folded: 40 aten calls became calls of 8 local functions in "
                                  "pkg.torch.aten; bodies identical")
    reverse = diff_files(folded_block, BLOCK)
    assert reverse.equivalent and not reverse.equal and reverse.fold is not None and reverse.fold.folded == "a"
    assert main(["diff", str(BLOCK), str(folded_block)]) == 1  # equivalent is not equal
    out = capsys.readouterr().out
    assert "equivalent" in out and "B is A folded" in out


def test_fold_of_another_export_reports_its_value_changes(tmp_path: Path):
    model, _ = fold_model(open_index(H4))
    d = diff_files(BLOCK, _save(model, tmp_path / "h4_folded.onnx"))
    assert not d.equivalent and d.fold is not None and d.fold.identical < d.fold.calls
    assert _find(d, "folded")
    scale = [c for c in _find(d, "value_changed", SDPA) if isinstance(c.old, float)]
    assert len(scale) == 1 and math.isclose(scale[0].new, 0.70710677, rel_tol=1e-6)


# --- local functions -------------------------------------------------------------------------------------------------


def test_changed_perm_of_one_overload(tmp_path: Path):
    m = onnx.load(str(FIXTURES / "overloads.onnx"))
    (f,) = [f for f in m.functions if (f.name, f.overload) == ("tr", "perm_0231")]
    (perm,) = f.node[0].attribute
    perm.ints[:] = [0, 3, 2, 1]
    d = diff_files(FIXTURES / "overloads.onnx", _save(m, tmp_path / "perm.onnx"))
    (change,) = d.changes
    assert change.kind == "value_changed" and change.family == "local.tr"
    assert change.sites == ["local.tr:perm_0231"]
    assert (change.old, change.new) == ([0, 2, 3, 1], [0, 3, 2, 1])
    assert change.detail == "Transpose.perm: [0, 2, 3, 1] -> [0, 3, 2, 1]"


def test_removed_and_added_functions(tmp_path: Path):
    m = onnx.load(str(FIXTURES / "overloads.onnx"))
    keep = [f for f in m.functions if (f.name, f.overload) != ("sm", "axis_1")]
    del m.functions[:]
    m.functions.extend(keep)
    (call,) = [n for n in m.graph.node if n.name == "sm_b"]
    call.overload = "axis_m1"  # the call now uses the other overload
    extra = helper.make_function("local", "extra", ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])],
                                 [helper.make_opsetid("", 18)])
    m.functions.append(extra)
    d = diff_files(FIXTURES / "overloads.onnx", _save(m, tmp_path / "funcs.onnx"))
    (removed,) = _find(d, "overload_removed")
    assert removed.family == "local.sm" and removed.old == "local.sm:axis_1"
    (added,) = _find(d, "family_added")
    assert added.family == "local.extra"
    (new_call,) = _find(d, "call_added", "local.sm")
    assert new_call.sites == ["sm_b"]
    assert not _find(d, "rewired")


# --- initializers, nodes, wiring of plain models ---------------------------------------------------------------------


def _plain(weights: dict[str, np.ndarray], perm: list[int], extra: bool = False, swap: bool = False) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Add", ["X", "W1"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "W2"], ["m"], name="mul"),
        helper.make_node("MatMul", ["m", "W3"], ["mm"], name="matmul"),
        helper.make_node("Sub", ["mm", "a"] if not swap else ["a", "mm"], ["s"], name="sub"),
        helper.make_node("Transpose", ["s"], ["Y"], name="transpose", perm=perm),
    ]
    if extra:
        nodes.append(helper.make_node("Relu", ["Y"], ["Z"], name="relu"))
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 4])]
    if extra:
        outputs.append(helper.make_tensor_value_info("Z", TensorProto.FLOAT, [4, 4]))
    g = helper.make_graph(nodes, "plain", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 4])], outputs,
                          [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"W1": rng.standard_normal(4).astype(np.float32), "W2": rng.standard_normal(4).astype(np.float32),
            "W3": rng.standard_normal((4, 4)).astype(np.float32), "unused_a": np.ones(2, np.float32)}


def test_initializers_reshaped_revalued_added_removed(tmp_path: Path):
    w = _weights()
    a = _save(_plain(w, [1, 0]), tmp_path / "a.onnx")
    w2 = dict(w)
    w2["W1"] = w["W1"] + 1  # same shape, new values
    w2["W2"] = w["W2"].reshape(1, 4)  # reshaped
    w2["W3_renamed"] = w2.pop("W3")  # renamed only: not a change
    del w2["unused_a"]
    w2["unused_b"] = np.zeros(3, np.float32)
    m = _plain(w2, [1, 0])
    m.graph.node[2].input[1] = "W3_renamed"
    d = diff_files(a, _save(m, tmp_path / "b.onnx"))
    kinds = {(c.kind, c.where) for c in d.changes}
    assert kinds == {("initializer_revalued", "W1"), ("initializer_reshaped", "W2"),
                     ("initializer_removed", "unused_a"), ("initializer_added", "unused_b")}, diff_text(d)
    (reshaped,) = _find(d, "initializer_reshaped")
    assert (reshaped.old, reshaped.new) == ("FLOAT[4]", "FLOAT[1, 4]")
    (revalued,) = _find(d, "initializer_revalued")
    assert revalued.old == pytest.approx(w["W1"].tolist()) and revalued.new == pytest.approx((w["W1"] + 1).tolist())
    assert d.matched["initializers"].renamed == 1


def test_plain_nodes_changed_added_and_rewired(tmp_path: Path):
    w = _weights()
    a = _save(_plain(w, [1, 0]), tmp_path / "a.onnx")
    b = _save(_plain(w, [0, 1], extra=True, swap=True), tmp_path / "b.onnx")
    d = diff_files(a, b)
    (changed,) = _find(d, "node_changed")
    assert changed.family == "Transpose" and changed.detail == "perm [1, 0] -> [0, 1]"
    (added,) = _find(d, "node_added")
    assert added.family == "Relu"
    assert {c.where for c in _find(d, "output_added")} == {"Z"}
    rewired = _find(d, "rewired")
    assert {c.where for c in rewired} == {"sub"} and len(rewired) == 2  # both inputs of Sub swapped
    assert diff_files(a, a).equal


# --- reports ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def hostile_pair(tmp_path: Path) -> tuple[Path, Path]:
    m = onnx.load(str(FIXTURES / "hostile.onnx"))
    m.functions[0].node[0].op_type = "Sigmoid"
    m.metadata_props[0].value = "<script>alert(2)</script>"
    out = m.graph.output[0].name
    m.graph.node.append(helper.make_node("Relu", [out], ["z<img src=x onerror=alert(3)>"],
                                         name="n<script>x</script>|`pipe`"))
    m.graph.output.append(helper.make_tensor_value_info("z<img src=x onerror=alert(3)>", TensorProto.FLOAT, [2]))
    return FIXTURES / "hostile.onnx", _save(m, tmp_path / "hostile<u>mod.onnx")


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_reports_of_hostile_models_hold_no_markup(hostile_pair: tuple[Path, Path], fmt: str, tmp_path: Path):
    a, b = hostile_pair
    out = tmp_path / "reports" / f"report.{fmt}"
    assert main(["diff", str(a), str(b), "--format", fmt, "-o", str(out)]) == 1
    text = out.read_text()
    low = text.lower()
    assert "<script" not in low and "<img" not in low and "<u>" not in low
    if fmt == "md":  # (an attribute's text without its tag is text: "onerror=" is shown, "<" an entity)
        assert not tags(text) & {"script", "img", "u", "a"} and "onerror=alert" in shown(text)
    else:
        assert "onerror=" not in low
    assert "alert(2)" in text and "alert(3)" in text  # shown, as text
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # written atomically: no temp file left
    if fmt == "md":
        assert "`pipe`" not in text and "|`" not in text  # no code span, no table break
        for line in text.splitlines():
            if line.startswith("| ") and "Detail" not in line and "Changes" not in line and "---" not in line:
                assert len(re.findall(r"(?<!\\)\|", line)) in (3, 4), line  # a model string never adds a column
    else:
        assert text.startswith("<!DOCTYPE html>") and "prefers-color-scheme: dark" in text
        assert "http://" not in text and "https://" not in text and "src=" not in low


def test_text_report_of_hostile_models_is_printable(hostile_pair: tuple[Path, Path]):
    text = diff_text(diff_files(*hostile_pair))
    assert "\u202e" not in text and all(c.isprintable() or c == "\n" for c in text)


def test_json_report_is_versioned_and_valid(hostile_pair: tuple[Path, Path], capsys):
    assert main(["diff", str(BLOCK), str(H4), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "onnx-inspector/diff" and data["version"] == 1
    assert data["a"].endswith("dynamo_block.onnx") and data["b"].endswith("dynamo_block_h4.onnx")
    assert data["equal"] is False and data["equivalent"] is False
    assert {c["family"] for c in data["changes"]} == {SDPA, "aten::view"}
    assert all({"kind", "section", "family", "where", "old", "new", "detail", "sites"} <= set(c)
               for c in data["changes"])
    d = diff_files(*hostile_pair)
    text = render(d, "json")
    parsed = json.loads(text)
    assert parsed == json.loads(json.dumps(diff_dict(d), allow_nan=False))
    assert main(["diff", str(BLOCK), str(RENAMED), "--format", "json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["equal"] is True and same["changes"] == []


def test_bad_file_is_one_line_and_exit_code_2(capsys, tmp_path: Path):
    assert main(["diff", str(BLOCK), str(FIXTURES / "bad" / "truncated.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("onnx-inspector: error:")
    assert main(["diff", str(tmp_path / "missing.onnx"), str(BLOCK), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_a_change_300_subgraphs_deep_is_found_without_recursion():
    from inspector.core.diff import diff_models
    from inspector.core.model.index import build_index
    from inspector.core.model.loader import LoadedModel
    from tests.builders import deep_if_model

    def index(model: onnx.ModelProto, name: str):
        return build_index(LoadedModel(Path(name), model, "binary", 0))

    a = index(deep_if_model(300), "a.onnx")
    assert diff_models(a, index(deep_if_model(300), "a2.onnx")).equal
    d = diff_models(a, index(deep_if_model(300, call_at_bottom=False), "b.onnx"))
    (change,) = d.changes
    assert change.kind == "node_changed" and change.family == "If"
    assert [(e.op, e.node.rsplit(": ", 1)[1]) for e in change.edits] == [("removed", "local::leaf:deep"),
                                                                         ("added", "Identity")]


def test_markdown_of_a_huge_diff_fits_a_github_comment(tmp_path: Path):
    def chain(perm: list[int]) -> onnx.ModelProto:
        nodes = [helper.make_node("Transpose", [f"x{i}"], [f"x{i + 1}"], name=f"t{i}", perm=perm)
                 for i in range(3000)]
        g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("x3000", TensorProto.FLOAT, [2, 2])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])

    d = diff_files(_save(chain([0, 1]), tmp_path / "a.onnx"), _save(chain([1, 0]), tmp_path / "b.onnx"))
    assert len(_find(d, "node_changed")) == 3000
    text = render(d, "md")
    assert len(text) < 65536 and "more changes in this group" in text
    assert text.count("<details>") == text.count("</details>")
