"""``onnx-inspector check``: reviews in CI. Real zoo exports; the truth of which value changed comes from the
pair's truth files (made by torch), never from our own code."""

from __future__ import annotations

import shutil
from pathlib import Path

from inspector.core.index import open_index
from inspector.core.review import ReviewStore, review_keys, reviewed_value
from inspector.core.specialise import SpecialisedValue, Specialiser
from inspector.core.textsafe import github_data, github_property

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
