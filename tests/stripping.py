"""The zoo's dynamo exports with their torch metadata stripped (``scripts/strip_metadata.py``), as the recognition
tests read them: the one home of the few lines each of them needs (load, strip, save beside the test)."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from strip_metadata import strip, zoo_dynamo

__all__ = ["renamed_outputs", "strip", "stripped_file", "stripped_model", "zoo_dynamo"]


def stripped_model(path: Path) -> onnx.ModelProto:
    """The export at ``path`` without its ``pkg.torch.onnx.*`` metadata (it must have some)."""
    model = onnx.load(str(path), load_external_data=False)
    assert strip(model) > 0, f"{path.name}: no torch metadata to strip"
    return model


def stripped_file(path: Path, folder: Path) -> Path:
    """``stripped_model`` saved in ``folder`` under the export's own name."""
    out = folder / path.name
    onnx.save(stripped_model(path), str(out))
    return out


def renamed_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every node output renamed as another tool might (``/n<k>_output_<j>``), reads following."""
    g = model.graph
    keep = {v.name for v in g.output}
    new = {o: f"/n{k}_output_{j}" for k, n in enumerate(g.node) for j, o in enumerate(n.output) if o and o not in keep}
    for n in g.node:
        n.input[:] = [new.get(v, v) for v in n.input]
        n.output[:] = [new.get(v, v) for v in n.output]
    for v in g.value_info:  # (their types and metadata kept: only the names change)
        v.name = new.get(v.name, v.name)
    return model
