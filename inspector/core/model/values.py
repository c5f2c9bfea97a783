"""Types and shapes of values, from graph inputs, outputs and value_info (no shape inference is run)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import onnx

from inspector.core.model.tensor_sizes import dtype_name


def _dim(d: onnx.TensorShapeProto.Dimension) -> str:
    if d.HasField("dim_value"):
        return str(d.dim_value)
    return d.dim_param or "?"


def type_text(tp: onnx.TypeProto, max_depth: int = 8) -> str:
    """``FLOAT[1,8,16]``, ``INT64[batch,?]``, ``seq(FLOAT[2])``; "" when the type is unknown.

    Iterative with a depth bound: a hostile model may nest sequence types arbitrarily deep.
    """
    opened: list[str] = []
    base = ""
    for _ in range(max_depth):
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            t = tp.tensor_type if which == "tensor_type" else tp.sparse_tensor_type
            base = dtype_name(t.elem_type) if t.elem_type else "?"
            if which == "sparse_tensor_type":
                base = "sparse " + base
            if t.HasField("shape"):
                base += "[" + ",".join(_dim(d) for d in t.shape.dim) + "]"
            break
        if which == "sequence_type":
            opened.append("seq(")
            tp = tp.sequence_type.elem_type
        elif which == "optional_type":
            opened.append("opt(")
            tp = tp.optional_type.elem_type
        elif which == "map_type":
            opened.append(f"map({dtype_name(tp.map_type.key_type)},")
            tp = tp.map_type.value_type
        else:
            base = "?" if opened else ""
            break
    else:
        base = "…"
    return "".join(opened) + base + ")" * len(opened)


_POSITION = (1 << 40) - 1


class ValueTypes(Mapping[str, str]):
    """The type text of each value of a graph, by name, read when first asked for.

    A 100k-node export has 100k value infos: reading every type up front cost the app 1 s of opening. Only the
    names are read here (one pass);
    a type is read when a value is shown. The type of a name is that of its last value info with a type (inputs,
    value_info, outputs, in this order), else of its initializer.
    """

    def __init__(self, graph: onnx.GraphProto) -> None:
        self._infos = (graph.input, graph.value_info, graph.output)
        self._initializers = graph.initializer
        # name -> where its first value info is (which of _infos << 40 | position); later ones of a repeated name
        # in _more: no object per name that the cyclic collector would walk
        first: dict[str, int] = {}
        more: dict[str, list[int]] = {}
        for k, seq in enumerate(self._infos):
            base = k << 40
            for i, v in enumerate(seq):
                name = v.name
                if name in first:
                    more.setdefault(name, []).append(base | i)
                else:
                    first[name] = base | i
        self._first, self._more = first, more
        self._init_at = {t.name: i for i, t in enumerate(self._initializers)}  # the last of a repeated name
        self._known: dict[str, str | None] = {}

    def _read(self, name: str) -> str | None:
        at = self._first.get(name)
        if at is not None:
            for pos in reversed((at, *self._more.get(name, ()))):
                v = self._infos[pos >> 40][pos & _POSITION]
                if v.HasField("type"):
                    return type_text(v.type)
        i = self._init_at.get(name, -1)
        if i < 0:
            return None
        t = self._initializers[i]
        return f"{dtype_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"

    def __getitem__(self, name: str) -> str:
        if name in self._known:
            text = self._known[name]
        else:
            text = self._known[name] = self._read(name)
        if text is None:
            raise KeyError(name)
        return text

    def __iter__(self) -> Iterator[str]:
        return (name for name in {**self._init_at, **self._first} if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


GraphValues = tuple[ValueTypes, dict[str, onnx.TensorProto]]  # value types; initializers by name


def graph_values(graph: onnx.GraphProto) -> GraphValues:
    """What a node's details show of its values: their types (read when shown) and the initializers by name."""
    return ValueTypes(graph), {t.name: t for t in graph.initializer}
