"""Fuzzing in ``make test``: a few hundred mutated exports from the zoo and the hostile fixtures (byte flips,
truncations, splices and field-aware mutations, see ``tests/fuzzing.py``) through ``summary --json``, ``diff`` and
``report``: exit 0/1/2 only, one-line errors, schema-valid summaries, no case over its time limit. The same harness
runs long campaigns: ``scripts/fuzz.py``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import onnx
import pytest
from onnx import TensorProto

from tests.fuzzing import SCHEMA, ZOO, Tally, run_case, run_cli, seeds

CASES = 250


def test_fuzz_cases_exit_cleanly_with_one_line_errors_and_valid_summaries(tmp_path: Path):
    files = seeds()
    assert len([p for p in files if p.parent == ZOO]) >= 25
    tally = Tally()
    for case in range(CASES):
        tally.cases += 1
        for outcome in run_case(case, tmp_path, files):
            tally.add(outcome)
    assert not tally.failures, "\n".join(map(str, tally.failures[:10]))
    # the mutations reach both outcomes: models that still load and models that are refused
    assert tally.codes.get(0, 0) > CASES // 4 and tally.codes.get(2, 0) > CASES // 10


@pytest.mark.parametrize("dims", [[-1, 3], [-3, -5], [-(2**63), 2], [2**40, 2**40]])
def test_hostile_dims_never_give_negative_counts(tmp_path: Path, dims: list[int]):
    m = onnx.load(str(ZOO / "pair_eps_a.onnx"))
    m.graph.initializer[0].ClearField("dims")
    m.graph.initializer[0].dims.extend(dims)
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    code, out, err, _ = run_cli(["summary", "--json", str(path)])
    assert code == 0, err
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    assert data["model"]["parameter_count"] >= 0 and data["model"]["parameter_bytes"] >= 0


def test_sparse_initializer_with_hostile_dims_counts_nothing(tmp_path: Path):
    m = onnx.load(str(ZOO / "pair_eps_a.onnx"))
    sparse = m.graph.sparse_initializer.add()
    sparse.values.CopyFrom(TensorProto(name="sv", data_type=TensorProto.FLOAT, dims=[-2, -2]))
    sparse.indices.CopyFrom(TensorProto(name="si", data_type=TensorProto.INT64, dims=[0]))
    sparse.dims.extend([-4, 4])
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    code, out, err, _ = run_cli(["summary", "--json", str(path)])
    assert code == 0, err
    jsonschema.validate(json.loads(out), SCHEMA)


TEXT_CASES = 120


def test_text_syntax_fuzz_cases_exit_cleanly_with_inert_one_line_errors(tmp_path: Path):
    """Mutated ONNX text (deep nesting, megabyte tokens, control characters, cuts, splices) through ``summary
    --json``: the same rules as the binary cases, and no control character reaches stderr."""
    from tests.fuzzing import run_text_case

    tally = Tally()
    for case in range(TEXT_CASES):
        tally.cases += 1
        tally.add(run_text_case(case, tmp_path))
    assert not tally.failures, "\n".join(map(str, tally.failures[:10]))
    # most mutations break the syntax (refused, exit 2); a few leave a model that loads (6 of these 120)
    assert tally.codes.get(0, 0) >= 3 and tally.codes.get(2, 0) >= TEXT_CASES // 2
