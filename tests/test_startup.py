"""Start-up: a command imports only what it uses, and what it skips gives the same results.

The commands read models through onnx's protobuf classes alone (``core/util/onnxpkg.py``): the rest of the onnx
package, numpy and onnx's schema registry are left out unless a command needs them. Each check here runs in a fresh
interpreter, since the test process itself has long imported everything.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper, numpy_helper

from inspector.core.bodies.literals import attribute_value
from inspector.core.model.onnx_operators import ATTRIBUTE_DEFAULTS, OLDEST_OPSETS, ONNX_OPERATORS
from inspector.core.specialise.onnx_defaults import default_key
from inspector.core.util.floats import float32
from inspector.core.util.plain_tensors import plain_tensor

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "zoo"
FIXTURES = ROOT / "tests" / "fixtures"
SMALL_A, SMALL_B = ZOO / "pair_eps_a.onnx", ZOO / "pair_eps_b.onnx"


def _fresh(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object last."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("argv", "exit_code"), [
    (["summary", str(SMALL_A)], 0),
    (["summary", str(SMALL_A), "--json"], 0),
    (["check", str(SMALL_A)], 1),
    (["diff", str(SMALL_A), str(SMALL_B)], 1),
    (["diff", str(SMALL_A), str(SMALL_B), "--format", "json"], 1),
])
def test_commands_run_on_the_protobuf_classes_alone(argv, exit_code):
    out = _fresh(f"""
import contextlib, io, json, sys
from inspector.cli import main
with contextlib.redirect_stdout(io.StringIO()) as text:
    code = main({argv!r})
from inspector.core.util import onnxpkg
print(json.dumps({{"code": code, "printed": len(text.getvalue()), "complete": onnxpkg.is_complete(),
                  "numpy": "numpy" in sys.modules, "registry": "onnx.defs" in sys.modules,
                  "resources": "importlib.resources" in sys.modules,
                  "process_pool": "concurrent.futures.process" in sys.modules}}))
""")
    assert out == {"code": exit_code, "printed": out["printed"], "complete": False, "numpy": False,
                   "registry": False, "resources": False, "process_pool": False}
    assert out["printed"] > 100


# What each command leaves out (it never uses it): onnx's own import work, numpy, protobuf's pure-Python message layer
# (the classes are made on upb), the app, the layout, the fold, the HTML report, the folder pool, the body template
# matcher (every node of these exports has its metadata), hashlib (OpenSSL; BLAKE2b comes from _blake2), inspect's code
# with dis and tokenize (dataclasses imports it, deferred: core/util/deferred.py), shutil (argparse's help formatter
# asked it the terminal's width; fileio copies a backup with it), protobuf's well-known types (with calendar: upb's
# table of their bases is filled when a class maker is imported), the classes of findings (these exports have none) and
# of an aten function's first call (they have no local functions), threading and datetime (a deep model's parse, a
# write, a review's time), the tensor decoder (these exports have no tensor constant in a call), and the other
# commands' engines. The console script's process is inspected as it ends (``entry`` ends it with ``os._exit``).
_NEVER = ("numpy", "onnx.onnx_ml_pb2", "onnx.checker", "onnx.defs", "onnx.helper", "onnx.numpy_helper",
          "google.protobuf.descriptor_pool", "google.protobuf.internal.python_message", "google.protobuf.text_format",
          "google.protobuf.internal.builder", "importlib.resources", "concurrent.futures.process", "jinja2",
          "PySide6", "inspector.gui", "inspector.render", "inspector.pdf", "inspector.core.fold",
          "inspector.report.build", "inspector.report.html", "inspector.core.model.recognise",
          "inspector.core.aten.templates", "hashlib", "dis", "tokenize", "shutil",
          "google.protobuf.internal.well_known_types", "calendar", "inspector.core.model.findings",
          "inspector.core.specialise.function_calls", "threading", "datetime", "inspector.core.util.plain_tensors")
# Made only where a model needs them (each dataclass about 4 million instructions of start-up, callgrind): a local
# function's call sites and families, the module tree, fold's signature forms, a tensor's facts and external-data
# reader, where a constant lands, a check's changed value, what a local function implements; and ``ast`` (the fx
# arguments are parsed with ``_ast`` and ``compile``, a schema's plain string default read between its quotes).
_WHERE_NEEDED = ("ast", "inspector.core.model.function_sites", "inspector.core.model.module_tree",
                 "inspector.core.model.aten_functions",
                 "inspector.core.model.signature_forms", "inspector.core.model.tensors",
                 "inspector.core.specialise.constant_uses", "inspector.core.review.value_changes")
_NOT_FOR = {"summary": ("inspector.core.diff", "inspector.core.review", "inspector.report", "tempfile",
                        "inspector.core.model.scan_like"),
            "check": ("inspector.core.diff", "inspector.core.summary", "inspector.report.diff_render", "tempfile",
                      "inspector.core.model.scan_like", "inspector.core.model.parameters"),
            "diff": ("inspector.core.review", "inspector.core.summary", "inspector.report.check_text", "tempfile",
                     "inspector.core.diff.folders", "difflib", "heapq",  # (no bodies or units left to align)
                     "inspector.core.aten.torchlib")}  # (no local function to recognise, no body to analyse)
_USED = {"summary": ("inspector.core.summary", "inspector.core.specialise.specialiser"),
         "check": ("inspector.core.review.check", "inspector.report.check_text"),
         "diff": ("inspector.core.diff.run", "inspector.report.diff_render")}

_ENTRY = """
import json, os, sys
out, sys.argv = sys.argv[1], ["onnx-inspector", *sys.argv[2:]]
real_exit = os._exit
def _exit(code):
    import onnx
    from inspector.core.util import deferred
    with open(out, "w") as fh:
        json.dump({"code": code, "modules": sorted(sys.modules), "module_of_classes": onnx.ModelProto.__module__,
                   "inspect_ran": deferred.is_complete("inspect"), "copy_ran": deferred.is_complete("copy")}, fh)
    real_exit(code)
os._exit = _exit
from inspector.cli import entry
entry()
"""


def _console(argv: list[str], out: Path, env: dict[str, str] | None = None,
             says: str = "") -> tuple[dict[str, object], str]:
    """Run the console script's ``entry`` in a fresh interpreter: what it had imported when it ended, and its output.
    ``says``: what it writes to stderr must end with this (by default it writes nothing there)."""
    proc = subprocess.run([sys.executable, "-c", _ENTRY, str(out), *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=env)
    assert proc.stderr.endswith(says) and (says or proc.stderr == "") and "Traceback" not in proc.stderr
    return json.loads(out.read_text()), proc.stdout


@pytest.mark.parametrize(("argv", "exit_code"), [
    (["summary", str(SMALL_A)], 0),
    (["check", str(SMALL_A)], 1),
    (["diff", str(SMALL_A), str(SMALL_B)], 1),
])
def test_a_command_imports_only_what_it_uses(argv, exit_code, tmp_path):
    got, printed = _console(argv, tmp_path / "modules.json")
    modules = set(got["modules"])
    command = argv[0]
    assert got["code"] == exit_code
    assert [m for m in (*_NEVER, *_WHERE_NEEDED, *_NOT_FOR[command]) if m in modules] == []
    assert got["inspect_ran"] is False  # every dataclass the command made has a docstring (dataclasses' one use)
    assert got["copy_ran"] is False and "weakref" not in modules  # (dataclasses' asdict and astuple: not called)
    assert all(m in modules for m in _USED[command])  # (the list above is of a process that did the work)
    # onnx's classes were made on upb without running onnx_ml_pb2 (not in the list above), and read the model as
    # onnx's own do: the same output as the command run here, in a process that imported all of onnx
    assert "google._upb._message" in modules and got["module_of_classes"] == "onnx.onnx_ml_pb2"
    from inspector.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == exit_code
    assert printed == buf.getvalue() and len(printed) > 100


def test_recognising_calls_reads_constants_without_numpy(tmp_path):
    """An export some of whose nodes carry no fx metadata (pair_heads: nodes the optimizer made) has them matched
    against the body templates, which read the small constants those nodes use: without numpy and the rest of onnx
    (the canonical values decoded with ``struct``). Reading them with ``numpy_helper`` made every such command, and
    every worker of a folder diff, pay the whole of ``import onnx`` (a folder diff of the zoo: 0.33 -> 0.52 s)."""
    model = SMALL_A.with_name("pair_heads_a.onnx")
    got, printed = _console(["summary", str(model)], tmp_path / "modules.json")
    modules = set(got["modules"])
    assert got["code"] == 0 and len(printed) > 100
    assert "inspector.core.model.recognise" in modules  # the templates were looked for
    assert [m for m in _NEVER if m in modules] == ["inspector.core.model.recognise", "inspector.core.aten.templates",
                                                   "inspector.core.util.plain_tensors"]  # (constants read: decoder)


def test_without_upb_the_classes_come_from_onnx_ml_pb2_as_before(tmp_path):
    """protobuf run on its pure-Python implementation (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``): the
    module is imported as it is, and the command prints what it prints on upb."""
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    got, printed = _console(["summary", str(SMALL_A)], tmp_path / "modules.json", env)
    modules = set(got["modules"])
    assert got["code"] == 0 and "onnx.onnx_ml_pb2" in modules and "google.protobuf.internal.python_message" in modules
    assert "onnx.checker" not in modules and "numpy" not in modules
    _upb, printed_upb = _console(["summary", str(SMALL_A)], tmp_path / "upb.json")
    assert printed == printed_upb and len(printed) > 100


def test_the_rest_of_onnx_arrives_on_first_use_with_the_same_classes():
    out = _fresh(f"""
import json, threading
import inspector.cli
import onnx
from inspector.core.util import onnxpkg
before = onnxpkg.is_complete()
model_class = onnx.ModelProto
nested = (onnx.TensorProto.Segment, onnx.TypeProto.Tensor, onnx.TensorShapeProto.Dimension, onnx.TensorProto.FLOAT)
got = []
threads = [threading.Thread(target=lambda: got.append(onnx.checker)) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
from onnx import helper, numpy_helper
import onnx.onnx_pb
node = helper.make_node("Relu", ["x"], ["y"])
m = onnx.load({str(SMALL_A)!r}, load_external_data=False)
print(json.dumps({{"before": before, "after": onnxpkg.is_complete(), "same": model_class is onnx.onnx_pb.ModelProto,
                  "node": type(node) is onnx.NodeProto, "loaded": type(m) is model_class, "nodes": len(m.graph.node),
                  "one_checker": len({{id(c) for c in got}}) == 1 and len(got) == 4,
                  "version": onnx.__version__ == __import__("importlib.metadata").metadata.version("onnx"),
                  "nested": nested == (onnx.onnx_pb.TensorProto.Segment, onnx.onnx_pb.TypeProto.Tensor,
                                       onnx.onnx_pb.TensorShapeProto.Dimension, 1)}}))
""")
    assert out == {"before": False, "after": True, "same": True, "node": True, "loaded": True, "nodes": 15,
                   "one_checker": True, "version": True, "nested": True}


def test_a_program_that_imported_onnx_first_keeps_it():
    out = _fresh("""
import json, onnx, sys
import inspector.cli
from inspector.core.util import onnxpkg
print(json.dumps({"complete": onnxpkg.is_complete(), "numpy": "numpy" in sys.modules}))
""")
    assert out == {"complete": True, "numpy": True}


def test_a_program_that_uses_the_python_api_gets_onnx_as_it_imports_it():
    """Only the command line, which owns its process, defers onnx's import work: a program importing the API gets
    the onnx package its own ``import onnx`` makes, complete."""
    out = _fresh("""
import json, sys
import inspector.api
from inspector.core.model.index import open_index
import onnx
from inspector.core.util import onnxpkg
print(json.dumps({"complete": onnxpkg.is_complete(), "version": hasattr(onnx, "__version__")}))
""")
    assert out == {"complete": True, "version": True}


def test_fold_check_completes_onnx_where_it_needs_the_checker(tmp_path):
    out = _fresh(f"""
import contextlib, io, json
from inspector.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["fold", {str(SMALL_A)!r}, "-o", {str(tmp_path / "f.onnx")!r}, "--check"])
from inspector.core.util import onnxpkg
print(json.dumps({{"code": code, "complete": onnxpkg.is_complete()}}))
""")
    assert out == {"code": 0, "complete": True}
    onnx.checker.check_model(onnx.load(tmp_path / "f.onnx"), full_check=True)


@pytest.mark.parametrize("argv", [["fold", str(SMALL_A), "-o", "{tmp}/f.onnx"],
                                  ["report", str(SMALL_A), "--format", "html", "-o", "{tmp}/r.html"]])
def test_fold_and_reports_make_their_messages_and_labels_without_the_rest_of_onnx(argv, tmp_path):
    """Fold makes its attributes, Constant nodes and opset ids on the protobuf classes (``core/fold/messages.py``) and a
    report's labels decode small constants with ``struct`` (``render/labels.py``): neither imports ``onnx.helper``,
    ``numpy_helper`` or numpy (0.07-0.1 s of every fold and report, and BLAS threads)."""
    written = tmp_path / ("f.onnx" if argv[0] == "fold" else "r.html")
    # (a report says what it wrote on stderr, after graphviz's own warnings about this machine's fonts, if any)
    got, _printed = _console([a.format(tmp=tmp_path) for a in argv], tmp_path / "modules.json",
                             says=" bytes)\n" if argv[0] == "report" else "")
    modules = set(got["modules"])
    assert got["code"] == 0 and written.stat().st_size > 10_000
    assert [m for m in ("numpy", "onnx.helper", "onnx.numpy_helper", "onnx.checker", "onnx.defs") if m in modules] == []
    assert ("inspector.core.fold.messages" if argv[0] == "fold" else "inspector.render.labels") in modules


def test_constant_labels_read_without_numpy_say_what_numpy_read_says():
    from inspector.core.model.graph import is_small_constant
    from inspector.core.util.floats import float_text
    from inspector.render.labels import constant_text

    shown = 0
    for t in _tensors():
        text = constant_text(t)
        head = text.split(" = ")[0]
        try:
            values = numpy_helper.to_array(t).reshape(-1).tolist()
        except Exception:
            assert text == head, t.name  # (numpy could not decode it either: the type and shape alone)
            continue
        if not is_small_constant(t):
            assert text == head
            continue
        shown += 1
        parts = [float_text(x) if isinstance(x, float) else str(x) for x in values[:8]]  # (as the panels write them)
        full = f"{head} = {', '.join(parts)}" + (", …" if len(values) > 8 else "")
        assert text == (full if len(full) <= 48 else full[:47] + "…"), t.name
    assert shown > 50


def _tensors() -> list[TensorProto]:
    """Every initializer and Constant value of the zoo and the fixtures, and crafted ones for the edge cases."""
    found: list[TensorProto] = []
    for path in sorted((ROOT / "tests").rglob("*.onnx")):
        try:
            m = onnx.load(path, load_external_data=False)
        except Exception:
            continue
        found += list(m.graph.initializer)
        found += [a.t for n in m.graph.node for a in n.attribute if a.type == onnx.AttributeProto.TENSOR]
    rng = random.Random(34)
    for dtype, values in [(TensorProto.FLOAT, [1.5, -0.0, float("inf"), 3.4e38]), (TensorProto.DOUBLE, [1e300, -2.5]),
                          (TensorProto.INT64, [-(2**63), 2**63 - 1, 0]), (TensorProto.INT32, [-(2**31), 7]),
                          (TensorProto.BOOL, [True, False]), (TensorProto.UINT8, [0, 255]),
                          (TensorProto.INT8, [-128, 127]), (TensorProto.UINT64, [2**64 - 1]),
                          (TensorProto.INT16, [-5, 300]), (TensorProto.UINT16, [65535]),
                          (TensorProto.UINT32, [2**32 - 1])]:
        typed = helper.make_tensor("t", dtype, [len(values)], values)
        raw = numpy_helper.from_array(numpy_helper.to_array(typed).reshape(1, len(values)), "r")
        assert raw.HasField("raw_data")
        found += [typed, raw]
    found.append(helper.make_tensor("scalar", TensorProto.FLOAT, [], [2.0]))
    found.append(helper.make_tensor("empty", TensorProto.FLOAT, [2, 0], []))
    found.append(helper.make_tensor("grid", TensorProto.INT64, [2, 3, 4], list(range(24))))
    found.append(helper.make_tensor("big", TensorProto.FLOAT, [40], [rng.uniform(-1, 1) for _ in range(40)]))
    bools = TensorProto(name="b", data_type=TensorProto.BOOL, dims=[3], raw_data=b"\x00\x02\xff")
    short = TensorProto(name="s", data_type=TensorProto.FLOAT, dims=[3], raw_data=b"\x00" * 8)
    wrong_count = TensorProto(name="w", data_type=TensorProto.INT64, dims=[3], int64_data=[1, 2])
    negative = TensorProto(name="n", data_type=TensorProto.FLOAT, dims=[-1], float_data=[1.0, 2.0])
    half = helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.0, 2.0])
    typed_uint8 = TensorProto(name="u", data_type=TensorProto.UINT8, dims=[2], int32_data=[1, 300])
    return [*found, bools, short, wrong_count, negative, half, typed_uint8]


def test_tensors_decode_without_numpy_as_numpy_decodes_them():
    tensors = _tensors()
    decoded = 0
    for t in tensors:
        plain = plain_tensor(t)
        try:
            arr = np.asarray(numpy_helper.to_array(t))
        except Exception:
            assert plain is None, t.name
            continue
        if plain is None:
            continue  # left to numpy: a type or a typed field whose conversion numpy makes
        decoded += 1
        assert plain.data == np.ascontiguousarray(arr).tobytes(), t.name
        assert plain.count == arr.size and plain.shape == arr.shape
        assert plain.tolist() == arr.tolist(), t.name
        assert plain.first(8) == arr.reshape(-1)[:8].tolist(), t.name
    assert decoded > 100
    # what numpy would do differently is never decoded here: float16, and UINT8 held in int32_data
    assert plain_tensor(tensors[-2]) is None and plain_tensor(tensors[-1]) is None


def test_canonical_values_of_the_catalogue_are_read_as_numpy_reads_them():
    """The body templates' canonical constant values (``aten.templates.canonical_tensor``), decoded without numpy,
    equal those numpy's decoding gives, on every small tensor of the zoo and fixtures and the crafted ones above."""
    from onnx import AttributeProto

    from inspector.core.aten.templates import SMALL_TENSOR, canonical_tensor

    def with_numpy(t: TensorProto) -> dict[str, object]:
        out: dict[str, object] = {"t": int(t.data_type), "s": [int(d) for d in t.dims]}
        if math.prod(t.dims) > SMALL_TENSOR or t.data_location == TensorProto.EXTERNAL:
            return out
        try:
            arr = numpy_helper.to_array(t).reshape(-1)
        except (ValueError, TypeError, AttributeError):
            return out
        with np.errstate(over="ignore"):
            floats = [float(np.float32(x)) for x in arr.tolist()] if arr.dtype.kind == "f" else []
        out["v"] = ([x if math.isfinite(x) else repr(x) for x in floats] if arr.dtype.kind == "f" else
                    [int(x) for x in arr.tolist()] if arr.dtype.kind in "iub" else [str(x) for x in arr.tolist()])
        return out

    tensors = list(_tensors())
    for path in [*sorted(ZOO.glob("*.onnx")), *sorted(FIXTURES.glob("*.onnx"))]:
        model = onnx.load(path, load_external_data=False)
        tensors += [t for t in model.graph.initializer if math.prod(t.dims) <= SMALL_TENSOR]
        tensors += [a.t for n in model.graph.node for a in n.attribute if a.type == AttributeProto.TENSOR]
    assert len(tensors) > 500
    for t in tensors:
        assert canonical_tensor(t) == with_numpy(t), t.name


def test_float32_rounding_is_numpys():
    rng = random.Random(34)
    values = [0.0, -0.0, 1e-46, 3.4028235e38, 3.4028236e38, 3.5e38, -1e300, float("inf"), -float("inf")]
    values += [rng.uniform(-1e6, 1e6) for _ in range(2000)] + [rng.uniform(-1, 1) * 10 ** rng.randint(-50, 50)
                                                              for _ in range(2000)]
    with np.errstate(over="ignore"):
        for x in values:
            assert struct.pack("<d", float32(x)) == struct.pack("<d", float(np.float32(x))), x
    assert math.isnan(float32(float("nan")))


def test_operator_tables_answer_as_onnx_defs():
    for domain, ops in ONNX_OPERATORS.items():
        assert all(onnx.defs.has(op, domain) for op in ops)
    assert {op for (_d, op) in ATTRIBUTE_DEFAULTS} == set().union(*ONNX_OPERATORS.values())
    checked = 0
    for domain, op in ATTRIBUTE_DEFAULTS:
        for opset in range(1, OLDEST_OPSETS[domain] + 1):
            try:
                schema = onnx.defs.get_schema(op, opset, domain)
            except Exception:
                schema = None
            names = set(schema.attributes) if schema is not None else set()
            for name in names | {"no_such_attribute"}:
                attr = schema.attributes.get(name) if schema is not None else None
                want = attribute_value(attr.default_value)[1] \
                    if attr is not None and attr.default_value.type != onnx.AttributeProto.UNDEFINED else None
                assert default_key(op, domain, name, opset) == want, (domain, op, name, opset)
                checked += 1
    assert checked > 5000


def test_folder_diff_workers_start_once_not_per_pair(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    names = []
    for kind in ("eps", "heads", "scale", "transpose"):  # exports that differ in a value: the diff names arguments
        for copy in (1, 2):
            names.append(f"{kind}_{copy}.onnx")
            shutil.copyfile(ZOO / f"pair_{kind}_a.onnx", a / names[-1])
            shutil.copyfile(ZOO / f"pair_{kind}_b.onnx", b / names[-1])
    log = tmp_path / "catalogue_builds.txt"
    out = _fresh(f"""
import json, os
from inspector.core.aten import schemas
real = schemas.SchemaCatalogue.from_text.__func__
def counted(cls, text):
    with open({str(log)!r}, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    return real(cls, text)
schemas.SchemaCatalogue.from_text = classmethod(counted)
from inspector.core.diff.folders import diff_dirs
d = diff_dirs({str(a)!r}, {str(b)!r}, jobs=2)
print(json.dumps({{"rows": [r.status for r in d.rows], "parent": os.getpid()}}))
""")
    assert out["rows"] == ["different"] * len(names) and len(names) == 8
    builds = log.read_text().split()
    # the schema catalogue (a worker's first pair builds it) is built once per worker process: not per pair
    assert 1 <= len(builds) <= 2 and len(set(builds)) == len(builds) and str(out["parent"]) not in builds


def test_the_escapers_written_out_escape_as_the_library_did():
    """textsafe escapes HTML without importing ``html`` (its entity table is start-up): the same text as
    ``html.escape(..., quote=True)`` for every character a model string may hold."""
    import html

    from inspector.core.util.textsafe import html_text, printable

    rng = random.Random(34)
    texts = ["", "plain", "<b onclick='x'>\"&amp;\"</b>", "a=b://c", "'\"<>&" * 3, "\ud800<\n>", "caf\u00e9 & <x>"]
    texts += ["".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x3000)])) for _ in range(40))
              for _ in range(300)]
    for text in texts:
        for keep in (False, True):
            want = html.escape(printable(text, keep_newlines=keep), quote=True).replace("=", "&#61;") \
                .replace("://", "&#58;//")
            assert html_text(text, keep_newlines=keep) == want, text


def test_a_deferred_module_runs_on_first_use_once_and_is_the_module_every_import_gets():
    """``core/util/deferred.py``: ``import`` gets the registered module without running its code, a dunder probe
    does not run it, the first name asked for runs it in place (once, however many threads ask), and the module is
    then the real one: ``inspect`` works, and ``inspect.signature`` is the function its code defines."""
    out = _fresh("""
import json, sys, threading
from inspector.core.util import deferred
deferred.defer("inspect")
module = sys.modules["inspect"]
import inspect
imported = inspect is module and not deferred.is_complete("inspect") and "dis" not in sys.modules
probe = hasattr(inspect, "__wrapped__")
after_probe = deferred.is_complete("inspect")
got = []
threads = [threading.Thread(target=lambda: got.append(inspect.signature)) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
from inspect import Parameter
def f(a, b=2): pass
print(json.dumps({"imported": imported, "probe": probe, "after_probe": after_probe,
                  "complete": deferred.is_complete("inspect"), "same": sys.modules["inspect"] is module,
                  "one": len({id(g) for g in got}) == 1 and len(got) == 4, "dis": "dis" in sys.modules,
                  "signature": str(inspect.signature(f)), "parameter": Parameter.__module__,
                  "doc": inspect.getdoc(deferred.defer).split()[0]}))
""")
    assert out == {"imported": True, "probe": False, "after_probe": False, "complete": True, "same": True,
                   "one": True, "dis": True, "signature": "(a, b=2)", "parameter": "inspect", "doc": "Register"}


def test_a_dataclass_without_a_docstring_still_gets_its_signature_as_doc_after_inspect_was_deferred():
    """What dataclasses uses inspect for: the doc of a class without one. With inspect deferred, such a class
    (none of ours) runs inspect's code and gets the same doc as in a process that imported it."""
    out = _fresh("""
import json, sys
from inspector.core.util import deferred
deferred.defer("inspect")
from dataclasses import dataclass
@dataclass(frozen=True, slots=True)
class Documented:
    \"\"\"Has one.\"\"\"
    a: int
ran = deferred.is_complete("inspect")
@dataclass(frozen=True, slots=True)
class Bare:
    a: int
    b: str = "x"
print(json.dumps({"ran_for_documented": ran, "doc": Bare.__doc__, "complete": deferred.is_complete("inspect")}))
""")
    assert out == {"ran_for_documented": False, "doc": "Bare(a: int, b: str = 'x')", "complete": True}


@pytest.mark.parametrize("command", ["summary", "check", "diff", "fold", "report", "gui"])
@pytest.mark.parametrize("columns", [None, "40", "80", "200"])
def test_help_usage_and_errors_are_argparses_own(command, columns, monkeypatch, capsys):
    """The commands' parsers make their help formatters when they format (``inspector.commands``): the help, the
    usage and a usage error read exactly as with argparse's own formatter classes, at any terminal width; parsing
    arguments makes none (argparse made one per ``add_argument``, each asking the terminal's width via shutil)."""
    import argparse
    import importlib

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    module = importlib.import_module(f"inspector.commands.{command}")
    ours = module.build_parser()
    stock = module.build_parser()
    stock.formatter_class = next(c for c in ours.formatter_class.__mro__ if c.__module__ == "argparse")
    stock.description = (stock.description or "").replace("``", "")  # (ours writes the docstring's literals plain)
    assert ours.formatter_class is not stock.formatter_class
    assert ours.format_help() == stock.format_help() and len(ours.format_help()) > 200
    assert ours.format_usage() == stock.format_usage()
    if command == "diff":  # (the folder diff's default, read from its module when the help is formatted)
        from inspector.core.diff.folders import MAX_JOBS

        assert f"(default: at most {MAX_JOBS}, never more than the CPUs)" in " ".join(ours.format_help().split())
    errors = []
    for parser in (ours, stock):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(["--no-such-option"])
        errors.append((exit_info.value.code, capsys.readouterr().err))
    assert errors[0] == errors[1] and errors[0][0] == 2 and errors[0][1].startswith("usage: onnx-inspector")
    made = []
    real_init = argparse.HelpFormatter.__init__
    monkeypatch.setattr(argparse.HelpFormatter, "__init__", lambda self, *a, **k: made.append(1) or real_init(
        self, *a, **k))
    parsed = module.build_parser().parse_args(["model.onnx", *(["other.onnx"] if command == "diff" else []),
                                               *(["-o", "out"] if command in ("fold", "report") else [])])
    assert parsed is not None and made == []


@pytest.mark.parametrize("maker", ["import google.protobuf.timestamp_pb2",
                                   "from google.protobuf import message_factory",
                                   "from google.protobuf import reflection",
                                   "import onnx; onnx.helper"])
def test_well_known_types_get_their_python_bases_after_onnxs_classes_were_made_without_them(maker):
    """onnx's classes are made on upb with an empty table of the well-known types' bases (``onnxpkg``): importing any
    of protobuf's class makers first fills it from ``well_known_types``, so a Timestamp, Duration or Struct class made
    later has its Python methods, the very bases a process without the command line gives it."""
    out = _fresh(f"""
import json, sys
import inspector.cli
from google._upb import _message
before = dict(_message.__internal_wktbases)
imported_before = "google.protobuf.internal.well_known_types" in sys.modules
{maker}
from google.protobuf import timestamp_pb2, struct_pb2
from google.protobuf.internal import well_known_types
import datetime
ts = timestamp_pb2.Timestamp()
ts.FromDatetime(datetime.datetime(2020, 1, 2, 3, 4, 5))
s = struct_pb2.Struct()
s.update({{"a": 1.5}})
table = _message.__internal_wktbases
print(json.dumps({{"before": before, "imported_before": imported_before, "json": ts.ToJsonString(),
                  "struct": s["a"], "table": sorted(table), "same": all(table[k] is v for k, v in
                                                                     well_known_types.WKTBASES.items()),
                  "bases": isinstance(ts, well_known_types.Timestamp),
                  "finder_left": not any(type(f).__name__ == "_WellKnownBases" for f in sys.meta_path)}}))
""")
    assert out == {"before": {}, "imported_before": False, "json": "2020-01-02T03:04:05Z", "struct": 1.5,
                   "table": ["google.protobuf.Any", "google.protobuf.Duration", "google.protobuf.FieldMask",
                             "google.protobuf.ListValue", "google.protobuf.Struct", "google.protobuf.Timestamp"],
                   "same": True, "bases": True, "finder_left": True}


def test_a_program_that_imported_a_class_maker_first_gets_the_well_known_types_at_once():
    out = _fresh("""
import json, sys
from google.protobuf import message_factory
import inspector.cli
from google._upb import _message
print(json.dumps({"table": len(_message.__internal_wktbases), "registered": "onnx" in sys.modules,
                  "imported": "google.protobuf.internal.well_known_types" in sys.modules}))
""")
    assert out == {"table": 6, "registered": True, "imported": True}


def test_dataclasses_asdict_runs_copy_deferred_by_the_command_line():
    """The command line defers ``copy`` too (``dataclasses`` imports it for ``asdict`` and ``astuple``): they still
    deep-copy as before, running copy's code on first use."""
    out = _fresh("""
import json, sys
import inspector.cli
from inspector.core.util import deferred
from dataclasses import asdict, astuple, dataclass, field
@dataclass(frozen=True, slots=True)
class Box:
    \"\"\"A test box.\"\"\"
    items: list = field(default_factory=list)
before = deferred.is_complete("copy")
inner = [1, [2, 3]]
box = Box([inner])
d = asdict(box)
print(json.dumps({"before": before, "d": d, "copied": d["items"][0] is not inner, "t": astuple(box),
                  "after": deferred.is_complete("copy"), "same": sys.modules["copy"].deepcopy.__module__}))
""")
    assert out == {"before": False, "d": {"items": [[1, [2, 3]]]}, "copied": True, "t": [[[1, [2, 3]]]],
                   "after": True, "same": "copy"}


def test_what_a_small_command_leaves_out_arrives_where_a_model_needs_it():
    """The classes moved out of the commands' way are made, and ``ast`` imported, by the paths that need them: a
    model with local functions (its call sites and families), the module tree, an fx argument that is no literal
    (a ``Symbol``, its text cut by ``ast``), an escaped string default; and they give what they gave before."""
    out = _fresh(f"""
import json, sys
import inspector.cli
from inspector.core.model.index import open_index
first = {{m: m in sys.modules for m in ("ast", "inspector.core.model.function_sites",
                                       "inspector.core.model.module_tree", "inspector.core.model.aten_functions")}}
from inspector.core.model.fx import parse_fx_node
ast_before = "ast" in sys.modules
fx = parse_fx_node("%to : [num_users=1] = call_function[target=torch.ops.aten._to_copy.default]"
                   "(args = (%x,), kwargs = {{dtype: torch.float32, device: cpu}})")
ast_after = "ast" in sys.modules
ts = open_index({str(ZOO / "ts_functions.onnx")!r})
sites = "inspector.core.model.function_sites" in sys.modules
fams = sorted((f.name, [ts.functions.family_of(k).label(k) for k in f.members])
              for f in ts.functions.families.values())[:2]
calls = sum(len(v) for v in ts.functions.calls.values())
aten = {{"targets": sorted({{str(ts.functions.aten_target(k)) for k in ts.functions.functions}}),
        "imported": "inspector.core.model.aten_functions" in sys.modules}}
flat = open_index({str(SMALL_A)!r})
tree_before = "inspector.core.model.module_tree" in sys.modules
root = flat.provenance.module_root
from inspector.core.aten.schema_text import parse_literal
print(json.dumps({{"first": first, "sites": sites, "families": fams, "calls": calls, "aten": aten,
                  "tree_before": tree_before,
                  "root": [type(root).__module__, type(root).__name__, root.total_nodes() > 0],
                  "ast_before": ast_before, "kwargs": {{k: [type(v).__name__, repr(v)] for k, v in fx.kwargs.items()}},
                  "ast": ast_after, "plain": parse_literal("'mean'"), "escaped": parse_literal("'a\\tb'")}}))
""")
    assert out["first"] == {"ast": False, "inspector.core.model.function_sites": False,
                            "inspector.core.model.module_tree": False, "inspector.core.model.aten_functions": False}
    assert out["aten"] == {"targets": ["None"], "imported": True}  # (module functions: none implements an aten op)
    assert out["sites"] is True and out["calls"] > 0 and len(out["families"]) == 2
    assert out["tree_before"] is False and out["root"] == ["inspector.core.model.module_tree", "ModuleNode", True]
    assert out["ast_before"] is False and out["ast"] is True
    assert out["kwargs"] == {"dtype": ["Symbol", "torch.float32"], "device": ["Symbol", "cpu"]}
    assert out["plain"] == [True, "mean"] and out["escaped"] == [True, "a\tb"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (``"\\d"``: an invalid escape, read as before)
def test_a_plain_string_default_reads_as_literal_eval_reads_it():
    """``schema_text.parse_literal`` reads a quoted default with no backslash and only printable characters as the
    text between its quotes, without ``ast``: for every text its string pattern accepts, the value
    ``ast.literal_eval`` gives, as before (escapes, controls, a lone surrogate: ``literal_eval``'s own answer)."""
    import ast

    from inspector.core.aten.schema_text import _literals, parse_literal

    rng = random.Random(34)
    alphabet = ["a", "Z", "0", " ", "_", "-", ".", ",", "'", '"', "\\", "\n", "\t", "\x00", "\x7f", "\u00e9",
                "\u20ac", "\ud800", "\U0001f600", "\u2028", "\x0c", "n", "\\n"]
    bodies = ["", "mean", "none", "tanh", "a b", "caf\u00e9"]
    bodies += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8))) for _ in range(3000)]
    fast = checked = 0
    for body in bodies:
        for quote in ("'", '"'):
            raw = quote + body + quote
            if not _literals()[2].fullmatch(raw):
                continue  # (not read as a string at all: a quote inside, as before)
            try:
                value = ast.literal_eval(raw)
                want = (True, value) if isinstance(value, str) else (False, raw)
            except (ValueError, SyntaxError):
                want = (False, raw)
            assert parse_literal(raw) == want, raw
            checked += 1
            fast += "\\" not in raw and raw[1:-1].isprintable()
    assert checked > 2000 and fast > 500

