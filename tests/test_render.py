"""Scenes (collapsed modules, aten calls, function calls), dot layouts, the layout cache and SVG export."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.values import type_text
from inspector.render import layout as layout_module
from inspector.render.layout import (
    DotRunner,
    LaidNode,
    Layout,
    LayoutCache,
    layout_scene,
    node_size,
    to_svg,
)
from inspector.render.scene import Scene, SceneEdge, SceneNode, build_scene
from tests.conftest import FIXTURES, ROOT, SAMPLE
from tests.test_layering import BLOCK_QT

ALL_MODELS = sorted([*FIXTURES.glob("*.onnx"), *FIXTURES.glob("*.onnxtxt"), SAMPLE])


def _ids(scene: Scene) -> list[str]:
    return [n.id for n in scene.nodes]


def _check_consistent(scene: Scene) -> None:
    ids = _ids(scene)
    assert len(ids) == len(set(ids)), "scene node ids must be unique"
    known = set(ids)
    pairs = [(e.source, e.target) for e in scene.edges]
    assert len(pairs) == len(set(pairs)), "edges between one pair of boxes are merged"
    for e in scene.edges:
        assert e.source in known and e.target in known
        assert e.source != e.target


@pytest.fixture(scope="module")
def block():
    return open_index(FIXTURES / "dynamo_block.onnx")


# --------------------------------------------------------------------------------------------
# scenes
# --------------------------------------------------------------------------------------------


def test_main_scene_of_a_flat_export_is_collapsed_to_top_level_modules(block):
    scene = build_scene(block, MAIN)
    _check_consistent(scene)
    assert _ids(scene) == ["in:x", "mod:layers.0", "mod:layers.1", "out:add_3"]
    layer0 = scene.node("mod:layers.0")
    assert (layer0.kind, layer0.label, layer0.ref, layer0.expandable) == ("module", "layers.0", "layers.0", True)
    assert "TransformerLayer" in layer0.detail
    assert f"{block.provenance.module_root.children['layers.0'].total_nodes()} nodes" in layer0.detail
    assert scene.node("in:x").kind == "input" and scene.node("out:add_3").kind == "output"
    edges = {(e.source, e.target): e for e in scene.edges}
    assert set(edges) == {("in:x", "mod:layers.0"), ("mod:layers.0", "mod:layers.1"), ("mod:layers.1", "out:add_3")}
    assert edges[("in:x", "mod:layers.0")].label == "FLOAT[1,8,16]"
    assert not scene.truncated and scene.hidden_nodes == 0


def test_expanding_a_module_shows_its_submodules_and_own_calls(block):
    scene = build_scene(block, MAIN, frozenset({"mod:layers.0"}))
    _check_consistent(scene)
    ids = _ids(scene)
    assert "mod:layers.0" not in ids
    for sub in ("ln1", "attn", "ln2", "mlp"):
        assert f"mod:layers.0.{sub}" in ids
    assert "mod:layers.1" in ids  # the sibling stays collapsed
    own_calls = [n for n in scene.nodes if n.kind == "aten_call"]
    assert {n.label for n in own_calls} == {"aten::add.Tensor"}  # the residual adds of layers.0
    assert all(n.expandable and n.ref in block.provenance.calls for n in own_calls)
    # the residual connection: the graph input feeds both the first submodule and the first add
    sources = {e.target for e in scene.edges if e.source == "in:x"}
    assert sources == {"mod:layers.0.ln1", own_calls[0].id}
    # nested expansion reaches the attention's projections and its aten calls
    deeper = build_scene(block, MAIN, frozenset({"mod:layers.0", "mod:layers.0.attn"}))
    _check_consistent(deeper)
    labels = {n.label for n in deeper.nodes if n.kind == "aten_call"}
    assert {"aten::transpose.int", "aten::view", "aten::scaled_dot_product_attention"} <= labels
    # expanding a module inside a collapsed one changes nothing
    assert _ids(build_scene(block, MAIN, frozenset({"mod:layers.0.attn"}))) == _ids(build_scene(block, MAIN))


def test_expanding_an_aten_call_shows_its_onnx_nodes_and_baked_constants(block):
    sdpa = next(c for c in block.provenance.calls
                if c.target == "aten::scaled_dot_product_attention" and c.module_path == "layers.0.attn")
    call_id = f"call:{sdpa.name}"
    opened = frozenset({"mod:layers.0", "mod:layers.0.attn"})
    collapsed = build_scene(block, MAIN, opened)
    assert collapsed.node(call_id).kind == "aten_call"
    assert collapsed.node(call_id).detail == f"{sdpa.name} ({len(sdpa.node_paths)} nodes)"
    scene = build_scene(block, MAIN, opened | {call_id})
    _check_consistent(scene)
    assert call_id not in _ids(scene)
    ops = [n for n in scene.nodes if n.kind == "op"]
    assert sorted(n.ref for n in ops) == sorted(sdpa.node_paths)
    graph = block.proto.graph
    for n in ops:
        node = graph.node[n.ref[0]]
        assert (n.id, n.label, n.detail) == (f"n:{n.ref[0]}", node.op_type, node.name)
    constants = [n for n in scene.nodes if n.kind == "constant"]
    assert constants, "the SDPA scale and reshape shapes are small initializers"
    op_ids = {n.id for n in ops}
    for c in constants:
        assert " = " in c.detail  # type and values
        assert {e.target for e in scene.edges if e.source == c.id} <= op_ids
        assert any(e.source == c.id for e in scene.edges)
    # the three transposed heads flow into the expanded nodes
    into_ops = {e.source for e in scene.edges if e.target in op_ids and e.source not in op_ids}
    assert sum(s.startswith("call:transpose") for s in into_ops) == 3


def test_aten_call_scope_shows_the_call_with_its_boundary(block):
    sdpa = next(c for c in block.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    scene = build_scene(block, sdpa)
    _check_consistent(scene)
    assert sdpa.target in scene.title
    kinds = [n.kind for n in scene.nodes]
    assert kinds.count("op") == len(sdpa.node_paths)
    inputs = {n.label for n in scene.nodes if n.kind == "input"}
    assert inputs == {"transpose", "transpose_1", "transpose_2"}
    assert [n.label for n in scene.nodes if n.kind == "output"] == [sdpa.name]
    assert kinds.count("constant") >= 2
    assert all(e.label for e in scene.edges)  # value_info gives every tensor a type


def test_function_scope_shows_the_body():
    index = open_index(FIXTURES / "overloads.onnx")
    scene = build_scene(index, FunctionKey("local", "tr", "perm_0213"))
    _check_consistent(scene)
    assert scene.title == "local.tr:perm_0213"
    assert [(n.id, n.kind, n.label) for n in scene.nodes] == [
        ("in:x", "input", "x"), ("n:0", "op", "Transpose"), ("out:y", "output", "y")]
    assert [(e.source, e.target, e.value) for e in scene.edges] == [("in:x", "n:0", "x"), ("n:0", "out:y", "y")]
    scale = build_scene(index, FunctionKey("local", "scale", "hd8"))
    assert [n.label for n in scale.nodes if n.kind == "op"] == ["Constant", "Mul"]
    assert ("n:0", "n:1") in {(e.source, e.target) for e in scale.edges}
    main = build_scene(index, MAIN)
    calls = [n for n in main.nodes if n.kind == "function_call"]
    assert len(calls) == 12 and all(n.expandable for n in calls)
    assert calls[0].ref == (FunctionKey("local", "tr", "perm_0213"), (0,))
    assert calls[0].label == "local.tr:perm_0213"
    with pytest.raises(KeyError):
        build_scene(index, FunctionKey("local", "tr", "nope"))
    with pytest.raises(TypeError):
        build_scene(index, "main")


def test_nested_calls_main_scene_has_function_call_boxes_and_no_subgraph_nodes():
    index = open_index(FIXTURES / "nested_calls.onnx")
    scene = build_scene(index, MAIN)
    _check_consistent(scene)
    boxes = [n for n in scene.nodes if n.kind in ("op", "function_call")]
    assert [(n.id, n.kind, n.label) for n in boxes] == [
        ("n:0", "op", "If"), ("n:1", "op", "Loop"), ("n:2", "function_call", "local.wrapper"), ("n:3", "op", "Add")]
    assert scene.node("n:2").ref == (FunctionKey("local", "wrapper"), (2,))
    edges = {(e.source, e.target) for e in scene.edges}
    # values the If's branches capture from the main graph connect to the If box
    assert {("in:X", "n:0"), ("in:cond2", "n:0"), ("n:0", "n:1"), ("n:1", "n:2"), ("n:2", "n:3"),
            ("n:3", "out:Z")} <= edges
    body = build_scene(index, FunctionKey("local", "wrapper"))
    assert [n.kind for n in body.nodes if n.id.startswith("n:")] == ["function_call", "function_call"]


def test_a_node_of_no_call_is_an_op_node_in_the_module_of_its_neighbours():
    """The Split the optimizer made of the attention's three Slices carries no metadata at all. It was drawn at the
    graph's top, between the ln_1 and attn boxes, with its outputs going back into attn; it is drawn in attn, where
    what it reads (c_attn's output) and what reads it (three views) are, and counted there."""
    index = open_index(FIXTURES / "dynamo_rewritten.onnx")
    top = build_scene(index, MAIN)
    _check_consistent(top)
    assert [n.kind for n in top.nodes].count("op") == 0
    opened = build_scene(index, MAIN, frozenset({"mod:attn"}))
    _check_consistent(opened)
    split = [n for n in opened.nodes if n.kind == "op"]
    assert [(n.id, n.label) for n in split] == [("n:3", "Split")]
    assert sorted((e.source, e.target) for e in opened.edges if "n:3" in (e.source, e.target)) == [
        ("mod:attn.c_attn", "n:3"), ("n:3", "call:view"), ("n:3", "call:view_1"), ("n:3", "call:view_2")]
    attn = index.provenance.module_root.children["attn"]
    own = sum(len(index.provenance.calls[k].node_paths) for k in attn.calls)
    assert attn.bare == [3] and attn.node_count == own + 1


def test_parallel_values_between_two_boxes_merge_into_one_edge():
    scene = build_scene(open_index(FIXTURES / "dynamo_block_noopt.onnx"), MAIN)
    _check_consistent(scene)
    between = [e for e in scene.edges if (e.source, e.target) == ("mod:layers.0", "mod:layers.1")]
    assert len(between) == 1 and between[0].label == f"{between[0].value} (+2)"  # three values, one edge


def test_max_nodes_truncates_in_graph_order(block):
    full = build_scene(block, MAIN, frozenset({"mod:layers.0", "mod:layers.0.attn"}))
    cut = build_scene(block, MAIN, frozenset({"mod:layers.0", "mod:layers.0.attn"}), max_nodes=5)
    _check_consistent(cut)
    assert len(cut.nodes) == 5 and cut.truncated
    assert cut.hidden_nodes == len(full.nodes) - 5
    assert _ids(cut) == _ids(full)[:5]
    assert not build_scene(block, MAIN, max_nodes=4).truncated
    small = build_scene(block, MAIN, max_nodes=3)
    assert (len(small.nodes), small.truncated, small.hidden_nodes) == (3, True, 1)
    plain = build_scene(open_index(FIXTURES / "overloads.onnx"), MAIN, max_nodes=2)
    assert len(plain.nodes) == 2 and plain.hidden_nodes == 17


def test_every_fixture_gives_consistent_scenes_in_every_scope():
    for path in ALL_MODELS:
        index = open_index(path)
        scopes: list[object] = [MAIN, *index.functions.functions, *index.provenance.calls[:5]]
        for scope in scopes:
            scene = build_scene(index, scope)
            _check_consistent(scene)
            everything = frozenset(n.id for n in scene.nodes if n.expandable)
            for _ in range(6):  # open every box, level by level
                scene = build_scene(index, scope, everything)
                _check_consistent(scene)
                everything |= {n.id for n in scene.nodes if n.expandable}
            if scope == MAIN and index.provenance.calls:
                assert not [n for n in scene.nodes if n.kind in ("module", "aten_call")]


def test_generated_flat_export_scene_is_bounded_and_fast(tmp_path: Path):
    spec = importlib.util.spec_from_file_location("gen_large", ROOT / "benchmarks" / "gen_large.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.generate(tmp_path / "big.onnx", 6000)
    index = open_index(tmp_path / "big.onnx")
    index.provenance.module_root  # noqa: B018 - built once per index, as the GUI's module tree does
    start = time.perf_counter()
    scene = build_scene(index, MAIN, max_nodes=50)
    elapsed = time.perf_counter() - start
    _check_consistent(scene)
    assert scene.truncated and len(scene.nodes) == 50
    assert [n.kind for n in scene.nodes[1:]] == ["module"] * 49
    assert len(scene.edges) == 49  # a chain of layers
    assert elapsed < 1.0
    full = build_scene(index, MAIN, max_nodes=10_000)
    layers = [n for n in full.nodes if n.kind == "module"]
    assert sum(int(n.detail.split(", ")[1].split()[0]) for n in layers) == len(index.proto.graph.node)


def test_type_text():
    import onnx

    vi = onnx.helper.make_tensor_value_info("v", onnx.TensorProto.FLOAT, [1, "batch", None])
    assert type_text(vi.type) == "FLOAT[1,batch,?]"
    seq = onnx.helper.make_tensor_sequence_value_info("s", onnx.TensorProto.INT64, [2])
    assert type_text(seq.type) == "seq(INT64[2])"
    assert type_text(onnx.TypeProto()) == ""


# --------------------------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------------------------


def _near_box(point: tuple[float, float], box: LaidNode, slack: float = 4.0) -> bool:
    x, y = point
    return (abs(x - box.x) <= box.width / 2 + slack) and (abs(y - box.y) <= box.height / 2 + slack)


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_layout_gives_finite_positions_and_edges_that_touch_their_nodes(block, rankdir):
    opened = frozenset({"mod:layers.0", "mod:layers.0.attn", "call:scaled_dot_product_attention"})
    scene = build_scene(block, MAIN, opened)
    laid = layout_scene(scene, rankdir)
    assert set(laid.nodes) == set(_ids(scene))
    assert laid.width > 0 and laid.height > 0
    for node in scene.nodes:
        box = laid.nodes[node.id]
        assert all(math.isfinite(v) for v in (box.x, box.y, box.width, box.height))
        assert (box.width, box.height) == node_size(node)
        assert box.x - box.width / 2 >= -1 and box.x + box.width / 2 <= laid.width + 1
        assert box.y - box.height / 2 >= -1 and box.y + box.height / 2 <= laid.height + 1
    assert len(laid.edges) == len(scene.edges)
    for edge in laid.edges:
        pts = edge.points
        assert len(pts) >= 4 and (len(pts) - 1) % 3 == 0
        assert all(math.isfinite(c) for p in pts for c in p)
        assert _near_box(pts[0], laid.nodes[edge.source])
        assert _near_box(pts[-1], laid.nodes[edge.target])
    first = laid.nodes["in:x"]
    later = laid.nodes["out:add_3"]
    if rankdir == "TB":
        assert first.y < later.y  # y grows down: inputs on top
    else:
        assert first.x < later.x


def test_layout_of_hostile_names_and_empty_scenes():
    index = open_index(FIXTURES / "hostile.onnx")
    for scope in (MAIN, *index.functions.functions):
        scene = build_scene(index, scope)
        laid = layout_scene(scene)
        assert set(laid.nodes) == set(_ids(scene)) and len(laid.edges) == len(scene.edges)
    empty = layout_scene(Scene("empty", [], []))
    assert (empty.nodes, empty.edges, empty.width, empty.height) == ({}, [], 0.0, 0.0)
    with pytest.raises(ValueError):
        layout_scene(Scene("x", [], []), rankdir="TB; evil")


def test_layout_cache_is_an_lru_and_computes_a_key_once(block, monkeypatch):
    scene = build_scene(block, MAIN)
    calls: list[str] = []
    real = layout_module.layout_scene

    def counting(s: Scene, rankdir: str = "TB", dot: DotRunner | None = None) -> Layout:
        calls.append(s.title)
        time.sleep(0.05)
        return real(s, rankdir, dot)

    monkeypatch.setattr(layout_module, "layout_scene", counting)
    cache = LayoutCache(maxsize=2)
    results: list[Layout] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute("a", scene))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 4 and all(r is results[0] for r in results)
    cache.get_or_compute("b", scene)
    assert cache.get_or_compute("a", scene) is results[0]  # "a" is now the most recent
    cache.get_or_compute("c", scene)  # evicts "b"
    assert len(cache) == 2 and cache.get("b") is None and cache.get("a") is results[0]
    assert len(calls) == 3


# --------------------------------------------------------------------------------------------
# SVG
# --------------------------------------------------------------------------------------------


def test_svg_of_hostile_model_is_escaped_and_well_formed():
    index = open_index(FIXTURES / "hostile.onnx")
    scopes: list[object] = [MAIN, *index.functions.functions]
    for scope in scopes:
        scene = build_scene(index, scope)
        svg = to_svg(scene, layout_scene(scene))
        assert "<script" not in svg and "<img" not in svg
        root = ET.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        texts = "".join(root.itertext())
        # escaping round-trips: the parsed text is the model's own text
        assert "x<script>alert(1)</script>" in texts or "in\"quoted\" & 'apos'" in texts
        assert "href" not in svg and "http" not in svg.replace("http://www.w3.org/2000/svg", "")


def test_svg_survives_characters_xml_cannot_carry_and_marks_truncation():
    nodes = [SceneNode("a", "bad\x00\x01label\x1b", "op", (0,), "det<ail>\x0c", False),
             SceneNode("b", "</text><script>x</script>", "module", "m", "", True)]
    scene = Scene("t\x02itle & <b>", nodes, [SceneEdge("a", "b", "v", "lab\"el\x03")], True, 7)
    laid = layout_scene(scene)
    svg = to_svg(scene, laid)
    root = ET.fromstring(svg)
    assert "<script" not in svg
    texts = "".join(root.itertext())
    assert "7 more nodes not shown" in texts and "</text><script>x</script>" in texts
    fake = Layout({"a": LaidNode("a", 50, 20, 80, 30)}, [], 100, 40)  # to_svg needs no Graphviz
    ET.fromstring(to_svg(Scene("only a", nodes[:1], []), fake))


# --------------------------------------------------------------------------------------------
# layering
# --------------------------------------------------------------------------------------------


def test_render_imports_and_builds_scenes_without_qt_or_pygraphviz():
    code = BLOCK_QT + (
        "import inspector.render, inspector.render.scene, inspector.render.layout\n"
        "from inspector.core.model.index import open_index\n"
        "from inspector.core.model.keys import MAIN\n"
        "from inspector.render.scene import build_scene\n"
        "from inspector.render.layout import Layout, LaidNode, layout_scene, to_svg\n"
        f"scene = build_scene(open_index({str(FIXTURES / 'dynamo_block.onnx')!r}), MAIN)\n"
        "assert len(scene.nodes) == 4\n"
        "fake = Layout({n.id: LaidNode(n.id, 50, 30 + 60 * k, 80, 30) for k, n in enumerate(scene.nodes)}, [],"
        " 100, 260)\n"
        "assert to_svg(scene, fake).startswith('<?xml')\n"
        "try:\n"
        "    layout_scene(scene)\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('pygraphviz should be blocked')\n"
        "bad = [m for m in sys.modules if m.startswith(('PySide6', 'shiboken6', 'pygraphviz'))]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def _label_boxes(scene: Scene, laid: Layout) -> list[tuple[float, float, float, float]]:
    from inspector.render.layout import CHAR_WIDTH, EDGE_FONT_SIZE, edge_label_text

    labels = {(e.source, e.target): e.label for e in scene.edges}
    boxes = []
    for edge in laid.edges:
        text = edge_label_text(labels[(edge.source, edge.target)])
        if text:
            assert edge.label_at is not None
            x, y = edge.label_at
            w, h = len(text) * EDGE_FONT_SIZE * CHAR_WIDTH, EDGE_FONT_SIZE
            boxes.append((x - w / 2, y - h / 2, x + w / 2, y + h / 2))
    return boxes


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float], slack: float = 1.0) -> bool:
    return a[0] + slack < b[2] and b[0] + slack < a[2] and a[1] + slack < b[3] and b[1] + slack < a[3]


@pytest.mark.parametrize("model", ["dynamo_block.onnx", "overloads.onnx"])
def test_edge_labels_are_placed_by_dot_and_overlap_no_label_and_no_box(block, model):
    """Multi-input nodes (SDPA's Mul and MatMul) used to pile their input labels on each other."""
    index = block if model == "dynamo_block.onnx" else open_index(FIXTURES / model)
    scopes = [MAIN, *index.provenance.calls[:12], *index.functions.functions]
    checked = 0
    for scope in scopes:
        scene = build_scene(index, scope)
        laid = layout_scene(scene)
        labels = _label_boxes(scene, laid)
        boxes = [(n.x - n.width / 2, n.y - n.height / 2, n.x + n.width / 2, n.y + n.height / 2)
                 for n in laid.nodes.values()]
        for i, a in enumerate(labels):
            assert not any(_overlap(a, b) for b in labels[i + 1:]), scope
            assert not any(_overlap(a, b) for b in boxes), scope
        checked += len(labels)
    assert checked >= 10


def test_op_boxes_show_their_attribute_values_in_the_app_and_the_svg():
    index = open_index(FIXTURES / "overloads.onnx")
    scene = build_scene(index, FunctionKey("local", "tr", "perm_0231"))
    (op,) = [n for n in scene.nodes if n.kind == "op"]
    assert (op.label, op.attrs) == ("Transpose", "perm=[0,2,3,1]")
    one_line = node_size(SceneNode("x", "Transpose", "op", (0,)))
    assert node_size(op)[1] > one_line[1]  # room for the attribute line
    svg = to_svg(scene, layout_scene(scene))
    assert ">perm=[0,2,3,1]</text>" in svg


def test_op_boxes_are_coloured_by_category_in_the_svg(block):
    from inspector.render.layout import KIND_COLOURS, OP_CATEGORY_COLOURS

    call = next(c for c in block.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    scene = build_scene(block, call)
    svg = to_svg(scene, layout_scene(scene))
    assert {"MatMul", "Softmax", "Transpose", "Mul"} <= {n.label for n in scene.nodes if n.kind == "op"}
    assert f'fill="{OP_CATEGORY_COLOURS["linear"][0]}"' in svg  # MatMul
    assert f'fill="{OP_CATEGORY_COLOURS["normalise"][0]}"' in svg  # Softmax
    assert f'fill="{OP_CATEGORY_COLOURS["shape"][0]}"' in svg  # Reshape, Transpose
    assert f'fill="{KIND_COLOURS["op"][0]}"' in svg  # Mul, Add: plain arithmetic


SDPA_OPEN = frozenset({"mod:model", "mod:model.layers.0", "mod:model.layers.0.self_attn",
                       "call:scaled_dot_product_attention"})


def test_expanded_modules_and_aten_calls_are_outlined_groups_holding_exactly_their_boxes():
    index = open_index(ROOT / "tests" / "zoo" / "llama_gqa.onnx")
    scene = build_scene(index, MAIN, SDPA_OPEN)
    assert [(g.id, g.label, g.parent) for g in scene.groups] == [
        ("mod:model", "model  LlamaModel", None),
        # a module drawn inside an open one is named past it, as the Modules tree names it
        ("mod:model.layers.0", "layers.0  LlamaDecoderLayer", "mod:model"),
        ("mod:model.layers.0.self_attn", "self_attn  LlamaAttention", "mod:model.layers.0"),
        ("call:scaled_dot_product_attention", "aten::scaled_dot_product_attention  scaled_dot_product_attention",
         "mod:model.layers.0.self_attn"),
    ]
    boxes = {n.id: n for n in scene.nodes if n.kind == "module"}
    assert boxes["mod:model.layers.0.self_attn.q_proj"].label == "q_proj"
    assert boxes["mod:model.layers.0.self_attn.q_proj"].ref == "model.layers.0.self_attn.q_proj"
    assert boxes["mod:model.layers.1"].label == "layers.1" and boxes["mod:lm_head"].label == "lm_head"
    sdpa = index.provenance.calls[next(k for k, c in enumerate(index.provenance.calls)
                                       if c.name == "scaled_dot_product_attention")]
    in_call = {n for n, g in scene.group_of.items() if g == "call:scaled_dot_product_attention"}
    # the call's 11 ONNX nodes and the 4 small constants it reads (placed with their reader)
    assert len([n for n in in_call if n.startswith("n:")]) == len(sdpa.node_paths) == 11
    assert sorted(n for n in in_call if n.startswith("const:")) == [
        "const:val_194", "const:val_206/shape", "const:val_210", "const:val_214"]
    layout = layout_scene(scene)
    parents = {g.id: g.parent for g in scene.groups}

    def holds(group: str, node: str) -> bool:
        inner: str | None = scene.group_of.get(node)
        while inner is not None and inner != group:
            inner = parents[inner]
        return inner == group

    assert [g.id for g in layout.groups] == [g.id for g in scene.groups]
    for group in layout.groups:  # dot keeps a group's boxes inside its outline, and every other box outside
        inside = {n.id for n in layout.nodes.values()
                  if group.left <= n.x - n.width / 2 and n.x + n.width / 2 <= group.left + group.width
                  and group.top <= n.y - n.height / 2 and n.y + n.height / 2 <= group.top + group.height}
        assert inside == {n for n in layout.nodes if holds(group.id, n)}, group.id
    assert build_scene(index, MAIN, frozenset()).groups == []  # nothing expanded: no outline
