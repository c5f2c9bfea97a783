"""String and enum arguments of recognised calls, against the exporter's own metadata: the evidence ties a Gelu's
``approximate`` to the argument as it is (``string``), a Cast's ``to`` to a torch dtype (``dtype``) and a Pad's
``mode`` to the argument by a learned table (``map:constant=constant;reflect=reflect;replicate=edge``); none came back
("approximate=<missing>"). Each comes back as FX writes it, a bare word (``approximate: none``), so that it reads as
a call's with its metadata does. The zoo's dynamo exports, stripped, against their originals."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.core.model.fx import Symbol
from inspector.core.model.index import open_index
from inspector.core.model.signature import call_signature
from tests.conftest import ZOO
from tests.stripping import stripped_file


def _nodes(call) -> tuple[int, ...]:
    return tuple(sorted(int(p[0]) for p in call.node_paths if len(p) == 1))


def _text(value: object) -> str:
    return value.text if isinstance(value, Symbol) else str(value)


@pytest.mark.parametrize(("name", "words"), [
    ("bert", {("aten::gelu", "approximate", "none"), ("aten::_to_copy", "dtype", "torch.bool")}),
    ("padnet", {("aten::pad", "mode", "reflect"), ("aten::pad", "mode", "replicate")}),
    ("t5_noopt", {("aten::_to_copy", "dtype", "torch.float32"), ("aten::_to_copy", "dtype", "torch.int64")}),
])
def test_a_word_argument_comes_back_as_torch_gave_it(tmp_path: Path, name: str, words: set[tuple[str, str, str]]):
    truth = {_nodes(c): c for c in open_index(ZOO / f"{name}.onnx").provenance.calls}
    got = set()
    for call in open_index(stripped_file(ZOO / f"{name}.onnx", tmp_path)).provenance.calls:
        assert call.fx is not None
        for param, value in call.fx.kwargs.items():
            if isinstance(value, Symbol):
                want = {b.parameter.name: b.value for b in call_signature(truth[_nodes(call)]).bound}[param]
                assert _text(value) == _text(want), (call.target, param)
                got.add((call.target, param, value.text))
    assert got == words
