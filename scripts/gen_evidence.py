"""Learn ``resources/aten_evidence.txt`` (and ``resources/evidence_coverage.md``) from one-op torch exports.

For each aten overload that onnxscript's torchlib registers and that has non-tensor parameters: build a one-op module
with representative inputs (``scripts/evidence_cases.py``), export it with ``torch.onnx.export(..., dynamo=True)``,
then export variants that change one argument (and one input dimension) at a time. The inspector itself reads every
export (so the arguments are bound exactly as it binds them at run time): the call's body is aligned slot by slot
with the base export's, and a literal slot that moved with a parameter is explained by the first relation of
``inspector.core.specialise.relations`` that holds for every value it took (equal, dim normalised by rank, swap ->
perm, list -> pads, per spatial axis, element k, reciprocal, string -> enum table, ...). What could not be learned
is recorded with its reason (not exportable, decomposed into other ops, value not baked, value only in a shape, the
body's structure changes, no relation explains it).

The body template catalogue (``gen_templates.py``) reads the same exports, and also wants the bodies of exports made
without the optimizer (``torch.onnx.export(..., optimize=False)``, as ``gen_zoo.py`` makes the zoo's ``*_noopt``
models): Constant/Concat/Cast of Python values left unfolded, the SDPA scale as ``Sqrt``, ``CastLike`` where the
optimizer folds a cast. ``--unoptimised`` exports each call of the template plan once more that way (no evidence is
learned from them: the evidence catalogue stays the optimised exports'): by default for the priority overloads and
the zoo's targets, the overloads real unoptimised models call (99 of 428; it about doubles their time).

It also wants the bodies of exports with dynamic shapes (``dynamic_shapes``, as most exports of real models are made:
a batch or sequence length left symbolic): the optimizer can no longer fold what torchlib computes from an input's
shape, so the body holds it (SDPA reshapes its key with sizes that ``Shape``, ``Slice`` and ``Concat`` compute, where
a static export holds two constant shapes: gpt2_dynamic's attention was recognised as lone calls). ``--dynamic``
exports each call of the template plan once more with every input dimension ``Dim.AUTO`` (the exporter keeps a
dimension static where the op needs it to be), kept under ``dynamic``; the same overloads as ``--unoptimised`` by
default.

Usage (in ``.venv-zoo``, with torch and onnxscript)::

    .venv-zoo/bin/python scripts/gen_evidence.py [--budget SECONDS] [--only aten::roll ...] [--pairs]
                                                 [--unoptimised zoo|all|none] [--dynamic zoo|all|none]

Resumable: each overload's result is one line of ``build/evidence/results.jsonl``, kept across runs (``--redo``
forgets them); the catalogue and the coverage table are rewritten from all results after every overload. The
priority overloads (``evidence_cases.PRIORITY``, the zoo's targets, prims ops among them) come first, then the
registry in order.
``--pairs`` also writes the test pairs of ``tests/evidence`` (``evidence_cases.PAIRS``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import inspector  # noqa: E402
import resources  # noqa: E402  (the package data, installed as inspector.resources; this tree is not installed here)

sys.modules.setdefault("inspector.resources", resources)
inspector.resources = resources  # type: ignore[attr-defined]

import evidence_cases as cases  # noqa: E402
from evidence_learn import Observation, learn, observe  # noqa: E402

STATE = REPO / "build" / "evidence" / "results.jsonl"
PENDING = STATE.parent / "pending"  # the overload being exported: if it is still here at start, it crashed torch
CATALOGUE = REPO / "resources" / "aten_evidence.txt"
COVERAGE = REPO / "resources" / "evidence_coverage.md"
PAIRS_DIR = REPO / "tests" / "evidence"
EXPORTS = STATE.parent / "exports"  # every overload's base and variant exports, read by gen_templates.py
EXPORT_SECONDS = 120


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def fire(_sig: int, _frame: Any) -> None:
        raise Timeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def registry_targets(namespaces: tuple[str, ...] = ("aten::",)) -> list[str]:
    """The targets torchlib registers in ``namespaces``: the aten ones, which the run walks and the coverage counts,
    by default."""
    from onnxscript.function_libs.torch_lib import (
        ops,  # noqa: F401  (registers the functions)
        registration,
    )

    return sorted({t for t, _o in registration.default_registry.items() if t.startswith(namespaces)})


# Tensors a model holds as a module's parameters or buffers (the names aten's schemas give them): their shapes stay
# static in a dynamic export, as a real model's weights do. Made dynamic, they gave bodies no model has (a Conv
# without kernel_shape, a default bias expanded to the weight's runtime shape), which fitted every Conv.
WEIGHTS = frozenset({"weight", "bias", "running_mean", "running_var", "weight_ih", "weight_hh", "bias_ih", "bias_hh"})


def export(call: cases.Call, path: Path, optimize: bool = True, dynamic: bool = False) -> None:
    """Export ``call`` as a one-op module to ``path`` (quietly: the exporter prints its steps); ``dynamic``: every
    dimension of every input ``Dim.AUTO`` (symbolic unless the op needs it static), but for the weights'."""
    import torch

    module = cases.OneOp(call)
    tensors = tuple(call.tensors)
    # ``forward(*tensors)`` takes one argument, the tuple: its shapes are given as one tuple too
    shapes = (tuple(None if name in WEIGHTS else {d: torch.export.Dim.AUTO for d in range(t.dim())}
                    for t, name in zip(tensors, call.tensor_params, strict=True)),) if dynamic else None
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()), time_limit(EXPORT_SECONDS):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module.eval(), tensors, dynamo=True, verbose=False, optimize=optimize,
                                    dynamic_shapes=shapes)
        program.save(str(path))


def run_target(target: str, work: Path, unoptimised: bool = True, dynamic: bool = False) -> dict[str, Any]:
    """``run_both`` and, with ``unoptimised``, the same calls exported without the optimizer, with ``dynamic``, with
    dynamic shapes, where the recipe names an op the optimizer fuses with this one (``fused``), after that op, and
    where it passes an argument as a size (``sized``), with it symbolic (``export_more``), for the body template
    catalogue; the evidence row is the static optimised exports' alone."""
    row = run_both(target, work)
    if row.get("status") in ("no_parameters", "exported") and row.get("optimize", True):
        if unoptimised:
            row["unoptimised"] = export_more(target, work, "noopt")
        if dynamic:
            row["dynamic"] = export_more(target, work, "dynamic")
        rec = cases.recipe(cases.op_of(target))
        if rec.get("fused") is not None:
            row["fused"] = export_more(target, work, "fused")
        if rec.get("fused_modules"):
            row["fused"] = export_modules(target, work, rec["fused_modules"])
        if rec.get("modules"):
            row["modules"] = export_modules(target, work, rec["modules"], "modules")
        if cases.recipe(cases.op_of(target)).get("sized") is not None:
            row["sized"] = export_more(target, work, "sized")
    return row


def export_more(target: str, work: Path, kind: str) -> int:
    """Export the template plan's base call and variants once more, as models exported another way hold them:
    ``noopt`` with ``optimize=False`` (the zoo's ``*_noopt``: unfolded Concat/Cast of constants, the SDPA scale as
    Sqrt, CastLike), ``dynamic`` with dynamic shapes (sizes computed from ``Shape``), ``fused`` after the op its recipe
    names (``evidence_cases.Call.before``), ``sized`` with dynamic shapes and an argument passed as a size of the first
    tensor (``evidence_cases.Call.sized``); kept under ``kind`` (and ``kind_number_other``) for ``gen_templates.py``,
    no evidence learned. Returns how many exported."""
    done = 0
    optimize, dynamic = kind != "noopt", kind in ("dynamic", "sized")
    rec = cases.recipe(cases.op_of(target))
    before = rec.get("fused") if kind == "fused" else None
    sized = rec.get("sized") if kind == "sized" else None
    kinds = [(kind, False)] + ([(f"{kind}_number_other", True)] if cases.takes_number_other(target) else [])
    for folder, number_other in kinds:
        plan = cases.plan(target, number_other=number_other, templates=True)
        if isinstance(plan, str):
            continue
        calls = [("base", "", plan.base)] + [(f"v{k}", what, c) for k, (what, c) in enumerate(plan.variants)]
        for name, _what, call in calls:
            try:
                export(replace(call, before=before, sized=sized) if before or sized else call,
                       work / f"{name}.onnx", optimize=optimize, dynamic=dynamic)
                done += 1
            except Exception:  # a variant that does not export is left out, as in run_plan
                if name == "base":
                    break
        if (work / "base.onnx").is_file():
            (work / "variants.json").write_text(json.dumps({"optimize": optimize, "dynamic": dynamic, "variants": {
                f"v{k}": what for k, (what, _call) in enumerate(plan.variants)},
                "tensors": tensor_params(plan), **({"sized": sorted(sized)} if sized else {})}), encoding="utf-8")
        keep_exports(target, work, folder)
    return done


def export_modules(target: str, work: Path, modules: list[tuple[Any, ...]], kind: str = "fused") -> int:
    """Export each of a recipe's ``fused_modules`` (``evidence_cases``: the call after an op the optimizer fuses it
    with, where the fusion needs the weights a model holds) as ``base`` and ``v<k>``, kept under ``fused`` for
    ``gen_templates.py``; its one input is passed as no parameter of the call (the fused op's input is not the call's),
    so the template binds none. With ``kind`` ``modules``, a recipe's ``modules`` (the call as a module makes it, its
    weights parameters the optimizer folds: ``nn.LSTM``), each with its input's shape, which is the call's ``input``.
    Returns how many exported."""
    import torch

    done = 0
    names: dict[str, str] = {}
    for k, (what, make, *shape) in enumerate(modules):
        name = "base" if k == 0 else f"v{k - 1}"
        x = torch.randn(*(shape[0] if shape else cases.FUSED_INPUT), generator=torch.Generator().manual_seed(0))
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), time_limit(EXPORT_SECONDS):
                warnings.simplefilter("ignore")
                torch.onnx.export(make(), (x,), dynamo=True, verbose=False, optimize=True).save(
                    str(work / f"{name}.onnx"))
        except Exception:  # a module that does not export is left out, as a variant is in run_plan
            if k == 0:
                break
            continue
        done += 1
        if k:  # (what the module varied is no argument of the call: masked, read back as none, ``#`` marks it)
            names[name] = ":".join(f"#{kind}_{w}" for w in what.split(":"))  # (``a:b``: b varied around a)
    if (work / "base.onnx").is_file():
        given = {n: ["input"] for n in ["base", *names]} if kind == "modules" else {}
        (work / "variants.json").write_text(json.dumps({"optimize": True, "dynamic": False, "variants": names,
                                                        "tensors": given}), encoding="utf-8")
    keep_exports(target, work, kind)
    return done


def tensor_params(plan: cases.Plan) -> dict[str, list[str]]:
    """Per export of ``plan`` (``base``, ``v0``, ...), the parameter of each graph input ``tensors_<k>``."""
    return {"base": plan.base.tensor_params,
            **{f"v{k}": call.tensor_params for k, (_what, call) in enumerate(plan.variants)}}


def run_both(target: str, work: Path) -> dict[str, Any]:
    """``run_plan``; for a ``.Tensor`` overload whose ``other`` may be a Python number, once with a tensor and once
    with a number there (the lowering differs: ``alpha`` multiplies a tensor ``other`` with a Mul, and is folded
    into a number ``other``), the evidence of both kept."""
    row = run_plan(target, work, cases.plan(target))
    keep_exports(target, work, "tensor_other" if cases.takes_number_other(target) else "")
    if row.get("status") in ("no_parameters", "exported"):
        # the body template catalogue also wants overloads with tensor parameters only, and optional tensors
        # left out or given: their exports are kept, the evidence row stays as it was
        extra = cases.plan(target, templates=True)
        if not isinstance(extra, str) and (row.get("status") == "no_parameters" or any(
                w.startswith(("#with", "#default", "#value", "#first")) for w, _c in extra.variants)
                or sum(w == "#shape" for w, _c in extra.variants) > 1):  # another tensor's dimension too
            if row.get("status") == "exported":  # the plain variants are under ``plain`` already
                extra.variants = [(w, c) for w, c in extra.variants if w.startswith("#")]
            run_plan(target, work, extra)
            keep_exports(target, work, "templates")
    for k, given in enumerate(cases.recipe(cases.op_of(target)).get("bases", ())):  # the evidence of another base
        plan = cases.plan(target, base_values=given)  # (instance_norm without running statistics: another body)
        if not isinstance(plan, str):
            row = merged(row, run_plan(target, work, plan), keep_reasons=True)
            keep_exports(target, work, f"base{k + 1}")
    if not cases.takes_number_other(target):
        return row
    second = run_plan(target, work, cases.plan(target, number_other=True))
    keep_exports(target, work, "number_other")
    return merged(row, second)


def merged(row: dict[str, Any], second: dict[str, Any], keep_reasons: bool = False) -> dict[str, Any]:
    """The result of one target with the evidence of a second plan of it (a number for ``other``, another base) added:
    each parameter's places of both. Where the first has none, the second's result replaces it; with ``keep_reasons``
    (another base, which fixes the arguments that make it one), only where the second has evidence."""
    if second["status"] != "exported":
        return row
    if row["status"] != "exported":  # only tensor parameters (mul.Tensor): the number is all there is to learn
        return second
    params = row.setdefault("params", {})
    for p, info in second.get("params", {}).items():
        mine = params.get(p)
        if mine is None or mine.get("status") != "evidence":
            if not keep_reasons or mine is None or info.get("status") == "evidence":
                params[p] = info
        elif info.get("status") == "evidence":
            mine["evidence"] = sorted({tuple(e) for e in mine["evidence"]} | {tuple(e) for e in info["evidence"]})
    return row


def keep_exports(target: str, work: Path, variant: str) -> None:
    """Move the exports of one plan (``base.onnx``, ``v<k>.onnx`` and ``variants.json``) to ``EXPORTS``, where the
    body template catalogue (``gen_templates.py``) reads them without torch."""
    files = sorted(work.glob("*.onnx")) + sorted(work.glob("variants.json"))
    if not files:
        return
    folder = EXPORTS / re.sub(r"[^A-Za-z0-9_.]+", "_", target) / (variant or "plain")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / "target.txt").write_text(target, encoding="utf-8")
    for f in files:
        f.replace(folder / f.name)


def run_plan(target: str, work: Path, plan: cases.Plan | str) -> dict[str, Any]:
    """Export the base call and one variant per argument (and input dimension); learn what moved with what."""
    if isinstance(plan, str):
        found = cases.schema_params(target)
        names = [p.name for p in found[1] if not p.is_tensor] if found is not None else []
        return {"target": target, "status": plan.split(":", 1)[0], "reason": plan, "parameters": names}
    base_path = work / "base.onnx"
    # (an overload that only a symbolic size makes, ``sym_size.int``: exported with dynamic shapes, its recipe says)
    dynamic = bool(cases.recipe(cases.op_of(target)).get("dynamic"))
    try:
        export(plan.base, base_path, dynamic=dynamic)
    except Exception as e:  # an export that fails is a finding of the coverage table, not an error of the script
        return {"target": target, "status": "not_exportable", "reason": _one_line(e),
                "parameters": plan.parameters}
    base = observe(base_path, target)
    optimize = True
    if isinstance(base, str) and base.endswith("no aten call"):
        # the optimizer folded the whole call into a constant (zeros, full, arange of static sizes): without it,
        # the call's nodes are there, as in an export made with optimize=False
        optimize = False
        try:
            export(plan.base, base_path, optimize, dynamic=dynamic)
        except Exception as e:
            return {"target": target, "status": "not_exportable", "reason": _one_line(e),
                    "parameters": plan.parameters}
        base = observe(base_path, target)
    if isinstance(base, str):
        return {"target": target, "status": "decomposed", "reason": base, "parameters": plan.parameters}
    variants: dict[str, list[Observation]] = {}
    failed: dict[str, str] = {}
    (work / "variants.json").write_text(json.dumps({"optimize": optimize, "dynamic": dynamic, "variants": {
        f"v{k}": what for k, (what, _call) in enumerate(plan.variants)}, "tensors": tensor_params(plan)}),
        encoding="utf-8")
    for k, (what, call) in enumerate(plan.variants):
        path = work / f"v{k}.onnx"
        try:
            export(call, path, optimize, dynamic=dynamic)
        except Exception as e:
            failed.setdefault(what, _one_line(e))
            continue
        obs = observe(path, target)
        if isinstance(obs, str):
            failed.setdefault(what, obs)
            continue
        variants.setdefault(what, []).append(obs)
    result = learn(target, base, variants, failed, plan)
    return {"target": target, "status": "exported", "optimize": optimize, **result}


def _one_line(e: BaseException) -> str:
    """The root cause in one line, without the exporter's colours: its own message says only which step failed."""
    seen = {id(e)}
    while (e.__cause__ or e.__context__) is not None and id(e.__cause__ or e.__context__) not in seen:
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen.add(id(e))
    text = [line for line in _plain(f"{type(e).__name__}: {e}").splitlines() if line.strip()]
    return (text[0] if text else type(e).__name__)[:160]


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def load_state() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if STATE.is_file():
        for line in STATE.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                out[row["target"]] = row
    return out


def write_outputs(state: dict[str, dict[str, Any]], registry: list[str], versions: str) -> None:
    from evidence_report import catalogue_lines, coverage_markdown

    CATALOGUE.write_text("\n".join(catalogue_lines(state, versions)) + "\n", encoding="utf-8")
    COVERAGE.write_text(coverage_markdown(state, registry, versions), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=3600.0, help="stop starting overloads after this many s")
    parser.add_argument("--only", nargs="*", default=None, help="only these targets (aten::op.overload)")
    parser.add_argument("--redo", action="store_true", help="forget earlier results of the targets run")
    parser.add_argument("--pairs", action="store_true", help="write the test pairs of tests/evidence")
    parser.add_argument("--no-run", action="store_true", help="only rewrite the outputs from the results")
    parser.add_argument("--unoptimised", choices=("zoo", "all", "none"), default="zoo",
                        help="which overloads are also exported without the optimizer, for the template catalogue: "
                             "the priority ones and the zoo's targets (default), all, or none")
    parser.add_argument("--dynamic", choices=("zoo", "all", "none"), default="zoo",
                        help="which overloads are also exported with dynamic shapes, for the template catalogue "
                             "(as --unoptimised)")
    args = parser.parse_args(argv)

    import onnxscript
    import torch

    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    versions = f"torch {torch.__version__}, onnxscript {onnxscript.__version__}"
    registry = registry_targets()
    state = load_state()
    if args.pairs:
        cases.write_pairs(PAIRS_DIR, export)
    zoo = zoo_targets()
    registered = set(registry_targets(("aten::", "prims::")))  # (the prims ops the zoo calls run too: ``ordered``)
    order = args.only if args.only is not None else cases.ordered(registry, zoo, registered)
    chosen = {"zoo": set(cases.PRIORITY + zoo), "all": set(order), "none": set()}
    unoptimised, dynamic = chosen[args.unoptimised], chosen[args.dynamic]
    if args.redo:
        for t in order:
            state.pop(t, None)
        STATE.parent.mkdir(parents=True, exist_ok=True)
        STATE.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in state.values()), encoding="utf-8")
    start = time.monotonic()
    done = 0
    if not args.no_run:
        STATE.parent.mkdir(parents=True, exist_ok=True)
        crashed = PENDING.read_text(encoding="utf-8").strip() if PENDING.is_file() else ""
        if crashed and crashed not in state:  # a segfault in torch ends the process with no exception to catch
            state[crashed] = {"target": crashed, "status": "not_exportable", "reason": "the export crashed torch"}
            with STATE.open("a", encoding="utf-8") as f:
                f.write(json.dumps(state[crashed], sort_keys=True) + "\n")
        for target in order:
            if target in state:
                continue
            if time.monotonic() - start > args.budget:
                print(f"budget spent: {done} overloads this run, {len(state)} in all", file=sys.stderr)
                break
            t0 = time.monotonic()
            PENDING.write_text(target, encoding="utf-8")
            with tempfile.TemporaryDirectory(prefix="evidence-") as tmp:
                try:
                    row = run_target(target, Path(tmp), target in unoptimised, target in dynamic)
                except Timeout as e:
                    row = {"target": target, "status": "not_exportable", "reason": f"Timeout: {e}"}
            row["seconds"] = round(time.monotonic() - t0, 1)
            state[target] = row
            with STATE.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, sort_keys=True) + "\n")
            done += 1
            learned = sum(len(p.get("evidence", ())) for p in row.get("params", {}).values())
            print(f"{len(state):4d} {target}: {row['status']} {learned} evidence ({row['seconds']} s)",
                  file=sys.stderr, flush=True)
            if done % 10 == 0:
                write_outputs(state, registry, versions)
    PENDING.unlink(missing_ok=True)
    write_outputs(state, registry, versions)
    return 0


def zoo_targets() -> list[str]:
    """The targets the zoo's exports call, aten's and prims' (they come first)."""
    from inspector.core.model.index import open_index

    found: list[str] = []
    for path in sorted((REPO / "tests" / "zoo").glob("*.onnx")):
        index = open_index(path)
        for family in index.families:
            for ov in family.overloads:
                for call in ov.aten_calls[:1]:
                    if call.target not in found:
                        found.append(call.target)
    return found


if __name__ == "__main__":
    os.environ.setdefault("TORCH_LOGS", "")
    raise SystemExit(main())
