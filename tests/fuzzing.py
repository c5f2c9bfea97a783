"""The fuzz harness shared by ``tests/test_fuzz.py`` (a few hundred cases in ``make test``) and ``scripts/fuzz.py``
(a long campaign): mutated real exports (the zoo) and hostile fixtures, run through the commands in process.

A case is a seed file and a mutation, both drawn from ``random.Random(case_number)``, so every case can be
replayed by its number. Mutations are byte-level (flips, truncation, a spliced run of bytes) or field-aware (the
model is parsed, one field is changed in a way an exporter never would, and it is serialised again): tensor dims
(negative, zero, huge), attribute types and values, metadata strings (markup, mentions, control characters, huge
text, hostile FX text), external-data entries (escaping locations, ``"²"`` lengths, negative offsets), function keys
(renamed, duplicated, recursive, overloads that do not exist), node domains and op types, opsets, ir_version.

Text cases (``run_text_case``) do the same for ONNX text syntax: the printed text of small zoo exports and the
text fixtures, mutated where a text parser is weakest: brackets nested thousands deep (``seq(`` 20,000 deep once
killed the process in the native parser), tokens of a megabyte, unbalanced quotes, control characters, truncation.

What a case must show: ``summary --json`` (and on some cases ``diff`` against the seed and ``report``) exits 0,
1 or 2; exit 2 comes with exactly one line on stderr that is not an internal error; a summary that succeeds
validates against ``resources/summary.schema.json``; where external data or dims were mutated, the app's "load
values" click (``read_tensor`` on every initializer) gives values or a one-line ``InspectorError``; nothing takes
longer than ``CASE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import onnx
from onnx import AttributeProto, TensorProto

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo"
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "resources" / "summary.schema.json").read_text("utf-8"))
CASE_SECONDS = 20

HOSTILE_TEXT = [
    "<script>alert(1)</script>", "@octocat", "www.evil.example", "bob@evil.example", "http://evil.example/x",
    "\x1b[31mred\x1b[0m", "\u202eevil\u202c", "a\x00b", "[target=" * 2000, "x" * 100_000, "",
    "%x : [num_users=1] = call_function[target=torch.ops.aten.transpose.int](args = (%y, ²,",
    "```", "| a | b |", "../../etc/passwd", "{{ 7*7 }}", "\n\n# heading\n",
]


def seeds(small_only: bool = False) -> list[Path]:
    """The zoo's exports and the hostile fixtures (with ``small_only``, those under 160 KB)."""
    files = sorted(ZOO.glob("*.onnx")) + sorted(FIXTURES.glob("*.onnx"))
    return [p for p in files if not small_only or p.stat().st_size < 160_000]


# --- mutations ------------------------------------------------------------------------------------------------

def _flip(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(1, len(data))]


def _splice(data: bytes, rng: random.Random) -> bytes:
    i, j = sorted(rng.randrange(len(data)) for _ in range(2))
    k = rng.randrange(len(data))
    return data[:k] + data[i:j] + data[k:]


def _tensors(m: onnx.ModelProto) -> list[TensorProto]:
    return list(m.graph.initializer)


def _nodes(m: onnx.ModelProto) -> list[onnx.NodeProto]:
    out = list(m.graph.node)
    for f in m.functions:
        out += list(f.node)
    return out


def _dims(m: onnx.ModelProto, rng: random.Random) -> None:
    value = rng.choice([-1, -(2**63), 2**63 - 1, 0, -7, 2**40])
    shapes = [v.type.tensor_type.shape for v in (*m.graph.input, *m.graph.output, *m.graph.value_info)
              if v.type.HasField("tensor_type")]
    tensors = _tensors(m)
    if shapes and (not tensors or rng.random() < 0.3):
        shape = rng.choice(shapes)
        if len(shape.dim):
            shape.dim[rng.randrange(len(shape.dim))].dim_value = value
        else:
            shape.dim.add().dim_value = value
    elif tensors:
        t = rng.choice(tensors)
        if len(t.dims):
            t.dims[rng.randrange(len(t.dims))] = value
        else:
            t.dims.extend([value, rng.choice([-1, -3, 5])])


def _attribute(m: onnx.ModelProto, rng: random.Random) -> None:
    attrs = [a for n in _nodes(m) for a in n.attribute]
    if not attrs:
        return
    a = rng.choice(attrs)
    how = rng.randrange(5)
    if how == 0:
        a.type = rng.choice([v for v in AttributeProto.AttributeType.values() if v != a.type])
    elif how == 1:
        a.ints.extend([rng.choice([-(2**63), 2**63 - 1, 0]) for _ in range(rng.randint(1, 4))])
    elif how == 2:
        a.f = rng.choice([float("nan"), float("inf"), -0.0, 1e308])
    elif how == 3:
        a.ref_attr_name = rng.choice(HOSTILE_TEXT[:6])
    else:
        a.s = rng.choice(HOSTILE_TEXT).encode("utf-8") + rng.choice([b"", b"\xff\xfe", b"\xed\xa0\x80"])


def _metadata(m: onnx.ModelProto, rng: random.Random) -> None:
    text = rng.choice(HOSTILE_TEXT)
    nodes = _nodes(m)
    where = rng.randrange(5)
    if where == 0 and nodes:
        props = rng.choice(nodes).metadata_props
        if len(props):
            props[rng.randrange(len(props))].value = text
        else:
            p = props.add()
            p.key, p.value = "pkg.torch.onnx.fx_node", text
    elif where == 1 and nodes:
        rng.choice(nodes).name = text
    elif where == 2:
        p = m.metadata_props.add()
        p.key, p.value = text, text
    elif where == 3:
        m.producer_name, m.doc_string = text, text
    elif nodes:
        n = rng.choice(nodes)
        n.doc_string = text
        if len(n.output):
            n.output[0] = text


def _external(m: onnx.ModelProto, rng: random.Random) -> None:
    ts = _tensors(m)
    if not ts:
        return
    t = rng.choice(ts)
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for key, values in (("location", ["../../etc/passwd", "/etc/passwd", "w.bin", "", "a/../../x", "."]),
                        ("offset", ["0", "-1", "²", "9" * 40, "1e3"]),
                        ("length", ["16", "-5", "²", "9" * 40, "0"])):
        if rng.random() < 0.8:
            e = t.external_data.add()
            e.key, e.value = key, rng.choice(values)


def _function_keys(m: onnx.ModelProto, rng: random.Random) -> None:
    if not m.functions:
        node = rng.choice(list(m.graph.node)) if len(m.graph.node) else None
        if node is not None:
            node.domain, node.op_type, node.overload = "local", "missing", rng.choice(["", "x", "[target="])
        return
    f = rng.choice(list(m.functions))
    how = rng.randrange(4)
    if how == 0:
        f.overload = rng.choice(["", "dup", "\u202e", "a" * 5000])
    elif how == 1:
        m.functions.append(f)  # a duplicate key
    elif how == 2 and len(f.node):  # recursion
        n = f.node[rng.randrange(len(f.node))]
        n.domain, n.op_type, n.overload = f.domain, f.name, f.overload
    else:
        f.name, f.domain = rng.choice(HOSTILE_TEXT[:5]), rng.choice(["", "ai.onnx", "local"])


def _ops(m: onnx.ModelProto, rng: random.Random) -> None:
    how = rng.randrange(3)
    nodes = _nodes(m)
    if how == 0 and nodes:
        n = rng.choice(nodes)
        n.op_type = rng.choice(["NoSuchOp", "", "If", "Loop", "Constant"])
    elif how == 1:
        for o in m.opset_import:
            o.version = rng.choice([0, -1, 2**62, 1])
    else:
        m.ir_version = rng.choice([0, -1, 3, 11, 2**40])


FIELD_MUTATIONS: list[Callable[[onnx.ModelProto, random.Random], None]] = [
    _dims, _attribute, _metadata, _external, _function_keys, _ops]
BYTE_MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [_flip, _truncate, _splice]


def mutate(seed: Path, rng: random.Random) -> tuple[bytes, str]:
    """The mutated bytes of ``seed`` and the name of the mutation."""
    data = seed.read_bytes()
    if rng.random() < 0.4:
        fn = rng.choice(BYTE_MUTATIONS)
        return fn(data, rng), fn.__name__.strip("_")
    m = onnx.ModelProto()
    m.ParseFromString(data)
    names = []
    for _ in range(rng.randint(1, 3)):
        fn = rng.choice(FIELD_MUTATIONS)
        try:
            fn(m, rng)
        except (ValueError, TypeError, UnicodeError):  # protobuf refused the value: that mutation is moot
            continue
        names.append(fn.__name__.strip("_"))
    try:
        return m.SerializeToString(), "+".join(names)
    except Exception:  # e.g. nesting protobuf cannot serialise: fall back to a byte flip
        return _flip(data, rng), "flip"


# --- text syntax ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def text_seeds() -> tuple[tuple[str, str], ...]:
    """``(name, text)``: the text fixtures and the small zoo exports printed as ONNX text syntax."""
    out = [(p.name, p.read_text("utf-8", "replace")) for p in sorted(FIXTURES.rglob("*.onnxtxt"))]
    for path in seeds(small_only=True):
        if path.parent == ZOO and path.stat().st_size < 60_000:
            out.append((path.name, onnx.printer.to_text(onnx.load(str(path)))))
    return tuple(out)


def _nest(text: str, rng: random.Random) -> str:
    depth = rng.choice([10, 200, 1_001, 5_000, 20_000, 60_000])
    opener, closer = rng.choice([("seq(", ")"), ("(", ")"), ("[", "]"), ("{", "}"), ("tensor(", ")")])
    at = rng.randrange(len(text) + 1)
    return text[:at] + opener * depth + (closer * depth if rng.random() < 0.7 else "") + text[at:]


def _long_token(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    token = rng.choice(["x", "9", '"', "\\", "\u00e9", "=>", "<", ","]) * rng.choice([1_000, 100_000, 1_000_000])
    return text[:at] + token + text[at:]


def _control(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(["\x1b]0;owned\x07", "\x1b[2J", "\x00", "\u202e", "\r", "\ud800"]) + text[at:]


def _cut(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def _text_splice(text: str, rng: random.Random) -> str:
    a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
    at = rng.randrange(len(text) + 1)
    return text[:at] + text[a:b] * rng.randint(1, 50) + text[at:]


TEXT_MUTATIONS: list[Callable[[str, random.Random], str]] = [_nest, _long_token, _control, _cut, _text_splice]


def mutate_text(rng: random.Random) -> tuple[bytes, str, str]:
    """The mutated bytes of a text seed, the seed's name and the mutations' names."""
    name, text = rng.choice(text_seeds())
    names = []
    for _ in range(rng.randint(1, 2)):
        fn = rng.choice(TEXT_MUTATIONS)
        text = fn(text, rng)
        names.append(fn.__name__.strip("_"))
    return text.encode("utf-8", "surrogatepass"), name, "+".join(names)


# --- running --------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    case: int
    seed: str
    mutation: str
    command: str
    code: int
    seconds: float
    problem: str = ""  # empty when the case behaved


@dataclass
class Tally:
    cases: int = 0
    runs: int = 0
    codes: dict[int, int] = field(default_factory=dict)
    failures: list[Outcome] = field(default_factory=list)
    slowest: float = 0.0

    def add(self, o: Outcome) -> None:
        self.runs += 1
        self.codes[o.code] = self.codes.get(o.code, 0) + 1
        self.slowest = max(self.slowest, o.seconds)
        if o.problem:
            self.failures.append(o)


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str], seconds: int = CASE_SECONDS) -> tuple[int, str, str, float]:
    """``onnx-inspector argv`` in process: ``(exit code, stdout, stderr, seconds)``; code -1 on a timeout."""
    from inspector.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with _deadline(seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except _Timeout:
        code = -1
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def check(code: int, out: str, err: str, command: str) -> str:
    """What is wrong with one run ('' when nothing)."""
    if code == -1:
        return f"took longer than {CASE_SECONDS} s"
    if code not in (0, 1, 2):
        return f"exit code {code}"
    if code == 2:
        if err.count("\n") != 1 or not err.startswith("onnx-inspector: error: "):
            return f"not a one-line error: {err[:300]!r}"
        if "internal error" in err:
            return err.strip()[:300]
    if command == "summary" and code == 0:
        try:
            jsonschema.validate(json.loads(out), SCHEMA)
        except (ValueError, jsonschema.ValidationError) as e:
            return f"summary JSON invalid: {' '.join(str(e).split())[:300]}"
    return ""


def _read_tensors(case: int, seed: Path, mutation: str, path: Path) -> Outcome:
    """The app's "load values" click on every initializer: values or a one-line ``InspectorError``, nothing else."""
    from inspector.core.model.loader import load_model
    from inspector.core.model.tensors import read_tensor
    from inspector.core.util.errors import InspectorError

    start = time.perf_counter()
    problem, code = "", 0
    try:
        with _deadline(CASE_SECONDS):
            model = load_model(path)
            for t in list(model.proto.graph.initializer)[:50]:
                try:
                    read_tensor(t, model.folder)
                except InspectorError as e:
                    if "\n" in str(e):
                        problem = f"not a one-line error: {str(e)[:200]!r}"
                    code = 2
    except InspectorError:
        code = 2
    except _Timeout:
        code, problem = -1, f"took longer than {CASE_SECONDS} s"
    except Exception as e:  # what the click path must never raise
        code, problem = 3, f"read_tensor raised {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return Outcome(case, seed.name, mutation, "read_tensor", code, round(time.perf_counter() - start, 3), problem)


def run_text_case(case: int, folder: Path) -> Outcome:
    """Text case ``case``: a mutated text seed through ``summary --json`` (named ``.onnxtxt``, or ``.onnx`` on odd
    cases: the loader recognises text syntax by its first bytes too)."""
    rng = random.Random(case)
    data, seed, mutation = mutate_text(rng)
    path = folder / f"text{case}.{'onnx' if case % 2 else 'onnxtxt'}"
    path.write_bytes(data)
    code, out, err, secs = run_cli(["summary", "--json", str(path)])
    problem = check(code, out, err, "summary")
    if not problem and any(c in err for c in "\x1b\x07\x00\r"):
        problem = f"a control character reached stderr: {err[:200]!r}"
    with contextlib.suppress(OSError):
        path.unlink()
    return Outcome(case, seed, mutation, "summary", code, round(secs, 3), problem)


def run_case(case: int, folder: Path, seed_files: list[Path], extra_commands: bool = True) -> list[Outcome]:
    """Case ``case``: mutate a seed (chosen by the case number) and run the commands on it."""
    rng = random.Random(case)
    seed = rng.choice(seed_files)
    data, mutation = mutate(seed, rng)
    path = folder / f"case{case}.onnx"
    path.write_bytes(data)
    commands: list[tuple[str, list[str]]] = [("summary", ["summary", "--json", str(path)])]
    if extra_commands and case % 4 == 0:
        commands.append(("diff", ["diff", str(seed), str(path), "--format", rng.choice(["json", "md", "text"])]))
    if extra_commands and case % 8 == 1:
        commands.append(("report", ["report", str(path), "--format", rng.choice(["md", "json"]), "-o", "-"]))
    outcomes = []
    for name, argv in commands:
        code, out, err, secs = run_cli(argv)
        outcomes.append(Outcome(case, seed.name, mutation, name, code, round(secs, 3), check(code, out, err, name)))
    if "external" in mutation or "dims" in mutation:
        outcomes.append(_read_tensors(case, seed, mutation, path))
    with contextlib.suppress(OSError):
        path.unlink()
    return outcomes
