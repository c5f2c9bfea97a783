"""Generate a ~100k-node flat export carrying torch-style metadata, with its weights as external data.

The layout mimics ``torch.onnx.export(..., dynamo=True)`` of a deep transformer: each aten call is a group of
ONNX nodes sharing one ``pkg.torch.onnx.fx_node`` text, with namespace, name scopes, class hierarchy and a
stack trace. ``python benchmarks/gen_large.py OUT.onnx [--nodes N]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 16
MODEL_CLASS = "__main__.DeepTransformer"


class _Builder:
    def __init__(self, graph: onnx.GraphProto, weights: Path) -> None:
        self.g = graph
        self.n = 0
        self.weights = weights
        self.offset = 0
        self.fh = open(weights, "wb")  # noqa: SIM115 - closed in finish()

    def finish(self) -> None:
        self.fh.close()

    def weight(self, name: str, shape: tuple[int, ...], rng: np.random.Generator) -> str:
        data = rng.standard_normal(shape).astype(np.float32).tobytes()
        t = self.g.initializer.add()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.weights.name), ("offset", str(self.offset)), ("length", str(len(data)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.fh.write(data)
        self.offset += len(data)
        return name

    def const(self, name: str, array: np.ndarray) -> str:
        self.g.initializer.append(numpy_helper.from_array(array, name))
        return name

    def call(self, fx_name: str, target: str, args: str, scopes: list[tuple[str, str]],
             nodes: list[tuple[str, list[str], dict[str, Any]]], x: str) -> str:
        """Add one aten call: ``nodes`` are (op_type, extra inputs, attrs) chained on ``x``."""
        fx = (f"%{fx_name} : [num_users=1] = call_function[target=torch.ops.{target}](args = ({args}), "
              "kwargs = {})")
        namespace = "/".join(f"{p}: {c}" for p, c in scopes) + f"/{fx_name}: {target}"
        name_scopes = repr([p for p, _ in scopes] + [fx_name])
        classes = repr([c for _, c in scopes] + [target])
        trace = ('File "model.py", line 212, in forward\n    x = layer(x)\n  File "model.py", line 118, in '
                 f'forward\n    h = self.{fx_name.split("_")[0]}(h)')
        out = x
        for i, (op, extra, attrs) in enumerate(nodes):
            self.n += 1
            last = i == len(nodes) - 1
            y = fx_name if last else f"val_{self.n}"
            node = helper.make_node(op, [out, *extra], [y], name=f"node_{op}_{self.n}", **attrs)
            for k, v in (("namespace", namespace), ("pkg.torch.onnx.class_hierarchy", classes),
                         ("pkg.torch.onnx.fx_node", fx), ("pkg.torch.onnx.name_scopes", name_scopes),
                         ("pkg.torch.onnx.stack_trace", trace)):
                p = node.metadata_props.add()
                p.key, p.value = k, v
            self.g.node.append(node)
            out = y
        return out


def generate(path: Path, target_nodes: int = 100_000, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    model = onnx.ModelProto()
    model.ir_version = 10
    model.producer_name, model.producer_version = "pytorch", "2.13.0+cpu (synthetic)"
    model.opset_import.add().version = 20
    g = model.graph
    g.name = "main_graph"
    g.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, D]))
    b = _Builder(g, path.with_name(path.stem + ".weights.bin"))
    scale = b.const("val_scale", np.array([0.5946035], dtype=np.float32))
    shape_h = b.const("val_shape_heads", np.array([1, 8, 2, 8], dtype=np.int64))
    shape_m = b.const("val_shape_model", np.array([1, 8, D], dtype=np.int64))
    x = "x"
    layer = 0
    k = 0
    while b.n < target_nodes:
        root = [("", MODEL_CLASS), (f"layers.{layer}", "__main__.Block")]
        attn = [*root, (f"layers.{layer}.attn", "__main__.Attention")]

        def lin(name: str, scopes: list[tuple[str, str]], h: str) -> str:
            nonlocal k
            k += 1
            w = b.weight(f"p_{scopes[-1][0].replace('.', '_')}_{name}_weight", (D, D), rng)
            bias = b.weight(f"p_{scopes[-1][0].replace('.', '_')}_{name}_bias", (D,), rng)
            return b.call(f"linear_{k}", "aten.linear.default", f"%{h}, %{w}, %{bias}",
                          [*scopes, (f"{scopes[-1][0]}.{name}", "torch.nn.modules.linear.Linear")],
                          [("MatMul", [w], {}), ("Add", [bias], {})], h)

        def simple(fx: str, target: str, args: str, scopes: list[tuple[str, str]],
                   nodes: list[tuple[str, list[str], dict[str, Any]]], h: str) -> str:
            nonlocal k
            k += 1
            return b.call(f"{fx}_{k}", target, args.format(h=h), scopes, nodes, h)

        ln_w = b.weight(f"p_layers_{layer}_ln_weight", (D,), rng)
        h = simple("layer_norm", "aten.layer_norm.default", f"%{{h}}, [{D}], %{ln_w}, None, 1e-05", root,
                   [("LayerNormalization", [ln_w], {"axis": -1, "epsilon": 1e-5})], x)
        heads = []
        for proj in ("q", "k", "v"):
            t = lin(f"{proj}_proj", attn, h)
            t = simple("view", "aten.view.default", "%{h}, [1, 8, 2, 8]", attn, [("Reshape", [shape_h], {})], t)
            t = simple("transpose", "aten.transpose.int", "%{h}, 1, 2", attn,
                       [("Transpose", [], {"perm": [0, 2, 1, 3]})], t)
            heads.append(t)
        q, kk, v = heads
        s = simple("scaled_dot_product_attention", "aten.scaled_dot_product_attention.default",
                   f"%{q}, %{kk}, %{v}", attn,
                   [("Mul", [scale], {}), ("Transpose", [], {"perm": [0, 1, 3, 2]}), ("Mul", [scale], {}),
                    ("MatMul", [kk], {}), ("Softmax", [], {"axis": -1}), ("MatMul", [v], {})], q)
        s = simple("transpose", "aten.transpose.int", "%{h}, 1, 2", attn,
                   [("Transpose", [], {"perm": [0, 2, 1, 3]})], s)
        s = simple("view", "aten.view.default", f"%{{h}}, [1, 8, {D}]", attn, [("Reshape", [shape_m], {})], s)
        s = lin("out_proj", attn, s)
        x = simple("add", "aten.add.Tensor", "%{h}, %" + x, root, [("Add", [x], {})], s)
        mlp = [*root, (f"layers.{layer}.mlp", "__main__.MLP")]
        m = lin("fc1", mlp, x)
        m = simple("gelu", "aten.gelu.default", "%{h}", mlp, [("Gelu", [], {})], m)
        m = lin("fc2", mlp, m)
        x = simple("add", "aten.add.Tensor", "%{h}, %" + x, root, [("Add", [x], {})], m)
        layer += 1
    b.finish()
    g.output.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 8, D]))
    onnx.save_model(model, str(path))
    return b.n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=100_000)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = generate(out, args.nodes)
    print(f"wrote {out} ({n} nodes, {out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
