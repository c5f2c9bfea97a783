"""Index of local functions: keys, families, call sites at any depth, findings."""

from __future__ import annotations

import sys

import pytest

from inspector.core.model.functions import build_function_index
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.loader import load_model
from tests.builders import deep_if_model
from tests.conftest import FIXTURES


def test_overload_families_and_call_counts():
    index = open_index(FIXTURES / "overloads.onnx")
    fam = index.family("function", "local", "tr")
    assert fam is not None
    assert {o.overload: o.call_count for o in fam.overloads} == {"perm_0213": 2, "perm_0231": 1, "perm_1023": 1}
    assert next(o.function for o in fam.overloads) == FunctionKey("local", "tr", "perm_0213")
    assert {o.overload for o in index.family("function", "local", "sm").overloads} == {"axis_1", "axis_m1"}
    assert len(index.family("function", "local", "scale").overloads) == 2


def test_call_sites_in_subgraphs_and_function_bodies():
    fidx = load_and_index("nested_calls.onnx")
    callers = {(str(site.caller), len(site.path)) for sites in fidx.calls.values() for site in sites}
    assert any(caller == "main" and depth >= 3 for caller, depth in callers)  # inside an If/Loop body
    assert any(caller != "main" for caller, _ in callers)  # inside a function body
    in_function_subgraph = [s for sites in fidx.calls.values() for s in sites if s.caller != MAIN and len(s.path) >= 3]
    assert in_function_subgraph, "a call inside an If inside a function body"
    for sites in fidx.calls.values():
        for s in sites:
            assert s.where.startswith(str(s.caller))
    assert all(fidx.calls[k] for k in fidx.functions), "every function in the fixture is called"


def load_and_index(name: str):
    return build_function_index(load_model(FIXTURES / name).proto)


def test_findings_for_missing_functions_and_recursion():
    index = open_index(FIXTURES / "findings.onnx")
    kinds = [f.kind for f in index.findings]
    assert kinds.count("missing_function") == 1
    assert kinds.count("missing_overload") == 1
    recursion = sorted(f.message for f in index.findings if f.kind == "recursion")
    assert recursion == [
        "recursive functions: local.ping -> local.pong -> local.ping",
        "recursive functions: local.self_rec -> local.self_rec",
    ]


def test_torchscript_variants_form_one_family():
    index = open_index(FIXTURES / "torchscript_modfuncs.onnx")
    fams = [f for f in index.families if f.kind == "function"]
    assert len(fams) == 1
    fam = fams[0]
    assert (fam.domain, fam.name, fam.torchscript_variants) == ("__main__", "Block", True)
    assert [o.function.name for o in fam.overloads if o.function] == ["Block", "Block.1", "Block.2"]
    assert [o.overload for o in fam.overloads] == ["", "1", "2"]
    assert fam.call_count == 4


def test_200_nested_levels_do_not_recurse():
    model = deep_if_model(200)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)  # a recursive walk over 200 levels would fail here
    try:
        fidx = build_function_index(model)
    finally:
        sys.setrecursionlimit(limit)
    sites = fidx.calls[FunctionKey("local", "leaf", "deep")]
    assert len(sites) == 1
    assert len(sites[0].path) == 200 * 2 + 1
    assert sites[0].where.startswith("main/if_0.then_branch/if_1.then_branch/")
    assert sites[0].where.endswith("/bottom")


@pytest.mark.parametrize("name", ["dynamo_block.onnx", "sample"])
def test_flat_exports_have_no_function_findings(name: str):
    from tests.conftest import SAMPLE

    path = SAMPLE if name == "sample" else FIXTURES / name
    index = open_index(path)
    assert not [f for f in index.findings if f.severity == "error"]
    assert not [f for f in index.families if f.kind == "function"]
