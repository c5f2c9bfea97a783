"""``onnx-inspector check``: reviews in CI. Real zoo exports; the truth of which value changed comes from the
pair's truth files (made by torch), never from our own code."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from inspector.cli import main
from inspector.core.model.index import open_index
from inspector.core.review.store import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise.specialiser import SpecialisedValue, Specialiser
from inspector.core.util.textsafe import github_data, github_property
from tests.builders import renamed_copy

ZOO = Path(__file__).resolve().parent / "zoo"


def _copy(tmp_path: Path, name: str, as_name: str | None = None) -> Path:
    dest = tmp_path / (as_name or f"{name}.onnx")
    shutil.copyfile(ZOO / f"{name}.onnx", dest)
    return dest


def test_a_value_review_records_the_value_reviewed(tmp_path):
    model = _copy(tmp_path, "pair_scale_a")
    store = ReviewStore(model)
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)]
    (key, spec), = [(k, o) for k, o in items
                    if k.family == "aten::scaled_dot_product_attention" and k.slot.endswith("|initializer|Mul")
                    and isinstance(o, SpecialisedValue) and o.literal.value == [0.5]]
    store.set(key, "ok", "", reviewed_value(spec))
    overload_key, body = next((k, o) for k, o in items if k.kind == "overload")
    store.set(overload_key, "ok", "", reviewed_value(body))
    again = ReviewStore(model)
    assert again.get(key).value == [0.5]  # read back from the sidecar
    assert again.get(overload_key).value is None  # an overload has no value
    store.set(key, "unreviewed")  # a reset forgets the value with the status
    assert ReviewStore(model).get(key).value is None


def test_github_escaping_follows_the_runner():
    # actions/toolkit command.ts: escapeData (% CR LF), escapeProperty (also : and ,)
    assert github_data("50% a\r\nb::c,d") == "50%25 a%0D%0Ab::c,d"
    assert github_property("50% a\r\nb::c,d") == "50%25 a%0D%0Ab%3A%3Ac%2Cd"
    assert github_data("\x1b[31m\u202e") == "\\x1b[31m\\u202e"  # no terminal escape or bidi override survives


# --- the check command -------------------------------------------------------------------------------------------

def _review_all(model: Path, status: str = "ok") -> ReviewStore:
    """Mark every review item of ``model`` as a reviewer in the app would (the value recorded with it)."""
    store = ReviewStore(model)
    for analysis in Specialiser(open_index(model)).analyse_all():
        for key, obj in review_keys(analysis):
            store.set(key, status, "looked at it", reviewed_value(obj))
    return store


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _truth(name: str) -> dict:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _head_dims(truth: dict) -> dict[str, int]:
    """Per attention module, the head dimension: the last size of its first ``aten::view`` (torch's FX args)."""
    dims: dict[str, int] = {}
    for node in truth["fx_nodes"]:
        if node["target"] == "aten::view" and len(node["args"]["size"]) == 4:
            dims.setdefault(node["module"], node["args"]["size"][-1])
    return dims


def _f32(x: float) -> float:
    return float(np.float32(x))


def test_a_reexport_that_changes_the_sdpa_scale_fails_and_names_it(tmp_path, capsys):
    a, b = _copy(tmp_path, "pair_scale_a"), _copy(tmp_path, "pair_scale_b")
    truth_a, truth_b = _truth("pair_scale_a"), _truth("pair_scale_b")
    assert truth_a["pair"]["hyperparameter"] == "scale" and truth_a["pair"]["value"] is None
    new_scale = truth_b["pair"]["value"]
    store = _review_all(a)

    code, out, _err = _run(capsys, str(a))
    assert code == 0 and out.startswith("check passed:")

    code, out, err = _run(capsys, str(b), "--reviews", str(store.path), "--format", "json")
    assert code == 1 and err == ""
    data = json.loads(out)
    assert data["format"] == "onnx-inspector/check" and data["version"] == 1 and data["passed"] is False
    failing = [i for i in data["items"] if i["status"] in ("changed", "unreviewed", "suspicious", "wrong")]
    # exactly the SDPA calls changed, nothing else: one body and its scale per attention layer
    assert {i["family"] for i in failing} == {"aten::scaled_dot_product_attention"}
    assert all(i["status"] == "changed" for i in failing)
    sdpa_modules = {n["module"] for n in truth_b["fx_nodes"] if n["target"] == "aten::scaled_dot_product_attention"}
    dims = _head_dims(truth_a)
    seen = set()
    for module in sdpa_modules:
        mine = [i for i in failing if f" in {module}" in i["owner"]]
        body, = [i for i in mine if i["kind"] == "overload"]
        value, = [i for i in mine if i["kind"] == "value"]
        # torchlib scales q and k each by sqrt(scale); the default scale is 1/sqrt(head_dim)
        old, new = _f32(dims[module] ** -0.25), _f32(math.sqrt(new_scale))
        assert value["where"].endswith("(Mul)") and value["review_status"] == "ok"
        assert np.ravel(value["reviewed_value"]).tolist() == pytest.approx([old], rel=1e-6)
        assert np.ravel(value["value"]).tolist() == pytest.approx([new], rel=1e-6)
        change, = body["changes"]
        assert change["where"] == value["where"] and change["old"] == value["reviewed_value"]
        seen.add(module)
    assert seen == sdpa_modules and len(sdpa_modules) == 2
    # the reshapes of the attention bodies kept their values: reviewed ok on the same value, not flagged
    same = [i for i in data["items"] if i["basis"] == "same_value"]
    assert same and all(i["status"] == "ok" and i["value"] == i["reviewed_value"] for i in same)

    code, out, _err = _run(capsys, str(b), "--reviews", str(store.path))
    assert code == 1 and out.startswith("check failed:") and "4 changed since review" in out
    assert f"-> {np.float32(math.sqrt(new_scale))!s}" in out and "scaled_dot_product_attention in attns.0" in out


def test_unreviewed_suspicious_and_wrong_items_fail(tmp_path, capsys):
    model = _copy(tmp_path, "pair_eps_a")
    code, out, _err = _run(capsys, str(model), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["counts"]["ok"] == 0
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)]
    assert len(data["items"]) == len(items)  # the same items as the app's Review panel
    worthy = [i for i in data["items"] if i["status"] == "unreviewed"]
    skipped = [i for i in data["items"] if i["status"] == "not_review_worthy"]
    assert len(worthy) + len(skipped) == len(items)
    assert all(i["kind"] == "overload" for i in skipped)

    store = _review_all(model)
    eps_key = next(k for k, o in items if isinstance(o, SpecialisedValue) and k.family == "aten::layer_norm")
    store.set(eps_key, "wrong", "eps should be 1e-6")
    code, out, _err = _run(capsys, str(model))
    assert code == 1 and "1 reviewed wrong" in out and "note: eps should be 1e-6" in out
    store.set(eps_key, "suspicious", "")
    code, out, _err = _run(capsys, str(model))
    assert code == 1 and "1 reviewed suspicious" in out
    store.set(eps_key, "ok", "")
    assert _run(capsys, str(model))[0] == 0


def test_reviews_survive_a_renaming_reexport(tmp_path, capsys):
    model = _copy(tmp_path, "gpt2")
    store = _review_all(model)
    other = tmp_path / "renamed.onnx"
    onnx.save(renamed_copy(onnx.load(str(model))), str(other))
    code, out, _err = _run(capsys, str(other), "--reviews", str(store.path))
    assert code == 0, out


@pytest.mark.parametrize("case", ["garbage_model", "missing_reviews", "bad_reviews", "missing_model"])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, case):
    model = _copy(tmp_path, "pair_eps_a")
    argv = [str(model)]
    if case == "garbage_model":
        model.write_bytes(b"\x08\x96\x01garbage")
    elif case == "missing_reviews":
        argv += ["--reviews", str(tmp_path / "nope.json")]
    elif case == "bad_reviews":
        (tmp_path / "pair_eps_a.onnx.review.json").write_text('{"format": "onnx-inspector/review", "version": NaN}')
    else:
        argv = [str(tmp_path / "missing.onnx")]
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("onnx-inspector: error:")


def _hostile_function_model(path: Path) -> None:
    name = "f%0A,x:y\r\n::error title=pwned::boom"
    body = [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])]
    fn = helper.make_function("evil,dom", name, ["x"], ["y"], body, [helper.make_opsetid("", 18)])
    graph = helper.make_graph([helper.make_node(name, ["in"], ["out"], domain="evil,dom")], "g",
                              [helper.make_tensor_value_info("in", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, functions=[fn], opset_imports=[helper.make_opsetid("", 18),
                                                                    helper.make_opsetid("evil,dom", 1)])
    onnx.save(model, str(path))


def _unescape(text: str) -> str:
    return text.replace("%3A", ":").replace("%2C", ",").replace("%0D", "\r").replace("%0A", "\n") \
        .replace("%25", "%")


def test_github_annotations_keep_model_text_inside_one_command(tmp_path, capsys):
    path = tmp_path / "evil,name:1.onnx"
    _hostile_function_model(path)
    code, out, _err = _run(capsys, str(path), "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert lines[-1].startswith("check failed:")
    # annotations, then the log's group of every failing item, whose lines no model text can start with "::" (a
    # workflow command is read at a line's start only)
    start = lines.index(next(line for line in lines if line.startswith("::group::")))
    annotations, logged = lines[:start], lines[start + 1:-2]
    assert annotations and lines[-2] == "::endgroup::" and len(logged) == len(annotations)
    assert not any(line.startswith("::") for line in logged)
    for line in annotations:
        level, rest = line[2:].split(" ", 1)
        assert level in ("error", "warning", "notice")
        props, message = rest.split("::", 1)
        fields = dict(p.split("=", 1) for p in props.split(","))
        assert set(fields) == {"file", "title"}  # the model's commas and colons never add a property
        assert _unescape(fields["file"]).endswith("evil,name:1.onnx")
        assert "evil,dom" in _unescape(fields["title"]) and "\n" not in _unescape(fields["title"])
        assert "\r" not in message and "%0A" not in message  # one_line already showed the newline as text


def test_reviews_without_a_recorded_value_still_flag_the_change(tmp_path, capsys):
    # a sidecar written before values were recorded: the change is still found, its old value is unknown
    a, b = _copy(tmp_path, "pair_scale_a"), _copy(tmp_path, "pair_scale_b")
    store = ReviewStore(a)
    for analysis in Specialiser(open_index(a)).analyse_all():
        for key, _obj in review_keys(analysis):
            store.set(key, "ok", "")
    code, out, _err = _run(capsys, str(b), "--reviews", str(store.path), "--format", "json")
    failing = [i for i in json.loads(out)["items"] if i["status"] != "ok"]
    assert code == 1 and failing and all(i["status"] == "changed" for i in failing)
    assert {i["family"] for i in failing} == {"aten::scaled_dot_product_attention"}
    assert all(i["reviewed_value"] is None and i["changes"] == [] for i in failing)
    code, out, _err = _run(capsys, str(b), "--reviews", str(store.path))
    assert "was (not recorded) when reviewed ok" in out


def test_the_worst_failing_items_come_first(tmp_path, capsys):
    """A reviewer marks GPT-2's last review item wrong and another one suspicious, and leaves the rest: the text and
    the GitHub annotations list the wrong one, then the suspicious one, then the unreviewed ones in the families'
    order; the JSON keeps every item in the families' order. The other bodies of the view the reviewer marked wrong
    are unreviewed, as the app lists them: a sibling body is no earlier version of it (they were "changed since
    review")."""
    model = _copy(tmp_path, "gpt2")
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)]
    store = ReviewStore(model)
    (last, last_obj), (middle, middle_obj) = items[-1], items[len(items) // 2]
    store.set(last, "wrong", "not what torch computes", reviewed_value(last_obj))
    store.set(middle, "suspicious", "", reviewed_value(middle_obj))
    code, out, _err = _run(capsys, str(model), "--format", "json")
    statuses = [i["status"] for i in json.loads(out)["items"]]
    assert statuses[-1] == "wrong" and statuses[len(items) // 2] == "suspicious" and "changed" not in statuses
    assert len(statuses) == len(items) and statuses.count("unreviewed") == len(items) - 2 - statuses.count(
        "not_review_worthy")
    code, out, _err = _run(capsys, str(model))
    lines = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert code == 1 and lines[0].startswith(f"reviewed wrong: {last.family}:")
    assert "not what torch computes" in lines[0]
    assert lines[1].startswith(f"reviewed suspicious: {middle.family}:")
    assert len(lines) == 2 + statuses.count("unreviewed") and all(line.startswith("unreviewed:") for line in lines[2:])
    code, out, _err = _run(capsys, str(model), "--format", "github")
    lines = out.splitlines()
    assert lines[0].startswith("::error ") and "title=reviewed wrong" in lines[0]
    assert lines[1].startswith("::warning ") and "title=reviewed suspicious" in lines[1]


def test_github_annotations_stay_within_what_a_step_shows(tmp_path, capsys):
    """GitHub shows 10 error, 10 warning and 10 notice annotations a step, in the order printed (actions/toolkit,
    docs/problem-matchers.md). Every failing item was an ``::error``: GPT-2's 47 unreviewed items buried what a
    reviewer marked wrong or suspicious past the tenth, and 37 of them were dropped without a word. A verdict that
    fails is an error, a doubt a warning, an unreviewed item a notice; a level with more than 10 says in its tenth how
    many more there are, and the log lists every failing item."""
    model = _copy(tmp_path, "gpt2")
    items = [(k, o) for a in Specialiser(open_index(model)).analyse_all() for k, o in review_keys(a)]
    store = ReviewStore(model)
    for key, obj in items[:12]:  # 12 marked wrong, 3 suspicious, the rest unreviewed
        store.set(key, "wrong", "", reviewed_value(obj))
    for key, obj in items[12:15]:
        store.set(key, "suspicious", "", reviewed_value(obj))
    code, out, _err = _run(capsys, str(model), "--format", "github")
    lines = out.splitlines()
    levels = [line[2:].split(" ", 1)[0] for line in lines if not line.startswith("::group") and line.startswith("::")]
    levels.remove("endgroup::")
    assert code == 1 and levels == ["error"] * 10 + ["warning"] * 3 + ["notice"] * 10
    unreviewed = len(items) - 15 - 1  # (one of GPT-2's 47 items is not review-worthy)
    assert len(items) == 47 and unreviewed == 31
    assert "title=3 more not annotated::3 reviewed wrong: GitHub shows 10 error annotations a step" in lines[9]
    assert f"title={unreviewed - 9} more not annotated::{unreviewed - 9} unreviewed" in lines[22]
    logged = lines[lines.index("::group::46 failing review items") + 1:lines.index("::endgroup::")]
    assert [line.split(":", 1)[0] for line in logged] == (
        ["reviewed wrong"] * 12 + ["reviewed suspicious"] * 3 + ["unreviewed"] * unreviewed)
    assert lines[-1] == (f"check failed: {model}: 12 reviewed wrong, 3 reviewed suspicious, 31 unreviewed; 0 ok, "
                         "1 not review-worthy")
