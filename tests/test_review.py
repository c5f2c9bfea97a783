"""Reviews: sidecar round trip, survival across a re-export, invalidation when values change, safe saving."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import onnx
import pytest

from inspector.core.model.index import ModelIndex, open_index
from inspector.core.review.carried import carried_items
from inspector.core.review.check import check_model
from inspector.core.review.store import (
    STATUSES,
    Review,
    ReviewKey,
    ReviewStore,
    review_keys,
    slot_text,
    unreviewed,
)
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, SpecialisedValue, Specialiser
from inspector.core.util.errors import InspectorError
from tests.builders import renamed_copy
from tests.conftest import FIXTURES


def _copy(tmp_path: Path, fixture: str, as_name: str | None = None) -> Path:
    dest = tmp_path / (as_name or fixture)
    shutil.copyfile(FIXTURES / fixture, dest)
    return dest


def _analyses(index: ModelIndex) -> list[FamilyAnalysis]:
    return Specialiser(index).analyse_all()


def _keys(index: ModelIndex, label: str) -> list[tuple[ReviewKey, object]]:
    (analysis,) = [a for a in _analyses(index) if a.family.label == label]
    return review_keys(analysis)


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# --- keys -------------------------------------------------------------------------------------------------------

def test_review_keys_cover_overloads_and_specialised_values():
    index = open_index(FIXTURES / "overloads.onnx")
    keys = _keys(index, "local.tr")
    overloads = [(k, o) for k, o in keys if k.kind == "overload"]
    values = [(k, o) for k, o in keys if k.kind == "value"]
    assert len(overloads) == 3 and all(isinstance(o, BodyAnalysis) for _k, o in overloads)
    assert len(values) == 3 and all(isinstance(o, SpecialisedValue) for _k, o in values)
    assert {k.slot for k, _o in values} == {"0|attribute|perm"}
    assert len({k.template for k, _o in keys}) == 1 and len({k.fingerprint for k, _o in keys}) == 3
    # parametric attributes (ref_attr_name) are not reviewable values
    assert [k.kind for k, _o in _keys(index, "local.par")] == ["overload"]


def test_slot_text_names_initializers_by_their_reader():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    keys = _keys(index, "aten::scaled_dot_product_attention")
    slots = [k.slot for k, _o in keys if k.kind == "value"]
    assert "|initializer|Mul" in slots  # the baked SDPA scale, whatever its value name
    assert len(slots) == len(set(slots))  # two Reshape shapes get distinct slots
    spec = next(o for k, o in keys if k.slot == "|initializer|Mul")
    assert isinstance(spec, SpecialisedValue) and slot_text(spec.literal) == "|initializer|Mul"


def test_key_text_round_trip_with_hostile_strings():
    key = ReviewKey("value", 'dom<script>"x"</script>.f|g', "t" * 20, "f" * 20, '0|attribute|a"]\n')
    assert ReviewKey.from_text(key.to_text()) == key
    with pytest.raises(ValueError):
        ReviewKey.from_text("not a key")
    with pytest.raises(ValueError):
        ReviewKey.from_text('["overload", 1, 2, 3, 4]')


# --- store ------------------------------------------------------------------------------------------------------

def test_set_get_reload_round_trip(tmp_path):
    model = _copy(tmp_path, "dynamo_block.onnx")
    index = open_index(model)
    keys = _keys(index, "aten::transpose")
    (overload,) = [k for k, _o in keys if k.kind == "overload"]
    (perm,) = [k for k, _o in keys if k.kind == "value"]
    store = ReviewStore(model)
    assert store.path == tmp_path / "dynamo_block.onnx.review.json"
    store.load()  # no sidecar yet: empty
    assert store.get(perm) == Review("unreviewed")
    note = "perm swaps 1 and 2 <b>&amp;</b> ü\nsecond line"
    store.set(perm, "ok", note)
    store.set(overload, "suspicious")
    assert store.path.exists()  # saved at once

    again = ReviewStore(model)
    again.load()
    got = again.get(perm)
    assert (got.status, got.note) == ("ok", note)
    assert got.updated.endswith("+00:00") and got.updated[:4].isdigit()
    assert again.get(overload).status == "suspicious"
    assert {k for k, _r in again.items()} == {perm, overload}

    text = store.path.read_text("utf-8")
    doc = json.loads(text)
    assert doc["format"] == "onnx-inspector/review" and doc["version"] == 1 and doc["model"] == "dynamo_block.onnx"
    entry = doc["reviews"][perm.to_text()]
    assert entry["status"] == "ok" and entry["note"] == note  # stored as typed, not escaped
    assert entry["family"] == "aten::transpose" and entry["slot"] == "0|attribute|perm"
    assert "<b>&amp;</b> ü" in text  # UTF-8, no HTML or ASCII escaping
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_invalid_status_raises_value_error(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.sm")[0][0]
    store = ReviewStore(model)
    with pytest.raises(ValueError, match="status"):
        store.set(key, "fine")
    with pytest.raises(ValueError, match="kind"):
        store.set(ReviewKey("node", "local.sm", "t", "f"), "ok")
    assert not store.path.exists()
    assert set(STATUSES) == {"unreviewed", "ok", "suspicious", "wrong"}


def test_review_survives_a_re_export(tmp_path):
    model = _copy(tmp_path, "dynamo_block.onnx")
    index = open_index(model)
    store = ReviewStore(model)
    wanted = {}
    for analysis in _analyses(index):
        for n, (key, _obj) in enumerate(review_keys(analysis)):
            status = ("ok", "suspicious", "wrong")[n % 3]
            store.set(key, status, f"note on {key.slot or key.family}")
            wanted[(key.family, key.kind, key.slot)] = status
    assert not unreviewed(store, _analyses(index))

    # "re-export": every node and value renamed, saved under a new name, sidecar copied along
    renamed_model = tmp_path / "reexport.onnx"
    onnx.save(renamed_copy(index.proto), renamed_model)
    shutil.copyfile(store.path, tmp_path / "reexport.onnx.review.json")
    renamed = open_index(renamed_model)
    assert {n.name for n in renamed.proto.graph.node}.isdisjoint({n.name for n in index.proto.graph.node})

    store2 = ReviewStore(renamed_model)
    store2.load()
    seen = {}
    for analysis in _analyses(renamed):
        for key, _obj in review_keys(analysis):
            review = store2.get(key)
            seen[(key.family, key.kind, key.slot)] = review.status
            assert review.note == f"note on {key.slot or key.family}"
    assert seen == wanted
    assert not unreviewed(store2, _analyses(renamed))


def test_review_follows_the_body_when_the_family_isrenamed_copy(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    index = open_index(model)
    store = ReviewStore(model)
    keys = _keys(index, "local.tr")
    for key, _o in keys:
        store.set(key, "ok", key.fingerprint)

    proto = onnx.ModelProto()
    proto.CopyFrom(index.proto)
    for f in proto.functions:
        if f.name == "tr":
            f.name = "transpose_fn"
    for n in proto.graph.node:
        if n.op_type == "tr":
            n.op_type = "transpose_fn"
    moved = tmp_path / "moved.onnx"
    onnx.save(proto, moved)
    shutil.copyfile(store.path, tmp_path / "moved.onnx.review.json")
    new_keys = _keys(open_index(moved), "local.transpose_fn")
    assert {k.to_text() for k, _o in new_keys}.isdisjoint({k.to_text() for k, _o in keys})
    store2 = ReviewStore(moved)
    for key, _o in new_keys:
        review = store2.get(key)
        assert (review.status, review.note) == ("ok", key.fingerprint)  # same body, same review


def test_review_does_not_apply_when_a_baked_value_changed(tmp_path):
    model = _copy(tmp_path, "dynamo_block.onnx")
    store = ReviewStore(model)
    for analysis in _analyses(open_index(model)):
        for key, _o in review_keys(analysis):
            store.set(key, "ok", "checked for 2 heads")

    # the same model exported with 4 heads: the SDPA scale and reshape shapes differ
    other = _copy(tmp_path, "dynamo_block_h4.onnx")
    shutil.copyfile(store.path, tmp_path / "dynamo_block_h4.onnx.review.json")
    h4 = open_index(other)
    store2 = ReviewStore(other)
    sdpa = _keys(h4, "aten::scaled_dot_product_attention")
    old_sdpa = {k.template: k for k, _o in _keys(open_index(model), "aten::scaled_dot_product_attention")
                if k.kind == "overload"}
    carried = carried_items(check_model(h4, store2).items)
    for key, _o in sdpa:
        assert key.template in old_sdpa  # the same template ...
        assert key.fingerprint != old_sdpa[key.template].fingerprint  # ... with other values
        assert store2.get(key).status == "unreviewed"
        assert carried[key].note == "checked for 2 heads" and carried[key].basis in ("earlier_body", "same_value")
    # bodies that did not change keep their reviews
    for key, _o in _keys(h4, "aten::transpose") + _keys(h4, "aten::layer_norm"):
        assert store2.get(key).status == "ok"
    todo = unreviewed(store2, _analyses(h4))
    assert {k.family for k, _o in todo} == {"aten::scaled_dot_product_attention", "aten::view"}


def test_saving_keeps_the_sidecars_permissions_and_its_backup_gets_them(tmp_path):
    """A sidecar made group-writable to share the review stays so when saved again, and its backup (the previous
    state) is readable by whom the sidecar is: the backup was left 0o600 and the sidecar reset to the umask's."""
    model = _copy(tmp_path, "overloads.onnx")
    keys = [k for k, _o in _keys(open_index(model), "local.tr")]
    store = ReviewStore(model)
    store.set(keys[0], "ok", "first")
    os.chmod(store.path, 0o664)
    store.set(keys[1], "ok", "second")
    backup = store.path.with_name(store.path.name + ".bak")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o664
    assert stat.S_IMODE(backup.stat().st_mode) == 0o664
    assert json.loads(backup.read_text("utf-8"))["reviews"].keys() == {keys[0].to_text()}


@pytest.mark.parametrize("fail_on", ["backup", "final"])
def test_crash_during_save_leaves_the_old_sidecar(tmp_path, monkeypatch, fail_on):
    model = _copy(tmp_path, "overloads.onnx")
    keys = [k for k, _o in _keys(open_index(model), "local.tr")]
    store = ReviewStore(model)
    store.set(keys[0], "ok", "first")
    store.set(keys[1], "ok", "second")  # a second save: the first state is now the backup
    backup = store.path.with_name(store.path.name + ".bak")
    assert json.loads(backup.read_text("utf-8"))["reviews"].keys() == {keys[0].to_text()}
    before = store.path.read_bytes()
    before_files = _files(tmp_path)

    real_replace = os.replace

    def crashing_replace(src, dst):
        if fail_on == "backup" or Path(dst) == store.path:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crashing_replace)
    with pytest.raises(InspectorError) as err:
        store.set(keys[2], "wrong", "third")
    assert "\n" not in str(err.value)
    monkeypatch.undo()

    assert store.path.read_bytes() == before
    assert _files(tmp_path) == before_files  # no temporary files left behind
    fresh = ReviewStore(model)
    assert fresh.get(keys[2]).status == "unreviewed" and fresh.get(keys[1]).note == "second"


@pytest.mark.parametrize("content", [
    b"{not json",
    b"\xff\xfe garbage",
    b"[1, 2, 3]",
    json.dumps({"format": "onnx-inspector/review", "version": 99, "reviews": {}}).encode(),
    json.dumps({"format": "something-else", "version": 1}).encode(),
    json.dumps({"format": "onnx-inspector/review", "version": 1, "reviews": []}).encode(),
])
def test_unreadable_sidecar_is_an_error_and_left_untouched(tmp_path, content):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.tr")[0][0]
    store = ReviewStore(model)
    store.path.write_bytes(content)
    with pytest.raises(InspectorError) as err:
        store.load()
    message = str(err.value)
    assert "\n" not in message and "review file" in message
    with pytest.raises(InspectorError):
        store.set(key, "ok")  # never overwrites what it could not read
    with pytest.raises(InspectorError):
        ReviewStore(model).get(key)
    assert store.path.read_bytes() == content
    assert _files(tmp_path) == {"overloads.onnx", "overloads.onnx.review.json"}


def test_unknown_members_and_entries_are_kept(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.tr")[0][0]
    store = ReviewStore(model)
    odd_entry = {"status": "later-status", "note": "from a newer build"}
    store.path.write_text(json.dumps({
        "format": "onnx-inspector/review", "version": 1, "model": "overloads.onnx",
        "x-other-tool": {"keep": [1, 2]},
        "reviews": {
            "not a key": odd_entry,
            key.to_text(): {"status": "suspicious", "note": "n", "updated": "", "family": "local.tr", "slot": "",
                            "x-extra": True},
        },
    }), "utf-8")
    store.load()
    assert store.get(key).status == "suspicious"
    store.set(key, "ok", "looked again")
    doc = json.loads(store.path.read_text("utf-8"))
    assert doc["x-other-tool"] == {"keep": [1, 2]}
    assert doc["reviews"]["not a key"] == odd_entry
    entry = doc["reviews"][key.to_text()]
    assert entry["x-extra"] is True and entry["status"] == "ok" and entry["note"] == "looked again"


def test_two_stores_on_one_model_keep_each_others_reviews(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    keys = [k for k, _o in _keys(open_index(model), "local.sm")]
    a, b = ReviewStore(model), ReviewStore(model)
    a.load()
    b.load()
    a.set(keys[0], "ok")
    b.set(keys[1], "wrong")
    fresh = ReviewStore(model)
    assert (fresh.get(keys[0]).status, fresh.get(keys[1]).status) == ("ok", "wrong")


# --- concurrency, stale temporary files, hostile sidecars ----------------------------------------------------------

def _save_many(model: str, prefix: str, count: int) -> None:
    """One writer: ``count`` reviews, each saved on its own (as clicks in a window would)."""
    store = ReviewStore(Path(model))
    for i in range(count):
        store.set(ReviewKey("overload", "local.fam", "tmpl", f"{prefix}{i}"), "ok", f"{prefix} note {i}")


def test_two_writer_processes_lose_no_review(tmp_path):
    import multiprocessing

    model = _copy(tmp_path, "overloads.onnx")
    ctx = multiprocessing.get_context("spawn")
    count = 150
    procs = [ctx.Process(target=_save_many, args=(str(model), prefix, count)) for prefix in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    fingerprints = {k.fingerprint for k, _r in ReviewStore(model).items()}
    assert fingerprints == {f"{prefix}{i}" for prefix in ("a", "b") for i in range(count)}


def test_two_windows_in_one_process_lose_no_review(tmp_path):
    import threading

    model = _copy(tmp_path, "overloads.onnx")
    threads = [threading.Thread(target=_save_many, args=(str(model), prefix, 100)) for prefix in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(ReviewStore(model)) == 200


def test_stale_temporary_files_of_a_killed_save_are_removed(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.tr")[0][0]
    stale = [tmp_path / ".overloads.onnx.review.json.k3j_x9q2.tmp",
             tmp_path / ".overloads.onnx.review.json.ab12cd34.bak.tmp"]
    others = [tmp_path / ".overloads.onnx.review.json.mine.tmp", tmp_path / "notes.tmp",
              tmp_path / ".other.onnx.review.json.ab12cd34.tmp"]
    for p in stale + others:
        p.write_bytes(b"{half")
    ReviewStore(model).set(key, "ok")
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in others)


@pytest.mark.parametrize("content", [
    b'{"format": "onnx-inspector/review", "version": 1.0, "reviews": {}}',
    b'{"format": "onnx-inspector/review", "version": true, "reviews": {}}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {"k": {"status": "ok", "x": NaN}}}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {}, "n": -Infinity}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {}, "n": 1e999}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {}, "n": ' + b"7" * 5001 + b"}",
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {"k": {"status": "ok", "note": "\\ud800"}}}',
    b'{"format": "onnx-inspector/review", "version": 1, "reviews": {"\\udfff": {"status": "ok"}}}',
])
def test_hostile_sidecar_values_are_refused_and_left_untouched(tmp_path, content):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.tr")[0][0]
    store = ReviewStore(model)
    store.path.write_bytes(content)
    with pytest.raises(InspectorError) as err:
        store.load()
    assert "\n" not in str(err.value) and "review file" in str(err.value)
    with pytest.raises(InspectorError):
        store.set(key, "ok")
    assert store.path.read_bytes() == content


def test_a_note_that_is_not_valid_unicode_is_refused(tmp_path):
    model = _copy(tmp_path, "overloads.onnx")
    key = _keys(open_index(model), "local.tr")[0][0]
    with pytest.raises(ValueError):
        ReviewStore(model).set(key, "ok", "half \ud800 pair")
    assert not ReviewStore(model).path.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_sidecar_never_blocks(tmp_path):
    import threading

    model = _copy(tmp_path, "overloads.onnx")
    store = ReviewStore(model)
    os.mkfifo(store.path)
    errors: list[str] = []

    def load() -> None:
        try:
            store.load()
        except InspectorError as e:
            errors.append(str(e))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():  # unblock the reader so the test run can end
        fd = os.open(store.path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("loading a FIFO sidecar blocked")
    assert len(errors) == 1 and "not a regular file" in errors[0]
