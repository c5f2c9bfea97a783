"""Recognised calls: the zoo's dynamo exports with their torch metadata stripped (``scripts/strip_metadata.py``)
are indexed again, and what the body templates recover is compared with the original metadata as truth.

Truth is the exporter's own ``fx_node`` metadata of the unstripped file (torch 2.13 exports, tests/zoo/README.md);
the templates come from one-op exports of each overload (``resources/aten_templates.txt``), not from the zoo.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.core.aten.templates import load_templates
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.fx import parse_fx_node
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise import AMBIGUOUS_NAMESPACE, applies
from inspector.core.model.signature import call_signature
from inspector.core.summary import summary_dict, summary_text
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from measure_recognition import Row, measure_zoo, table, torchscript_share, total
from strip_metadata import strip, zoo_dynamo

from tests.stripping import renamed_outputs, stripped_file

ZOO = ROOT / "tests" / "zoo"
SCHEMA = json.loads((ROOT / "resources" / "summary.schema.json").read_text())


@pytest.fixture(scope="module")
def stripped_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stripped")


def stripped(name: str, folder: Path) -> ModelIndex:
    return open_index(stripped_file(ZOO / f"{name}.onnx", folder))


def stripped_renamed(name: str, folder: Path) -> ModelIndex:
    """The stripped export with its values renamed as another tool might (``renamed_outputs``): what the structure
    alone tells, without the exporter's names (``recognise_names``)."""
    path = folder / f"{name}_renamed.onnx"
    onnx.save(renamed_outputs(onnx.load(str(stripped_file(ZOO / f"{name}.onnx", folder)))), str(path))
    return open_index(path)


@cache
def rows() -> tuple[Row, ...]:
    return tuple(measure_zoo())


def recognised(index: ModelIndex) -> list:
    return [c for c in index.provenance.calls if c.recognised]


def test_strip_removes_the_exporters_metadata_only(stripped_dir: Path) -> None:
    index = stripped("gpt2", stripped_dir)
    keys = {p.key for n in index.proto.graph.node for p in n.metadata_props}
    assert not any(k.startswith("pkg.torch.onnx.") for k in keys) and "namespace" in keys
    assert all(c.recognised for c in index.provenance.calls)  # every call it has now is a recognised one
    assert len(zoo_dynamo()) == 26 and applies(index.proto)


def test_measured_on_the_stripped_zoo() -> None:
    """The issue's measure, printed by ``scripts/measure_recognition.py`` (the note's table)."""
    all_rows = rows()
    print("\n" + table(list(all_rows)))
    t = total(list(all_rows))
    # (237 arguments before whisper's Conv fitted conv1d and convolution alike: its conv1d template had kernel_shape
    # fixed at the generator's 3, which whisper's kernel happened to be; both mask it now, so no argument is given;
    # 231 -> 236 when the schema's list lengths left convnet's MaxPool to max_pool2d alone, ``recognise_lengths``;
    # 238 with gpt2_dynamic's two attention scales, once the catalogue held SDPA's dynamic-shape form; 241 with
    # dwconv; 255 once a dim the exporter left negative was read back as written: 13 more, and dwconv's cat of three)
    # 258 with the slice to a symbolic end's start, dim and step; 735 once a body of several targets is the one its
    # output is named after (``recognise_names``): each such call's arguments come back, 477 more; 882 (834 before)
    # once strings, dtypes and learned tables' keys came back as bare words (a gelu's ``approximate``, a Cast's
    # ``dtype``, a Pad's ``mode``: 48 more, none wrong)
    assert t.multi_predicted > 100 and t.single_truth > 500 and t.args_right >= 882
    # the targets: precision >= 0.99 on every model (met: 259/259, no wrong call), recall >= 0.9 on
    # multi-node bodies (met: 0.970, 259 of 267; 250 before a body of several targets was the one its output is named
    # after: the pair models' 8 attentions and a t5_noopt call; 249 before the slice to a symbolic end had its
    # template; 247 before gpt2_dynamic's two mask indexing calls whose positions a later call reuses; 245 of 265
    # before dwconv's two linear calls; 0.981 counting the ambiguous calls whose candidates hold the truth;
    # 0.922 (238 of 258) before the catalogue held the bodies of dynamic-shape exports, gen_evidence.py's
    # ``--dynamic``, and of ``index.Tensor``, which had no template: 7 more truth calls, 5 of them found).
    # A view's Concat+Reshape where the exporter lowered a list of symbolic sizes is a one-node torchlib body (every
    # view template is one Reshape; the "lone Reshape"), counted with the single-node calls since the measure
    # asks the catalogue what torchlib makes (0.767 when they counted as multi-node). The misses left
    # (`scripts/measure_recognition.py --misses`): SDPA/_scaled_dot_product_flash_attention_for_cpu and arange /
    # arange.start with start 0 share their bodies by construction, so they keep both candidates
    assert all(r.precision >= 0.99 for r in all_rows), [(r.model, r.wrong) for r in all_rows if r.precision < 0.99]
    assert t.precision >= 0.99
    # (0.903 if the fused view's Reshape counted as a lone call's body: SDPA's, BERT's and ViT's bodies, whose Reshapes
    # it fits, were chains of lone calls then, ``chain_of_calls``)
    # (267 before padnet joined the zoo: its ``repeat``, an Expand of ones then a Tile, which was an expand and a tile
    # called alone while the catalogue had no template of repeat, and its four reflect and replicate pads no call; 268
    # before gpt2_dynamic's two ``sym_size.int`` calls had a template, generated with dynamic shapes: both found)
    # (270 before renumber_a and renumber_b joined the zoo: their 8 linear calls, a MatMul and an Add each, all found)
    assert t.multi_truth == 278 and t.recall >= 0.97 and (t.multi_found + t.multi_in_candidates) / t.multi_truth >= 0.98
    # the 6 arguments not as torch bound them: SDPA's scale where the call left it at its default (None), given back
    # as the value torchlib baked for it, 1/sqrt of the query's last dim (the pair models'; no argument came back
    # while their attentions were ambiguous)
    assert t.args_wrong == len(_default_scales(all_rows)) == 6
    # single-node calls whose target is among the candidates: 0.848 before the catalogue had add.Tensor of two
    # tensors (alpha at its default: one Add) and a convolution of any kernel
    # (1028 of 1057 before ``index.Tensor`` had templates: its 3 lone GatherNd calls, reading index positions another
    # call computed, counted as "no template" then; they are single-node calls not found now)
    # (dwconv's 13 one-node calls all found: 0 of its 4 convolutions before the templates masked ``group``)
    # (1046 before the fused view's template: a Reshape without allowzero, the optimizer's view of a view; 1041 of 1073
    # before gpt2_dynamic's lone GatherND calls were found)
    # 0.981 (1056 of 1076; 1050 before a batch norm the optimizer fused into a Conv had its template: convnet's six)
    assert t.coverage >= 0.98
    # of every recognised call, the share that is a truth call (its nodes, its target among the candidates): what the
    # multi-node precision cannot see where a truth body went unfound and its nodes were taken as lone calls. 0.947
    # (1281 of 1353) before SDPA's dynamic-shape form: gpt2_dynamic's attention was 6 lone isnan and matmul calls,
    # and more; the rest are noopt's size computations (convnet's Convs fused with their batch norms were too, before
    # their template)
    # (0.960, 1283 of 1336, before ``index.Tensor``'s templates took transformers' mask indexing whole, where its
    # Transpose, Max, Unsqueeze and Concat nodes were lone calls)
    # 0.993 (1321 of 1330; 0.989 before convnet's batch norms fused into Convs were found, 0.983 before gpt2_dynamic's
    # shared mask positions were)
    assert t.calls_right >= 0.99
    # 0.864 (76 of 88) before its mask indexing reusing another call's positions was found (``recognise_shared``);
    # 0.952 (80 of 84) before the fused view's template took 2 lone Reshapes right, 0.943 while it took the Reshape of
    # a slice whose end is symbolic as a view, before the catalogue held that slice's body (``evidence_cases``' sized)
    assert next(r for r in all_rows if r.model == "gpt2_dynamic").calls_right >= 0.95  # 0.954 (83 of 87)


def _default_scales(rows: list[Row]) -> list[str]:
    """The wrong arguments that are SDPA scales torch left at None, given as 1/sqrt(E) for a head size E of one of that
    model's attentions (the query's last dim, in torch's shapes of the unstripped export)."""
    out = []
    for r in rows:
        model = onnx.load(str(ZOO / f"{r.model}.onnx"), load_external_data=False)
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
        index = open_index(ZOO / f"{r.model}.onnx")
        queries = [parse_fx_node(c.fx_text).args[0] for c in index.provenance.calls
                   if c.target == "aten::scaled_dot_product_attention"]  # (an FX name is its ONNX value's)
        heads = {shapes.get(getattr(q, "name", ""), [0])[-1] for q in queries} - {0}
        for w in r.wrong:
            head, _, value = w.rpartition(": ")
            if head.startswith("aten::scaled_dot_product_attention scale") and value.endswith(" (truth None)") and any(
                    abs(float(value.split()[0]) - e ** -0.5) < 1e-6 for e in heads):
                out.append(f"{r.model}: {w}")
    return out


def test_a_chain_of_lone_calls_is_no_evidence_of_one_call(stripped_dir: Path) -> None:
    """gpt2 writes its tanh gelu by hand: ``mul_1 = mul.Tensor(pow_1, 0.044715)`` then ``add_5 = add.Tensor(view_11,
    mul_1)``, which is also add.Tensor's body with ``alpha`` (a Mul by a scalar, then an Add). The graph cannot tell
    one call from two, so no add.Tensor call takes both nodes: the Mul is a call of its own, mul.Tensor with its
    other read back."""
    index = stripped("gpt2", stripped_dir)
    g = index.proto.graph
    truth = {c.name: c for c in open_index(ZOO / "gpt2.onnx").provenance.calls}
    mul, add = ([int(p[0]) for p in truth[n].node_paths] for n in ("mul_1", "add_5"))
    assert [g.node[i].op_type for i in mul + add] == ["Mul", "Add"]
    by_node = {int(p[0]): c for c in recognised(index) for p in c.node_paths}
    assert by_node[mul[0]] is not by_node.get(add[0])
    got = by_node[mul[0]]
    assert got.target == "aten::mul.Tensor" and [int(p[0]) for p in got.node_paths] == mul
    assert got.fx is not None and got.fx.kwargs == {"other": pytest.approx(0.044715, rel=1e-6)}


def test_a_cast_of_a_float_constant_is_another_call(stripped_dir: Path) -> None:
    """t5_noopt's relative position buckets: ``scalar_tensor_default`` is a Cast of a shared Constant, then
    ``div = div.Tensor(_to_copy_1, scalar_tensor_default)``. torchlib computes only index operands (int64: starts,
    axes, shapes) with Cast/Reshape/Concat before use; a float operand computed by a Cast is another call's, so no
    recognised call takes the Cast with the Div (it was read as one div.Tensor of a constant)."""
    index = stripped("t5_noopt", stripped_dir)
    truth = {c.name: c for c in open_index(ZOO / "t5_noopt.onnx").provenance.calls}
    cast, div = ([int(p[0]) for p in truth[n].node_paths] for n in ("scalar_tensor_default", "div"))
    g = index.proto.graph
    assert [g.node[i].op_type for i in cast + div] == ["Cast", "Div"]
    calls = [{int(p[0]) for p in c.node_paths} for c in recognised(index)]
    assert calls and not any({cast[0], div[0]} <= nodes for nodes in calls)


def test_a_lone_reshape_lists_its_candidates_and_binds_no_schema(stripped_dir: Path) -> None:
    """gpt2's views are lone Reshapes: view and _unsafe_view both lower to one, so where nothing else tells (its values
    renamed by another tool) each is a call of the ambiguous target with both candidates, and no aten signature. As the
    exporter names them, each output names its op (``view_3``: ``recognise_names``), and each is a view with its size
    read back. A Reshape without ``allowzero`` is what the optimizer makes of a view of a view (``"form": "fused"``,
    from an export of one view after another): a view, whose size the optimizer computed, so none is read back;
    torch's truth for every one of gpt2's: ``aten::view``."""
    index = stripped("gpt2", stripped_dir)
    g = index.proto.graph
    reshapes = [c for c in recognised(index) if [g.node[p[0]].op_type for p in c.node_paths] == ["Reshape"]]
    written = [c for c in reshapes if any(a.name == "allowzero" for a in g.node[c.node_paths[0][0]].attribute)]
    assert written and len(reshapes) - len(written) == 2
    truth = {_nodes(c): c.target for c in open_index(ZOO / "gpt2.onnx").provenance.calls}
    for call in written:
        assert call.target == "aten::view" == truth[_nodes(call)] and len(call.recognised) >= 2
        assert call_signature(call).schema is not None and "size=[" in call_signature(call).text
    for call in (c for c in reshapes if c not in written):
        assert call.target == "aten::view" == truth[_nodes(call)] and call.recognised == ("aten::view#1",)
        assert "size=<missing>" in call_signature(call).text
    renamed = stripped_dir / "gpt2_renamed.onnx"
    onnx.save(renamed_outputs(onnx.load(str(stripped_dir / "gpt2.onnx"))), str(renamed))
    again = open_index(renamed)
    g = again.proto.graph
    alike = [c for c in recognised(again) if [g.node[p[0]].op_type for p in c.node_paths] == ["Reshape"]
             and any(a.name == "allowzero" for a in g.node[c.node_paths[0][0]].attribute)]
    assert len(alike) == len(written)
    for call in alike:
        assert call.target.startswith(AMBIGUOUS_NAMESPACE + "::")
        assert {"aten::view", "aten::_unsafe_view"} <= set(call.candidates) and len(call.recognised) >= 2
        assert call_signature(call).schema is None and call.fx is not None and not call.fx.kwargs


def test_recognised_calls_carry_their_template_and_arguments_the_evidence_gives(stripped_dir: Path) -> None:
    """gpt2 multiplies by 0.044715, 0.5 and sqrt(2/pi) in its tanh gelu (torch's truth: mul.Tensor(%pow_1, 0.044715),
    mul.Tensor(%x, 0.5) and mul.Tensor(%x, 0.7978845608028654)); recovered from Mul[1] by the evidence relation
    'scalar'."""
    index = stripped("gpt2", stripped_dir)
    names = {t.name for t in load_templates()}
    muls = [c for c in recognised(index) if c.target == "aten::mul.Tensor"]
    assert muls and all(set(c.recognised) <= names for c in muls)
    others = sorted({c.fx.kwargs.get("other") for c in muls if c.fx is not None} - {None})
    assert others == [pytest.approx(0.044715, rel=1e-6), 0.5, pytest.approx(0.7978846, rel=1e-6)]


def test_depthwise_and_grouped_convolutions_are_recognised(stripped_dir: Path) -> None:
    """dwconv's convolutions of groups 8 (depthwise), 2 (grouped) and 16 (a 1-D depthwise) were no call while every
    convolution template held ``group`` at 1 (the one-op exports varied no ``groups``: MobileNet's and ConvNeXt's
    depthwise convolutions went unrecognised); the generator now varies it with its weight's shape and masks the slot.
    Truth: each conv call of torch's FX graph and the ``groups`` it was given (dwconv.truth.json); a Conv with a bias is
    conv2d's body as much as convolution's, so both stay candidates where nothing else tells (values renamed), and the
    exporter's name of its output does (``conv2d_1``)."""
    truth = json.loads((ZOO / "dwconv.truth.json").read_text())
    want = sorted((f["target"], f["args"]["groups"]) for f in truth["fx_nodes"] if f["target"].startswith("aten::conv"))
    assert [g for _t, g in want] == [16, 1, 2, 8]
    index = stripped("dwconv", stripped_dir)
    g = index.proto.graph
    convs = [c for c in recognised(index) if g.node[int(c.node_paths[0][0])].op_type == "Conv"]
    got = sorted((next(t for t in c.candidates if t != "aten::convolution"),
                  next(a.i for a in g.node[int(c.node_paths[0][0])].attribute if a.name == "group")) for c in convs)
    assert got == want
    assert sorted((c.target, next(a.i for a in g.node[int(c.node_paths[0][0])].attribute if a.name == "group"))
                  for c in convs) == want  # (each output named after its op: ``recognise_names``)
    alike = stripped_renamed("dwconv", stripped_dir)
    convs = [c for c in recognised(alike) if alike.proto.graph.node[int(c.node_paths[0][0])].op_type == "Conv"]
    # (a Conv of constant weights may be a batch norm the optimizer fused into a convolution too, but the weights
    # such a fusion makes are no parameters of the model: these are, as the graph signature's input kind says)
    assert len(convs) == 4 and all(c.candidates[-1] == "aten::convolution" and len(c.candidates) == 2
                                   and c.ruled_out == ("aten::_native_batch_norm_legit_no_training",)
                                   and len(c.node_paths) == 1 for c in convs)


def test_a_cat_of_any_number_of_tensors_is_recognised_with_each_tensor(stripped_dir: Path) -> None:
    """cat's template is a Concat of the two tensors its one-op export passed; dwconv concatenates three. A one-node
    template that reads each tensor of one list parameter once (``list_template``) fits a node of any operand count,
    cited as ``aten::cat#0[3]``, with the tensors bound in order and the dim read back. Truth: torch's FX call
    (dwconv.truth.json)."""
    truth = next(f for f in json.loads((ZOO / "dwconv.truth.json").read_text())["fx_nodes"]
                 if f["target"] == "aten::cat")
    index = stripped("dwconv", stripped_dir)
    call = next(c for c in recognised(index) if c.target == "aten::cat")
    assert call.recognised == ("aten::cat#0[3]",)
    bound = {b.parameter.name: b.value for b in call_signature(call).bound}
    assert [str(t) for t in bound["tensors"]] == ["%" + t["node"] for t in truth["args"]["tensors"]]
    assert bound["dim"] == truth["args"]["dim"] == -1


def test_a_part_an_earlier_call_computed_is_shared_with_the_later_call(stripped_dir: Path) -> None:
    """gpt2_dynamic indexes its mask twice with the same positions: the optimizer computes them once (Max, Shape,
    Expand, Unsqueeze, Concat) for the first ``index.Tensor``, and the second is a lone GatherND reading them. Both
    were missed (the first's body was not closed: its positions are read by the later GatherND, and the later one
    has no one-node template); they are found now, the shared nodes the first call's. Truth: the exporter's metadata
    of the unstripped file, node for node."""
    calls = open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
    truth = sorted(sorted(int(p[0]) for p in c.node_paths) for c in calls if c.target == "aten::index.Tensor")
    index = stripped("gpt2_dynamic", stripped_dir)
    got = sorted(sorted(int(p[0]) for p in c.node_paths) for c in recognised(index) if c.target == "aten::index.Tensor")
    assert sorted(map(len, truth)) == [1, 1, 8, 8] and got == truth
    g = index.proto.graph
    assert all(g.node[nodes[-1]].op_type == "GatherND" for nodes in got)
    # a lone GatherND binds the tensor it reads itself (torch's truth: ``self=%cumsum``); the positions it reuses
    # were computed from ``indices`` by the other call's nodes, so they are shown missing, not guessed
    lone = [call_signature(c).text for c in recognised(index) if c.target == "aten::index.Tensor"
            and len(c.node_paths) == 1]
    assert lone == ["aten::index.Tensor(self=%cumsum, indices=<missing>) -> Tensor"] * 2


def test_a_slice_to_a_symbolic_end_is_recognised_with_its_arguments(stripped_dir: Path) -> None:
    """gpt2_dynamic slices to a length its size arithmetic computed: torchlib reshapes that scalar end before the
    Slice. No one-op export held that body while every end the generator passed was a number; it now passes one as
    a size, symbolic in a dynamic-shape export (``evidence_cases``' ``sized``), and the body's end is named ``end``.
    Truth: the exporter's metadata of the unstripped file, its signature text whole."""
    calls = open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
    truth = {_nodes(c): call_signature(c).text for c in calls
             if c.target == "aten::slice.Tensor" and len(c.node_paths) == 2}
    index = stripped("gpt2_dynamic", stripped_dir)
    got = {_nodes(c): call_signature(c).text for c in recognised(index)
           if c.target == "aten::slice.Tensor" and len(c.node_paths) == 2}
    assert got == truth and len(truth) == 1
    assert next(iter(got.values())) == ("aten::slice.Tensor(self=%cat, dim=-1, start=1, end=%add_473, step=1) "
                                        "-> Tensor(a)")


def test_a_body_node_the_optimizer_folded_from_constants_is_allowed_for(stripped_dir: Path) -> None:
    """gpt2's attention mask is static: the optimizer folded SDPA's ``Where(mask, 0, -inf)`` of the bool mask into
    an initializer the Add reads, so the graph holds the template less that node. Both calls are found with the
    truth's nodes, and their scale (torch's truth: ``scale = 0.25``)."""
    truth = {frozenset(int(p[0]) for p in c.node_paths): c for c in open_index(ZOO / "gpt2.onnx").provenance.calls
             if c.target == "aten::scaled_dot_product_attention"}
    index = stripped("gpt2", stripped_dir)
    got = [c for c in recognised(index) if c.target == "aten::scaled_dot_product_attention"]
    assert {frozenset(int(p[0]) for p in c.node_paths) for c in got} == set(truth) and len(got) == 2
    templates = {t.name: t for t in load_templates()}
    g = index.proto.graph
    for c in got:
        (name,) = c.recognised
        ops = [n.op_type for n in templates[name].nodes]
        assert ops.count("Where") == 2 and [g.node[int(p[0])].op_type for p in c.node_paths].count("Where") == 1
        assert c.fx is not None and c.fx.kwargs == {"scale": 0.25}


@pytest.mark.parametrize("name", ["bert_noopt", "llama_gqa_noopt", "tiny_noopt"])
def test_unoptimised_exports_are_recognised_by_their_own_templates(name: str, stripped_dir: Path) -> None:
    """Exported with ``optimize=False``, SDPA keeps what the optimizer folds: the scale's CastLike and Sqrts (tiny's
    default scale is computed from the query's shape: one Sqrt more), the Shape/Slice/Concat of the key's reshapes
    (and tiny's causal mask: Trilu, Equal, Where); 21 to 33 nodes a call. The catalogue holds that form from one-op
    exports made the same way, so every call is found with the truth's nodes (gen_evidence.py's ``--unoptimised``;
    before, none of these 7 calls was)."""
    truth = {frozenset(int(p[0]) for p in c.node_paths) for c in open_index(ZOO / f"{name}.onnx").provenance.calls
             if c.target == "aten::scaled_dot_product_attention"}
    index = stripped(name, stripped_dir)
    got = [c for c in recognised(index) if c.target == "aten::scaled_dot_product_attention"]
    assert {frozenset(int(p[0]) for p in c.node_paths) for c in got} == truth and len(truth) >= 2
    templates = {t.name: t for t in load_templates()}
    for c in got:
        (template,) = c.recognised
        ops = [n.op_type for n in templates[template].nodes]
        assert ops.count("Sqrt") >= 2 and "CastLike" in ops and len(ops) >= 21


def test_summary_marks_recognised_calls_in_json_and_text(stripped_dir: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    index = stripped("gpt2", stripped_dir)
    data = summary_dict(index)
    jsonschema.validate(data, SCHEMA)
    marked = [a for a in data["aten_targets"] if "recognised" in a]
    assert marked and all(a["recognised"]["calls"] == a["calls"] for a in marked)
    assert "recognised by template" in summary_text(data)
    data = summary_dict(stripped_renamed("gpt2", stripped_dir))  # (no name tells view from _unsafe_view)
    jsonschema.validate(data, SCHEMA)
    ambiguous = [a for a in data["aten_targets"] if a["target"].startswith(AMBIGUOUS_NAMESPACE + "::")]
    assert ambiguous and all(len(a["recognised"]["candidates"]) >= 2 for a in ambiguous)
    assert "ambiguous body, candidates: aten::_unsafe_view, aten::view" in summary_text(data)
    # an export with its metadata: nothing recognised, nothing marked
    plain = summary_dict(open_index(ZOO / "gpt2.onnx"))
    assert not any("recognised" in a for a in plain["aten_targets"])


def test_the_templates_explain_part_of_torchscript_exports_when_asked() -> None:
    """Point 5 of the issue: what share of a TorchScript export's nodes the torchlib templates would explain (its
    symbolic functions lower differently; the convnet's Relu and Identity nodes match, and, with the attributes it
    leaves out at their defaults filled in, its Conv, MaxPool and Gemm nodes too: 16 of 21, 9 before)."""
    shares = {name: (nodes, unique, ambiguous) for name, nodes, unique, ambiguous in torchscript_share()}
    assert set(shares) == {"ts_functions", "ts_plain", "ts_plain_mixer"}
    for nodes, unique, ambiguous in shares.values():
        assert 0 < unique + ambiguous < nodes
    assert shares["ts_plain"][0] == 21 and (shares["ts_plain"][1] + shares["ts_plain"][2]) / 21 >= 0.76


def test_torchscript_exports_are_left_alone() -> None:
    """TorchScript lowers through its own symbolic functions, not torchlib: no call is passed off as recognised."""
    for name in ("ts_plain", "ts_plain_mixer", "ts_functions"):
        index = open_index(ZOO / f"{name}.onnx")
        assert not applies(index.proto) and not recognised(index)


def test_dynamic_shape_exports_are_recognised_by_their_own_templates(stripped_dir: Path) -> None:
    """Exported with dynamic shapes, SDPA reshapes its key with sizes that ``Shape``, ``Slice`` and ``Concat`` compute
    from it (a static export holds two constant shapes, which the optimizer folded); the first layer's call also
    holds the ``Where`` that turns the bool mask into an additive one, which the second reads (a common
    subexpression: its first reader's). The catalogue holds that form from one-op exports made with every input
    dimension dynamic (gen_evidence.py's ``--dynamic``; before, neither call was found: their nodes were taken as
    lone isnan, matmul, add and mul calls). Both are found with the truth's nodes, and their scale (torch's truth:
    ``scale = 0.25``)."""
    truth = {frozenset(int(p[0]) for p in c.node_paths) for c in open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
             if c.target == "aten::scaled_dot_product_attention"}
    index = stripped("gpt2_dynamic", stripped_dir)
    got = [c for c in recognised(index) if c.target == "aten::scaled_dot_product_attention"]
    assert {frozenset(int(p[0]) for p in c.node_paths) for c in got} == truth and {len(n) for n in truth} == {17, 18}
    templates = {t.name: t for t in load_templates()}
    for c in got:
        (template,) = c.recognised
        ops = [n.op_type for n in templates[template].nodes]
        assert ops[:5] == ["Shape", "Slice", "Slice", "Slice", "Concat"] and "Sqrt" not in ops  # (optimised: no Sqrt)
        assert c.fx is not None and c.fx.kwargs == {"scale": 0.25}
    assert not [c for c in recognised(index) if c.target in ("aten::isnan", "aten::matmul")]
    # the call whose nodes are its template's node for node (the first: the second's mask Where is the first's) has
    # its query, key, value and mask bound as the metadata binds them, read where its Mul, Reshape, MatMul and Where
    # read them (not by its first node, a Shape of the key)
    want = next(c for c in open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
                if c.target == "aten::scaled_dot_product_attention" and len(c.node_paths) == 18)
    names = {b.parameter.name: b.value.name for b in call_signature(want).bound
             if b.provided and hasattr(b.value, "name")}
    first = next(c for c in got if len(c.node_paths) == 18)
    bound = {b.parameter.name: b.value.name for b in call_signature(first).bound
             if b.provided and hasattr(b.value, "name")}
    assert set(bound) == {"query", "key", "value", "attn_mask"}
    g = index.proto.graph
    values = {v for n in g.node for v in n.output} | {v.name for v in g.input}
    assert {p: v for p, v in bound.items() if p != "attn_mask"} == {p: names[p] for p in ("query", "key", "value")}
    # the mask's FX value names no ONNX value (the optimized graph has none of that name): nothing to compare with
    assert names["attn_mask"] not in values and bound["attn_mask"] in values
    # the second call's nodes are its template's less the mask's Where (the first call's, shared): its tensors are
    # bound as its match read them (``RecognisedCall.wiring``; before, read again from its nodes in graph order, none
    # was, and its signature showed them missing): query, key and value as the metadata binds them, and the mask the
    # first call's, the one value both read
    want2 = next(c for c in open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
                 if c.target == "aten::scaled_dot_product_attention" and len(c.node_paths) == 17)
    names2 = {b.parameter.name: b.value.name for b in call_signature(want2).bound
              if b.provided and hasattr(b.value, "name")}
    second = next(c for c in got if len(c.node_paths) == 17)
    bound2 = {b.parameter.name: b.value.name for b in call_signature(second).bound
              if b.provided and hasattr(b.value, "name")}
    assert {p: v for p, v in bound2.items() if p != "attn_mask"} == {p: names2[p] for p in ("query", "key", "value")}
    assert bound2["attn_mask"] == bound["attn_mask"]


@pytest.mark.parametrize("name", ["gpt2", "gpt2_dynamic", "llama_gqa", "bert"])
def test_fold_of_a_stripped_export_checks_and_runs_bit_identical(name: str, stripped_dir: Path) -> None:
    """The recognised calls fold (ambiguous ones stay flat, listed as skipped); the fold passes the full checker
    and computes exactly what the export computes in onnxruntime (graph optimisations off)."""
    ort = pytest.importorskip("onnxruntime")
    index = stripped(name, stripped_dir)
    unique = [c for c in recognised(index) if len(c.candidates) == 1]
    model, report = fold_model(index)
    onnx.checker.check_model(model, full_check=True)
    assert len(model.functions) >= len({c.target for c in unique}) > 0
    assert {s for s, _t, _why in report.left_flat} >= {c.name for c in recognised(index) if len(c.candidates) > 1}
    truth = json.loads((ZOO / f"{name}.truth.json").read_text())
    rng = np.random.default_rng(0)
    feeds = {}
    for spec in truth["inputs"]:
        dtype = np.dtype(spec["dtype"])
        feeds[spec["name"]] = (rng.integers(0, spec["high"], size=spec["shape"]).astype(dtype) if spec.get("high")
                               else rng.standard_normal(spec["shape"]).astype(dtype))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL

    def run(m: onnx.ModelProto) -> list[np.ndarray]:
        session = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return list(session.run(None, feeds))

    want, got = run(onnx.load(str(ZOO / f"{name}.onnx"))), run(model)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(w, g)


def test_recognised_calls_are_main_graph_calls_of_bare_nodes(stripped_dir: Path) -> None:
    """Every node belongs to at most one call, and only nodes without fx metadata are recognised."""
    index = stripped("llama_gqa_noopt", stripped_dir)
    seen: set[int] = set()
    for call in recognised(index):
        nodes = [int(p[0]) for p in call.node_paths]
        assert call.scope == MAIN and not seen & set(nodes)
        seen |= set(nodes)
    assert seen and len(seen) <= len(index.proto.graph.node)


def test_recognition_work_grows_linearly_with_the_model(tmp_path: Path) -> None:
    """Matching is linear: indexing a stripped 8x replica of the Llama export (its first decoder layer copied 64
    times instead of 8, ``benchmarks/replicate.py``) costs at most ~8x the Python calls of the 1x one, counted, not
    timed (``tests/test_scaling.py``); and every copy is recognised alike."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from replicate import replicate

    from tests.builders import count_calls

    source = onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False)
    paths = {}
    for copies in (2, 8, 64):
        model = replicate(source, copies)
        strip(model)
        paths[copies] = tmp_path / f"llama_{copies}.onnx"
        onnx.save(model, str(paths[copies]))
    open_index(paths[2])  # warm the catalogues
    found: dict[int, int] = {}

    def index(copies: int) -> None:
        found[copies] = len(recognised(open_index(paths[copies])))

    small, big = count_calls(lambda: index(8)), count_calls(lambda: index(64))
    print(f"\nindexing the stripped replicas: {small:,} calls at 1x, {big:,} at 8x ({big / small:.2f}x)")
    assert big <= 8.5 * small, f"{big:,} calls on 8x the layers, {small:,} on 1x ({big / small:.1f}x)"
    per_layer = (found[64] - found[8]) // 56
    assert per_layer > 0 and found[64] == found[8] + 56 * per_layer


def test_diff_of_stripped_exports_names_the_recognised_argument(stripped_dir: Path, capsys) -> None:
    """pair_eps_a/_b differ only in the eps of their 3 LayerNorms (their truth files): with the metadata stripped,
    the layer_norm calls are recognised, eps is read back through its evidence, and the diff names it."""
    from inspector.cli import main

    truth = json.loads((ZOO / "pair_eps_b.truth.json").read_text())
    assert truth["pair"]["hyperparameter"] == "eps" and truth["fx_target_counts"]["aten::layer_norm"] == 3
    a, b = stripped("pair_eps_a", stripped_dir), stripped("pair_eps_b", stripped_dir)
    norms = [c for c in recognised(a) if c.target == "aten::layer_norm"]
    assert len(norms) == 3 and all(c.fx is not None and c.fx.kwargs.get("eps") == 1e-05 for c in norms)
    main(["diff", str(a.path), str(b.path)])
    out = capsys.readouterr().out
    assert "different: 1 change" in out
    assert "value changed      eps (LayerNormalization.epsilon): 1e-05 -> 1e-06" in out
    assert "at 3 sites" in out


def test_an_attribute_at_its_default_is_the_attribute_left_out(stripped_dir: Path) -> None:
    """llama_gqa's optimised SDPA writes its key's first Reshape without ``allowzero``; the one-op export the template
    comes from writes ``allowzero=0``, the schema's default. Read with the defaults filled in (from onnx's schemas as
    the package ships them), both calls are found with the truth's nodes and their scale (torch's truth:
    ``scale = 0.3535533905932738``); they were missed."""
    truth = {frozenset(int(p[0]) for p in c.node_paths): c for c in open_index(ZOO / "llama_gqa.onnx").provenance.calls
             if c.target == "aten::scaled_dot_product_attention"}
    index = stripped("llama_gqa", stripped_dir)
    g = index.proto.graph
    got = [c for c in recognised(index) if c.target == "aten::scaled_dot_product_attention"]
    assert {frozenset(int(p[0]) for p in c.node_paths) for c in got} == set(truth) and len(got) == 2
    templates = {t.name: t for t in load_templates()}
    for c in got:
        (name,) = c.recognised
        template_reshape = templates[name].nodes[0]
        graph_reshape = g.node[min(int(p[0]) for p in c.node_paths)]
        assert (template_reshape.op_type, graph_reshape.op_type) == ("Reshape", "Reshape")
        assert dict(template_reshape.attributes)["allowzero"].value == 0 and not graph_reshape.attribute
        assert c.fx is not None and c.fx.kwargs == {"scale": pytest.approx(0.3535533905932738, rel=1e-6)}


def test_an_attribute_written_at_its_default_tells_the_function_that_wrote_it(stripped_dir: Path) -> None:
    """t5_noopt's full_like is CastLike, Shape with ``start=0``, Expand: fill.Scalar lowers to the same body but leaves
    ``start`` out. With defaults filled in both fit; the body that writes what the graph writes is kept, so each is
    full_like alone (torch's truth), as it was before defaults were filled in."""
    truth = {frozenset(int(p[0]) for p in c.node_paths) for c in open_index(ZOO / "t5_noopt.onnx").provenance.calls
             if c.target == "aten::full_like"}
    index = stripped("t5_noopt", stripped_dir)
    got = {frozenset(int(p[0]) for p in c.node_paths): c for c in recognised(index)}
    assert len(truth) == 2
    for nodes in truth:
        assert got[nodes].candidates == ("aten::full_like",)
        assert "Shape" in [index.proto.graph.node[i].op_type for i in nodes]


def test_a_cast_to_its_operands_own_type_is_part_of_the_call(stripped_dir: Path) -> None:
    """bert_noopt's ``gather`` is a Cast of its int64 index to int64, then GatherElements: node for node also what
    ``_to_copy`` then ``gather`` lower to, so the body was no evidence of one call. But torch's ``.to`` of a tensor to
    its own dtype returns it, with no call in the FX graph: the value infos say the Cast changes no type, so the two
    nodes are one gather call, with its ``dim`` (torch's truth: ``gather(%expand, 1, %slice_1)``)."""
    truth = [c for c in open_index(ZOO / "bert_noopt.onnx").provenance.calls if c.target == "aten::gather"]
    assert len(truth) == 1
    nodes = {int(p[0]) for p in truth[0].node_paths}
    index = stripped("bert_noopt", stripped_dir)
    g = index.proto.graph
    cast = next(g.node[i] for i in nodes if g.node[i].op_type == "Cast")
    info = {v.name: v.type.tensor_type.elem_type for v in g.value_info}
    assert info[cast.input[0]] == onnx.TensorProto.INT64 == cast.attribute[0].i
    got = [c for c in recognised(index) if {int(p[0]) for p in c.node_paths} & nodes]
    assert len(got) == 1 and {int(p[0]) for p in got[0].node_paths} == nodes
    assert got[0].candidates == ("aten::gather",) and got[0].fx is not None and got[0].fx.kwargs == {"dim": 1}


def test_a_size_computed_once_for_several_views_belongs_to_its_first_reader(stripped_dir: Path) -> None:
    """gpt2_dynamic computes the size of a layer's views from symbolic sizes (a Concat of Shape slices and constants)
    and the exporter reuses one Concat for the views that share a size: torch's truth puts it in the first view's
    call, the others are a lone Reshape. Each view of a computed size is found with the truth's nodes, a body view and
    _unsafe_view share (one torchlib function), the view its output is named after."""
    truth = {frozenset(int(p[0]) for p in c.node_paths) for c in open_index(ZOO / "gpt2_dynamic.onnx").provenance.calls
             if c.target == "aten::view"}
    index = stripped("gpt2_dynamic", stripped_dir)
    g = index.proto.graph
    reads = Counter(v for n in g.node for v in n.input)
    concats = {n.output[0] for n in g.node if n.op_type == "Concat"}  # (sizes computed at run time)
    shared = [nodes for nodes in truth if any(g.node[i].op_type == "Concat" for i in nodes)
              and reads[next(g.node[i].output[0] for i in nodes if g.node[i].op_type == "Concat")] > 1]
    assert len(shared) >= 2 and len(truth) >= 7
    computed = [nodes for nodes in truth if any(
        g.node[i].op_type == "Reshape" and reads[g.node[i].input[1]] and g.node[i].input[1] in concats for i in nodes)]
    assert len(computed) >= 5
    got = {frozenset(int(p[0]) for p in c.node_paths): c for c in recognised(index)}
    for nodes in computed:  # (a body of both, the one its output names: ``recognise_names``)
        assert nodes in got and got[nodes].target == "aten::view" and len(got[nodes].recognised) >= 2


def test_a_scale_given_back_is_the_one_the_attention_computes_with() -> None:
    """SDPA's scale is read back from the literal its evidence names (the two Muls by sqrt(scale)); a call that passes
    no scale gets 1/sqrt(E) baked in, which the graph cannot tell from the same value passed. Against torch's truth on
    the stripped zoo: every scale given back is the one the call passed (bert, gpt2, gpt2_dynamic, vit, llama_gqa pass
    theirs, equal to 1/sqrt(E)) or, where it passed none, the 1/sqrt(E) of its query's last dim E, in torch's shapes
    (the pair models' six, found since their outputs' names told SDPA from the flash attention that lowers alike;
    tiny_noopt's computes its scale at run time: none is read back)."""
    given, unpassed, default = 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in zoo_dynamo():
            truth_index = open_index(path)
            truth = {frozenset(int(p[0]) for p in c.node_paths): c for c in truth_index.provenance.calls
                     if c.target == "aten::scaled_dot_product_attention"}
            if not truth:
                continue
            model = onnx.load(str(path), load_external_data=False)
            shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
            strip(model)
            onnx.save(model, str(Path(tmp) / path.name))
            index = open_index(Path(tmp) / path.name)
            found = {frozenset(int(p[0]) for p in c.node_paths): c for c in recognised(index)}
            for nodes, call in truth.items():
                passed = {b.parameter.name: b.value for b in call_signature(call).bound if b.provided}.get("scale")
                got = found.get(nodes)
                kwargs = got.fx.kwargs if got is not None and got.fx is not None else {}
                if passed is None:
                    unpassed += 1
                    if "scale" in kwargs:
                        query = parse_fx_node(call.fx_text).args[0]  # (an FX name is its ONNX value's)
                        assert kwargs["scale"] == pytest.approx(shapes[query.name][-1] ** -0.5, rel=1e-6)
                        default += 1
                elif "scale" in kwargs:
                    given += 1
                    assert kwargs["scale"] == pytest.approx(passed, rel=1e-6), (path.stem, kwargs, passed)
    print(f"\nscales given back {given}, calls that passed none {unpassed}, given as 1/sqrt(E) {default}")
    # (10 and 0 before the names told SDPA apart; 8 before gpt2_dynamic's two calls were recognised)
    assert (given, unpassed, default) == (12, 9, 6)


def test_no_lone_node_is_given_another_aten_target_than_the_metadatas(stripped_dir: Path) -> None:
    """A one-node call recognised with one candidate names the aten target the exporter's metadata names (a Conv with
    a bias was convolution's alone while the catalogue had conv2d only without one: mixer's patch embedding). The
    truth's non-aten targets are left out: a size added by ``operator.add`` is an Add, a ``prims`` cast a Cast."""
    wrong = []
    for path in zoo_dynamo():
        truth = {_nodes(c): c.target for c in open_index(path).provenance.calls if c.scope == MAIN}
        index = stripped(path.stem, stripped_dir)
        for c in recognised(index):
            want = truth.get(_nodes(c))
            if len(c.node_paths) == 1 and len(c.candidates) == 1 and want is not None and want.startswith("aten::") \
                    and c.candidates[0] != want:
                wrong.append((path.stem, c.name, c.candidates[0], want))
    assert wrong == []


def _nodes(call) -> frozenset[int]:
    return frozenset(int(p[0]) for p in call.node_paths if len(p) == 1)


def test_a_list_length_the_schema_fixes_narrows_the_candidates(stripped_dir: Path) -> None:
    """conv1d/conv2d/conv3d and max_pool1d/2d/3d lower to bodies of one node alike, and their one-op exports mask
    the lists; their schemas fix the lists' lengths (``stride: SymInt[2]``), ``convolution``'s does not
    (``SymInt[]``). So a Conv's candidates are the overload of its rank, as the metadata names it, and convolution
    (where no name tells; its output's name says which, ``recognise_names``); and convnet's 2-D MaxPool is max_pool2d
    alone, with the arguments the metadata's call has."""
    for name, rank in (("whisper", 1), ("mixer", 2)):
        index = stripped(name, stripped_dir)
        g = index.proto.graph
        truth = {tuple(c.node_paths): c.target for c in open_index(ZOO / f"{name}.onnx").provenance.calls}
        convs = [c for c in recognised(index) if [g.node[int(p[0])].op_type for p in c.node_paths] == ["Conv"]]
        assert convs and {truth[tuple(c.node_paths)] for c in convs} == {f"aten::conv{rank}d"}
        assert all(c.candidates == (f"aten::conv{rank}d",) for c in convs)  # (named ``conv1d_2``)
        alike = stripped_renamed(name, stripped_dir)
        g = alike.proto.graph
        convs = [c for c in recognised(alike) if [g.node[int(p[0])].op_type for p in c.node_paths] == ["Conv"]]
        # (a fused batch norm's body too, but its weights are made by the fusion: these are the model's parameters)
        assert convs and all(c.candidates == (f"aten::conv{rank}d", "aten::convolution")
                             and c.ruled_out == ("aten::_native_batch_norm_legit_no_training",) for c in convs)
    index = stripped("convnet", stripped_dir)
    pool = next(c for c in open_index(ZOO / "convnet.onnx").provenance.calls if c.target == "aten::max_pool2d")
    got = next(c for c in recognised(index) if c.node_paths == pool.node_paths)
    assert got.candidates == ("aten::max_pool2d",) and got.fx is not None and pool.fx is not None
    assert (got.fx.kwargs["kernel_size"], got.fx.kwargs["stride"]) == tuple(pool.fx.args[1:3]) == ([2, 2], [2, 2])


def test_an_ambiguous_call_shows_each_candidates_schema_and_binds_none(stripped_dir: Path) -> None:
    """A body several overloads share binds no schema (that would be a guess); its signature names each candidate's
    schema, one a line, as the schema catalogue (generated from torch) writes it: what tells them apart is in view.
    convnet's Convs, renamed as another tool might: a conv2d's body, a convolution's, and a batch norm's that the
    optimizer fused into a convolution (``"form": "fused"``). As the exporter names them (``getitem_3``: the batch
    norm's first result), each is the batch norm, as torch's metadata says."""
    index = stripped_renamed("convnet", stripped_dir)
    conv = next(c for c in recognised(index) if c.candidates == (
        "aten::_native_batch_norm_legit_no_training", "aten::conv2d", "aten::convolution"))
    sig = call_signature(conv)
    assert sig.schema is None and not sig.bound and sig.problem is not None
    head, *lines = sig.problem.splitlines()
    assert head.startswith("a body 3 overloads share") and len(lines) == 3
    assert lines[0].startswith("aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight")
    assert lines[1].startswith("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1]")
    assert lines[2].startswith("aten::convolution(") and "bool transposed" in lines[2]
    text = summary_text(summary_dict(index))  # (the summary names the candidates as before)
    assert "candidates: aten::_native_batch_norm_legit_no_training, aten::conv2d, aten::convolution" in text
    truth = {_nodes(c): c.target for c in open_index(ZOO / "convnet.onnx").provenance.calls}
    named = [c for c in recognised(stripped("convnet", stripped_dir)) if "aten::conv2d" in c.ruled_out]
    assert len(named) == 6 and all(c.target == truth[_nodes(c)] == "aten::_native_batch_norm_legit_no_training"
                                   and c.ruled_out == ("aten::conv2d", "aten::convolution") for c in named)



@pytest.mark.parametrize("name", ["gpt2_dynamic", "llama_gqa_noopt"])
def test_a_cast_torch_made_as_a_prims_op_has_it_among_its_candidates(name: str, stripped_dir: Path) -> None:
    """A model's FX graph holds ``prims::convert_element_type`` (torch's truth files; in these two exports its Cast
    is left in the graph, elsewhere the optimizer folds it), which torchlib lowers to one Cast, as ``aten::_to_copy``'s.
    Without its template (the generator ran aten overloads only) such a Cast without metadata was ``aten::_to_copy``
    alone, a wrong guess; the generator now runs the prims ops the zoo's exports call, and the Cast lists both."""
    truth = json.loads((ZOO / f"{name}.truth.json").read_text())
    prims = {f["name"] for f in truth["fx_nodes"] if f["target"] == "prims::convert_element_type"}
    by_nodes = {_nodes(c): c for c in recognised(stripped(name, stripped_dir))}
    casts = [c for c in open_index(ZOO / f"{name}.onnx").provenance.calls if c.name in prims]
    assert casts  # (the call is in the graph: the test is not vacuous)
    for call in casts:
        found = by_nodes[_nodes(call)]
        assert {"prims::convert_element_type", "aten::_to_copy"} <= set(found.candidates), found.target
