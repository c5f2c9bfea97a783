"""Value names as the template matcher's evidence (``core.model.recognise_names``): torch's dynamo exporter names an
aten call's output after its FX node (the op's name, with a counter), and a value made inside a call's body
``val_<n>``; stripping the metadata keeps the names.

Truth is the exporter's own ``fx_node`` metadata of the unstripped zoo exports (torch 2.13); the one crafted file is
the Llama export with one Add appended (a 2-D bias after its head, as BART's ``final_logits_bias``), named as the
exporter names and then not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from inspector.core.aten.evidence import op_name
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise_names import is_call_output, named_op
from tests.conftest import ROOT
from tests.stripping import renamed_outputs, stripped_file, stripped_model

sys.path.insert(0, str(ROOT / "scripts"))
from strip_metadata import zoo_dynamo

ZOO = ROOT / "tests" / "zoo"


def test_the_exporter_names_calls_after_their_op_and_nothing_inside_a_body_so() -> None:
    """What the matcher relies on, checked against torch's metadata on every dynamo export of the zoo: of 1,359 aten
    calls of the main graphs, 1,334 make a value named after their op (the rest: batch norms, whose outputs are
    ``getitem``'s, and values shared with another call); of the 1,266 values made and read inside one call, none is
    named as a call's output."""
    calls = named = inside = inside_named = 0
    for path in zoo_dynamo():
        index = open_index(path)
        nodes = index.proto.graph.node
        for call in index.provenance.calls:
            if call.scope != MAIN or not call.target.startswith("aten::"):
                continue
            at = [int(p[0]) for p in call.node_paths]
            made = [o for k in at for o in nodes[k].output if o]
            read = {v for k in at for v in nodes[k].input}
            calls += 1
            named += any(named_op(o, {op_name(call.target)}) for o in made)
            inside += sum(v in read for v in made)
            inside_named += sum(v in read and is_call_output(v) for v in made)
    # (1359, 1334, 1266, 0 before padnet: its 19 calls, each named after its op, and repeat's Expand read by its Tile)
    # (1378, 1353, 1267, 0 before renumber_a and renumber_b: their 18 calls, and each linear's MatMul read by its Add)
    assert (calls, named, inside, inside_named) == (1396, 1371, 1275, 0)


def test_names_read_as_the_exporter_writes_them() -> None:
    ops = {"view", "_unsafe_view", "conv2d", "linear"}
    assert named_op("view", ops) == "view" and named_op("view_12", ops) == "view"
    assert named_op("_unsafe_view_2", ops) == "_unsafe_view" and named_op("conv2d", ops) == "conv2d"
    for name in ("val_12", "view_", "view_x", "view_١", "getitem_3", "/model/MatMul_output_0", "", "_12"):
        assert named_op(name, ops) is None, name
    assert is_call_output("linear_16") and is_call_output("t") and is_call_output("_unsafe_view_3")
    for name in ("val_3", "getitem_2", "/model/MatMul_output_0", "logits", "linear_1_2", "add_1_L46", "x" * 10_000):
        assert not is_call_output(name), name


def test_a_body_of_several_overloads_is_the_one_its_output_names(tmp_path: Path) -> None:
    """pair_heads_a's two attentions are SDPA's body, which ``_scaled_dot_product_flash_attention_for_cpu`` lowers to
    as well, and its eight lone Reshapes fit ``view`` and ``_unsafe_view`` alike: each is now the call its output is
    named after, as torch's metadata says. Renamed by another tool, the same graph's calls keep every candidate."""
    truth = {tuple(int(p[0]) for p in c.node_paths): c.target for c in open_index(ZOO / "pair_heads_a.onnx")
             .provenance.calls if c.scope == MAIN}
    got = {tuple(int(p[0]) for p in c.node_paths): c for c in open_index(stripped_file(
        ZOO / "pair_heads_a.onnx", tmp_path)).provenance.calls if c.recognised}
    sdpa = [c for c in got.values() if "scaled_dot_product" in c.target]
    assert [(c.target, len(c.node_paths)) for c in sdpa] == [("aten::scaled_dot_product_attention", 9)] * 2
    views = [(nodes, c) for nodes, c in got.items() if "view" in "".join(c.candidates)]
    assert len(views) == 8 and all(c.candidates == (truth[nodes],) == ("aten::view",) for nodes, c in views)
    assert all(c.target == truth[nodes] for nodes, c in got.items() if nodes in truth and len(c.candidates) == 1)
    renamed = tmp_path / "renamed.onnx"
    onnx.save(renamed_outputs(stripped_model(ZOO / "pair_heads_a.onnx")), str(renamed))
    again = [c for c in open_index(renamed).provenance.calls if c.recognised]
    assert sorted(c.candidates for c in again if "scaled_dot_product" in c.target) == [
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::scaled_dot_product_attention")] * 2
    assert [c.candidates for c in again if "view" in "".join(c.candidates)] == [
        ("aten::_unsafe_view", "aten::view")] * 8


@pytest.mark.parametrize(("head", "calls"), [
    ("linear_14", [("aten::linear", ["MatMul"]), ("aten::add.Tensor", ["Add"])]),  # as the exporter names it
    ("val_900", [("aten::linear", ["MatMul", "Add"])]),  # a value inside a body: linear's, bias and all
])
def test_a_value_named_as_a_call_output_is_a_boundary(tmp_path: Path, head: str,
                                                      calls: list[tuple[str, list[str]]]) -> None:
    """Llama's head (a MatMul of its folded weight, ``linear_14``) with an Add of a 2-D bias appended: MatMul then
    Add is linear's body with a bias as well as two calls (BART's head: ``linear`` without bias, then ``add`` of
    ``final_logits_bias``). Named as the exporter names a call's output, the MatMul's value is a boundary: two calls;
    named as a value inside a body, one linear."""
    model = stripped_model(ZOO / "llama_gqa.onnx")
    g = model.graph
    last = g.node[len(g.node) - 1]
    assert (last.op_type, list(last.output)) == ("MatMul", ["linear_14"])
    last.output[0] = head
    bias = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64), "final_logits_bias")
    g.initializer.append(bias)
    g.node.append(helper.make_node("Add", [head, "final_logits_bias"], ["logits"]))
    g.output[0].name = "logits"
    path = tmp_path / f"{head}.onnx"
    onnx.save(model, str(path))
    index = open_index(path)
    onnx.checker.check_model(index.proto, full_check=True)
    end = len(g.node) - 2
    tail = [c for c in index.provenance.calls if c.recognised and int(c.node_paths[-1][0]) >= end]
    assert [(c.target, [g.node[int(p[0])].op_type for p in c.node_paths]) for c in tail] == calls


def test_a_recognised_call_is_named_as_torch_named_it(tmp_path: Path) -> None:
    """A recognised call takes the name of the value it makes where that value is named after one of its candidates'
    ops (the exporter names a call's output after its FX node), so a stripped export's calls read as its original's:
    on every dynamo export of the zoo, 1,357 recognised calls whose nodes are a call of torch's metadata have that
    call's FX name (a node a graph pass made is named after its overload: ``sym_size_int_18``), none another, and 14
    (outputs named otherwise: a batch norm's ``getitem``, a shared value) are ``recognised_<n>`` (1,307 and 23 before
    the noopt chains named as one body's were one call, ``inside_named``, the masks' ``bitwise_and`` had its template,
    and the Gemms of GPT-2's Conv1Ds without their bias of zeros theirs); renamed by another tool, every one is but
    the one whose output is the graph's."""
    same = other = numbered = 0
    for path in zoo_dynamo():
        truth = {tuple(int(p[0]) for p in c.node_paths): c.name for c in open_index(path).provenance.calls
                 if c.scope == MAIN}
        for call in open_index(stripped_file(path, tmp_path)).provenance.calls:
            if not call.recognised:
                continue
            assert call.fx is not None and call.fx.name == call.name  # (its FX text names it so too)
            if call.name.startswith("recognised_"):
                numbered += 1
            elif truth.get(tuple(int(p[0]) for p in call.node_paths)) == call.name:
                same += 1
            else:
                other += 1
    # (1332 before padnet's 19 calls; 19 numbered before bert's mask indexing, one GatherND of folded positions whose
    # output the exporter named ``val_48``, had its template; 1351 and 20 before the names of nodes a graph pass made,
    # after their overload, were read: GPT-2's ``sym_size_int_18``, t5_noopt's ``scalar_tensor_default``)
    # (1357 before renumber_a and renumber_b: their 18 calls; 1375 and 14 before prims::convert_element_type had its
    # template: two of the zoo's Casts were numbered calls of no template, now ``convert_element_type`` as torch named
    # them)
    assert (same, other, numbered) == (1377, 0, 12)
    renamed = tmp_path / "renamed.onnx"
    onnx.save(renamed_outputs(stripped_model(ZOO / "t5.onnx")), str(renamed))
    calls = [c for c in open_index(renamed).provenance.calls if c.recognised]
    # (but the head: the graph's outputs keep their names, and its logits are ``linear_16``)
    assert [(k, c.name) for k, c in enumerate(calls) if c.name != f"recognised_{k}"] == [(107, "linear_16")]


def test_a_fused_body_carries_the_rules_that_made_it_as_torch_wrote_them(tmp_path: Path) -> None:
    """A call recognised by a fused template (``"form": "fused"``) carries the optimizer's rewrite rules its export's
    node carried (``Template.rules``: the batch norm fused into a Conv, a view of a view), as a call with its metadata
    does, so that its values are not said to be torchlib's. On every dynamo export of the zoo, each such call's rules
    are those torch's metadata wrote on that call: convnet's six batch norms, gpt2's and gpt2_dynamic's fused views
    (two each) and their Conv1Ds' Gemms without the bias of zeros the optimizer removed (eight each)."""
    carried = 0
    for path in zoo_dynamo():
        truth = {tuple(int(p[0]) for p in c.node_paths): c.rule_names for c in open_index(path).provenance.calls
                 if c.scope == MAIN}
        for call in open_index(stripped_file(path, tmp_path)).provenance.calls:
            if call.recognised and call.rule_names:
                assert truth.get(tuple(int(p[0]) for p in call.node_paths)) == call.rule_names, (path.stem, call.name)
                carried += 1
    assert carried == 26


def test_a_constant_named_as_a_number_or_as_a_call_tells_scalar_from_tensor(tmp_path: Path) -> None:
    """Overloads of one op whose bodies are one structure (``Pow(x, c)``: ``pow.Tensor_Scalar``, ``pow.Tensor_Tensor``;
    ``Equal`` then ``Not``: ``ne.Scalar``, ``ne.Tensor``) are told apart by the constant's name (``recognise_narrow``):
    a number torchlib made a tensor of inside the call is ``val_<n>``, a Tensor argument is made outside it (clip's and
    cond's folded ``scalar_tensor_default``). On every dynamo export of the zoo, 40 recognised calls have a sibling
    overload of their op ruled out so, each the target torch's metadata names; no recognised call has its true target
    ruled out by any name."""
    narrowed: dict[str, int] = {}
    for path in zoo_dynamo():
        truth = {tuple(int(p[0]) for p in c.node_paths): c.target for c in open_index(path).provenance.calls
                 if c.scope == MAIN}
        for call in open_index(stripped_file(path, tmp_path)).provenance.calls:
            true = truth.get(tuple(int(p[0]) for p in call.node_paths))
            if not call.recognised or true is None:
                continue
            assert true not in call.ruled_out, (path.stem, call.name)
            if any(op_name(r) == op_name(call.target) for r in call.ruled_out):
                assert call.target == true, (path.stem, call.name)
                narrowed[call.target] = narrowed.get(call.target, 0) + 1
    assert narrowed == {"aten::pow.Tensor_Scalar": 28, "aten::ge.Scalar": 3, "aten::where.ScalarOther": 3,
                        "aten::ne.Scalar": 2, "aten::lt.Scalar": 2, "aten::gt.Scalar": 1, "aten::gt.Tensor": 1}


@pytest.mark.parametrize(("name", "targets"), [
    ("val_100", ["aten::pow.Tensor_Scalar"]),  # as the exporter named it: a number's constant
    ("scalar_tensor_default", ["aten::pow.Tensor_Tensor"]),  # a folded call's output: a Tensor argument
    ("/model/Constant_output_0", ["recognised::pow_Tensor_Scalar_or_pow_Tensor_Tensor"]),  # renamed: says nothing
    ("model.layers.0.norm.exponent", ["recognised::pow_Tensor_Scalar_or_pow_Tensor_Tensor"]),  # a state-dict name
])
def test_the_exponent_of_each_rmsnorm_is_read_by_its_name(tmp_path: Path, name: str, targets: list[str]) -> None:
    """The stripped Llama's five RMSNorm ``Pow`` nodes read one exponent (``val_100``, 2.0): renamed, the same graph's
    calls are what the new name says, or keep both candidates where it says nothing."""
    model = stripped_model(ZOO / "llama_gqa.onnx")
    g = model.graph
    if name != "val_100":
        assert name not in {t.name for t in g.initializer}
        next(t for t in g.initializer if t.name == "val_100").name = name
        for node in g.node:
            node.input[:] = [name if v == "val_100" else v for v in node.input]
    path = tmp_path / "renamed.onnx"
    onnx.save(model, str(path))
    pows = [c for c in open_index(path).provenance.calls if c.recognised and "pow" in c.target]
    assert sorted({c.target for c in pows}) == targets and len(pows) == 5
    assert all(len(c.ruled_out) == (len(c.candidates) == 1) for c in pows)


def test_a_chain_of_lone_calls_named_as_one_body_is_one_call(tmp_path: Path) -> None:
    """``ne.Scalar``'s body, Equal then Not, is also ``eq.Scalar`` then ``bitwise_not``: a chain of lone calls, no
    evidence of one call by its structure (``chain_of_calls``). The value between them tells: named ``val_<n>``, as a
    value inside a body is (``inside_named``), it is one call, the ``ne.Scalar`` torch's metadata names (the stripped
    llama_gqa_noopt's mask); renamed by another tool, it is two, the Equal's overload left open."""
    path = ZOO / "llama_gqa_noopt.onnx"
    truth = [tuple(int(p[0]) for p in c.node_paths) for c in open_index(path).provenance.calls
             if c.scope == MAIN and c.target == "aten::ne.Scalar"]
    assert truth == [(50, 51)]
    calls = {tuple(int(p[0]) for p in c.node_paths): c.target for c in open_index(stripped_file(path, tmp_path))
             .provenance.calls if c.recognised}
    assert calls[(50, 51)] == "aten::ne.Scalar"
    renamed = tmp_path / "renamed.onnx"
    onnx.save(renamed_outputs(stripped_model(path)), str(renamed))
    again = {tuple(int(p[0]) for p in c.node_paths): c.target for c in open_index(renamed).provenance.calls
             if c.recognised and {50, 51} & {int(p[0]) for p in c.node_paths}}
    assert again == {(50,): "recognised::eq_Scalar_or_eq_Tensor", (51,): "aten::bitwise_not"}


@pytest.mark.parametrize(("name", "parameter", "template", "arguments"), [
    ("val_150", False, "aten::mul.Tensor#0", "{other: 0.5}"),  # as the exporter named it: the number 0.5
    ("scalar_tensor_default", False, "aten::mul.Tensor#1", "{}"),  # a folded call's output: a Tensor argument
    ("model.scale", True, "aten::mul.Tensor#1", "{}"),  # a buffer of the model (its graph signature says so)
    ("model.scale", False, "aten::mul.Tensor#0", "{other: 0.5}"),  # a name that says nothing: the number form
])
def test_a_constant_named_as_a_tensor_is_a_tensor_argument(tmp_path: Path, name: str, parameter: bool,
                                                           template: str, arguments: str) -> None:
    """One target, two templates: gpt2's gelu multiplies by 0.5, ``mul.Tensor`` with a number (template #0, the
    number given back as ``other``), which is also ``mul.Tensor`` of two tensors (#1). Held-out Gemma's ``embed_scale``
    buffer and CLIP's folded ``exp`` are such tensors, given back as numbers before their names were read. Renamed,
    the same Mul is what the constant's name says, or what the number form gives where nothing is said."""
    model = stripped_model(ZOO / "gpt2.onnx")
    g = model.graph
    at = [int(c.node_paths[0][0]) for c in open_index(stripped_file(ZOO / "gpt2.onnx", tmp_path)).provenance.calls
          if c.target == "aten::mul.Tensor" and "val_150" in g.node[int(c.node_paths[0][0])].input]
    assert len(at) == 2  # (the other four Muls reading it scale the two attentions: SDPA's, by sqrt of its scale)
    if name != "val_150":
        next(t for t in g.initializer if t.name == "val_150").name = name
        for node in g.node:
            node.input[:] = [name if v == "val_150" else v for v in node.input]
    if parameter:
        g.value_info.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, []))
        g.value_info[-1].metadata_props.add(key="pkg.torch.export.graph_signature.InputSpec.kind", value="BUFFER")
    path = tmp_path / "renamed.onnx"
    onnx.save(model, str(path))
    calls = {int(c.node_paths[0][0]): c for c in open_index(path).provenance.calls if c.recognised}
    for k in at:
        assert calls[k].target == "aten::mul.Tensor" and calls[k].recognised == (template,) and not calls[k].ruled_out
        assert calls[k].fx_text.endswith(f"kwargs = {arguments})")
