"""A tensor too large to show whole reads the same wherever it is shown: its type, shape, first values and digest, on
one line. Gemma's RMSNorm bakes ``1 + weight`` (32 floats) into its Mul: ``summary`` printed it as JSON cut at 40
characters (``{"dtype": "FLOAT", "shape": [32], "firs…``), ``check`` as a dict's repr, the diff as type and digest."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from inspector.core.bodies.literals import tensor_summary_text, tensor_value
from inspector.core.diff.values import show_value
from inspector.core.specialise.categories import value_text
from inspector.core.summary import _short


def test_a_summarised_tensor_reads_alike_in_the_summary_check_and_diff():
    value, key = tensor_value(numpy_helper.from_array(np.ones(32, np.float32), "add_4"))
    digest = value["digest"][:8]
    assert key.endswith(value["digest"]) and len(digest) == 8
    whole = f"FLOAT[32] [1, 1, 1, 1, 1, 1, 1, 1, …] #{digest}"
    assert tensor_summary_text(value) == value_text(value) == show_value(value) == whole
    # narrower: fewer first values, the type, shape and digest kept
    assert _short(value) == f"FLOAT[32] [1, 1, 1, 1, 1, …] #{digest}" and len(_short(value)) <= 40
    assert tensor_summary_text(value, 20) == f"FLOAT[32] #{digest}"
    halves, _key = tensor_value(numpy_helper.from_array(np.full((4, 8), 0.59460354, np.float32), "s"))
    assert tensor_summary_text(halves) == f"FLOAT[4, 8] [{', '.join(['0.59460354'] * 8)}, …] #{halves['digest'][:8]}"
    # small tensors are lists, shown as lists; other mappings are not tensors
    small, _key = tensor_value(numpy_helper.from_array(np.arange(3, dtype=np.int64), "i"))
    assert small == [0, 1, 2] and tensor_summary_text(small) is None and value_text(small) == "[0, 1, 2]"
    assert tensor_summary_text({"dtype": "FLOAT"}) is None and tensor_summary_text({"shape": [1]}) is None
