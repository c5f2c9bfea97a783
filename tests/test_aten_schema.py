"""Tests for the pure-Python aten schema parser, catalogue and binder (no torch needed)."""

from __future__ import annotations

import enum
import gzip
from dataclasses import dataclass
from pathlib import Path

import pytest

from inspector.core.aten import resources as aten_resources
from inspector.core.aten import schemas as aten_schema
from inspector.core.aten.schema_text import normalize_target
from inspector.core.aten.schemas import (
    AtenSchema,
    BoundArgument,
    Parameter,
    Return,
    SchemaCatalogue,
    bind,
    format_signature,
    parse_schema,
)

SDPA = (
    "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"
)
MAX_DIM = "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
ADD_OUT = "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
CONV2D = (
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, SymInt[2] padding=0, "
    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor"
)
TRANSPOSE = "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"
RELU = "aten::relu(Tensor self) -> Tensor"

CATALOGUE_PATH = Path(__file__).resolve().parents[1] / "resources" / "aten_schemas.txt"


@dataclass(frozen=True)
class TensorRef:
    """Stand-in for the graph-value objects the FX provenance code passes to bind()."""

    name: str


def _catalogue_lines() -> list[str]:
    if CATALOGUE_PATH.is_file():
        return CATALOGUE_PATH.read_text(encoding="utf-8").splitlines()
    gz = CATALOGUE_PATH.with_name(CATALOGUE_PATH.name + ".gz")
    return gzip.decompress(gz.read_bytes()).decode("utf-8").splitlines()


def _param(schema: AtenSchema, name: str) -> Parameter:
    param = schema.parameter(name)
    assert param is not None, name
    return param


# ---------------------------------------------------------------------------------------------
# parse_schema


def test_parse_sdpa_positional_kwarg_only_and_defaults() -> None:
    schema = parse_schema(SDPA)
    assert schema.name == "aten::scaled_dot_product_attention"
    assert schema.overload == ""
    assert schema.target == "aten::scaled_dot_product_attention"
    assert schema.text == SDPA
    assert [p.name for p in schema.parameters] == [
        "query",
        "key",
        "value",
        "attn_mask",
        "dropout_p",
        "is_causal",
        "scale",
        "enable_gqa",
    ]
    assert [p.kwarg_only for p in schema.parameters] == [False] * 6 + [True] * 2
    assert [p.is_tensor for p in schema.parameters] == [True, True, True, True, False, False, False, False]
    mask = _param(schema, "attn_mask")
    assert (mask.type, mask.default, mask.default_value) == ("Tensor?", "None", None)
    dropout = _param(schema, "dropout_p")
    assert dropout.default == "0."
    assert dropout.default_value == 0.0 and isinstance(dropout.default_value, float)
    assert _param(schema, "is_causal").default_value is False
    assert _param(schema, "scale").type == "float?"
    assert _param(schema, "query").default is None
    assert not _param(schema, "query").has_default
    assert schema.returns == (Return(name=None, type="Tensor"),)


def test_parse_named_tuple_returns() -> None:
    schema = parse_schema(MAX_DIM)
    assert schema.target == "aten::max.dim"
    assert schema.overload == "dim"
    assert schema.returns == (Return("values", "Tensor"), Return("indices", "Tensor"))
    assert _param(schema, "keepdim").default_value is False


def test_parse_out_variant_alias_annotation() -> None:
    schema = parse_schema(ADD_OUT)
    out = _param(schema, "out")
    assert out.type == "Tensor(a!)"
    assert out.kwarg_only and out.is_tensor and out.default is None
    alpha = _param(schema, "alpha")
    assert alpha.type == "Scalar" and alpha.kwarg_only and not alpha.is_tensor
    assert alpha.default_value == 1 and isinstance(alpha.default_value, int)
    assert schema.returns == (Return(None, "Tensor(a!)"),)


def test_fixed_size_list_default_is_broadcast() -> None:
    schema = parse_schema(CONV2D)
    stride = _param(schema, "stride")
    assert (stride.type, stride.default) == ("int[2]", "1")
    assert stride.default_value == [1, 1]
    assert _param(schema, "padding").type == "SymInt[2]"
    assert _param(schema, "padding").default_value == [0, 0]
    assert _param(schema, "groups").default_value == 1
    assert not stride.is_tensor
    assert _param(schema, "bias").is_tensor


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        ('"mean"', "mean"),
        ("[0, 0]", [0, 0]),
        ("[]", []),
        ("[-2, -1]", [-2, -1]),
        ("-1", -1),
        ("1e-05", 1e-05),
        ("0.", 0.0),
        ("-100", -100),
        ("True", True),
        ("None", None),
        ('""', ""),
        ('" \\n\\t\\f\\v"', " \n\t\f\v"),
        ('"\\"\\\'\\\\"', "\"'\\"),
        ("contiguous_format", "contiguous_format"),
        ("long", "long"),
    ],
)
def test_default_values(default: str, expected: object) -> None:
    schema = parse_schema(f"aten::f(Tensor self, Any x={default}) -> Tensor")
    param = _param(schema, "x")
    assert param.default == default
    assert param.default_value == expected
    assert type(param.default_value) is type(expected)


def test_string_default_with_comma_and_paren() -> None:
    schema = parse_schema('aten::f(str a=", )", int b=2) -> str')
    assert _param(schema, "a").default_value == ", )"
    assert _param(schema, "b").default_value == 2


@pytest.mark.parametrize(
    ("type_text", "is_tensor"),
    [
        ("Tensor", True),
        ("Tensor?", True),
        ("Tensor(a!)", True),
        ("Tensor(a -> *)", True),
        ("Tensor(b|a)", True),
        ("Tensor[]", True),
        ("Tensor?[]", True),
        ("Tensor?[]?", True),
        ("Tensor(a!)[]", True),
        ("Tensor[](a!)", True),
        ("Scalar", False),
        ("ScalarType?", False),
        ("Dimname[1]", False),
        ("Layout?", False),
        ("Device?", False),
        ("str?", False),
        ("Generator?", False),
        ("MemoryFormat?", False),
        ("int[1]?", False),
        ("SymInt[]", False),
        ("t(a)?", False),
        ("Dict(Tensor, t)", False),
        ("Dict(str, t)(a!)", False),
        ("(Tensor, t)[]", False),
        ("__torch__.torch.classes.rnn.CellParamsBase[]", False),
        ("Any", False),
        ("TensorList", False),
    ],
)
def test_types_and_tensor_classification(type_text: str, is_tensor: bool) -> None:
    schema = parse_schema(f"aten::f({type_text} x, int y) -> ()")
    assert [p.name for p in schema.parameters] == ["x", "y"]
    assert schema.parameters[0].type == type_text
    assert schema.parameters[0].is_tensor is is_tensor
    assert schema.returns == ()


def test_returns_forms() -> None:
    assert parse_schema("aten::f(Tensor self) -> ()").returns == ()
    assert parse_schema("aten::f(Tensor self) -> Tensor grid").returns == (Return("grid", "Tensor"),)
    tuple_ret = parse_schema("aten::items.str(Dict(str, t) self) -> ((str, t)[])").returns
    assert tuple_ret == (Return(None, "(str, t)[]"),)
    unnamed = parse_schema("aten::f(Tensor self) -> (Tensor, Tensor[], int)").returns
    assert [r.type for r in unnamed] == ["Tensor", "Tensor[]", "int"]
    assert parse_schema("aten::split(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]").returns == (
        Return(None, "Tensor(a)[]"),
    )


def test_varargs() -> None:
    schema = parse_schema("aten::format(str self, ...) -> str")
    assert schema.is_vararg and not schema.is_varret
    assert [p.name for p in schema.parameters] == ["self"]
    assert parse_schema("aten::has_torch_function(...) -> bool").parameters == ()
    assert parse_schema("prim::f(int a) -> ...").is_varret


def test_zero_arguments_and_whitespace_tolerance() -> None:
    assert parse_schema("aten::f() -> int").parameters == ()
    schema = parse_schema("  aten::f.o ( Tensor  self ,  *,  int  k = 3 )  ->  Tensor  ")
    assert schema.target == "aten::f.o"
    assert [(p.name, p.kwarg_only, p.default) for p in schema.parameters] == [
        ("self", False, None),
        ("k", True, "3"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "aten::relu",
        "aten::relu(Tensor self)",
        "aten::relu(Tensor self) ->",
        "aten::relu(Tensor self -> Tensor",
        "aten::f(Tensor self int x) -> Tensor",
        "aten::f(Tensor) -> Tensor",
        "aten::f(int x=) -> Tensor",
        "aten::f(int x=[1, 2) -> Tensor",
        'aten::f(str x="abc) -> Tensor',
        "aten::f(int x, int x) -> Tensor",
        "aten::f(int x, ..., int y) -> Tensor",
        "aten::f(Tensor(a! self) -> Tensor",
        "aten::f(int[x] y) -> Tensor",
        "aten::f(Tensor self) -> Tensor junk junk",
        "aten::f(" + "(" * 200 + "int x) -> int",
        "aten::f(Tensor self)\n-> Tensor garbage(",
    ],
)
def test_malformed_schema_raises_one_line_value_error(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_schema(text)
    message = str(info.value)
    assert message and "\n" not in message


def test_parse_schema_rejects_non_string() -> None:
    with pytest.raises(ValueError):
        parse_schema(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# packaged catalogue


def test_packaged_catalogue_every_line_parses_and_round_trips() -> None:
    lines = _catalogue_lines()
    assert lines[0].startswith("# generated by scripts/gen_aten_schemas.py from torch ")
    schemas = [parse_schema(line) for line in lines[1:] if line.strip()]
    assert len(schemas) > 3000
    targets = [s.target for s in schemas]
    assert len(set(targets)) == len(targets)
    assert all(s.name.startswith(("aten::", "prims::")) for s in schemas)
    assert [s.text for s in schemas] == sorted(s.text for s in schemas)
    # the unbound signature renders each schema exactly as torch printed it
    for schema in schemas:
        assert format_signature(schema) == schema.text
        for param in schema.parameters:
            param.default_value  # noqa: B018 - every default must be interpretable without error


def test_default_catalogue_lookups_by_every_spelling() -> None:
    catalogue = SchemaCatalogue.default()
    assert catalogue is SchemaCatalogue.default()
    assert len(catalogue) > 3000
    spellings = [
        "aten::transpose.int",
        "aten.transpose.int",
        "torch.ops.aten.transpose.int",
        " aten::transpose.int ",
    ]
    found = [catalogue.get(s) for s in spellings]
    assert all(s is not None and s.target == "aten::transpose.int" for s in found)
    assert found[0] is found[1]  # parsed once, cached
    assert found[0] is not None and found[0].text == TRANSPOSE
    for spelling in ["aten::relu", "aten.relu.default", "aten::relu.default", "torch.ops.aten.relu.default"]:
        relu = catalogue.get(spelling)
        assert relu is not None and relu.text == RELU, spelling
        assert spelling in catalogue
    sdpa = catalogue.get("torch.ops.aten.scaled_dot_product_attention.default")
    assert sdpa is not None and _param(sdpa, "scale").kwarg_only
    assert catalogue.get("prims::convert_element_type") is not None
    assert catalogue.get("aten::does_not_exist") is None
    assert catalogue.get("aten::relu.no_such_overload") is None
    assert catalogue.get("<built-in function getitem>") is None
    assert "aten::does_not_exist" not in catalogue
    assert "not a target" not in catalogue
    assert 42 not in catalogue


def test_default_catalogue_overloads() -> None:
    catalogue = SchemaCatalogue.default()
    adds = catalogue.overloads("aten::add")
    targets = [s.target for s in adds]
    assert {"aten::add.Tensor", "aten::add.Scalar", "aten::add.out"} <= set(targets)
    assert all(s.name == "aten::add" for s in adds)
    assert [s.target for s in catalogue.overloads("torch.ops.aten.add")] == targets
    assert [s.target for s in catalogue.overloads("aten.add.Tensor")] == targets
    relu = catalogue.overloads("aten::relu")
    assert relu and relu[0].target == "aten::relu"  # the default overload sorts first
    assert catalogue.overloads("aten::does_not_exist") == []
    assert catalogue.overloads("garbage") == []


def test_from_lines_skips_comments_and_iterates_in_order() -> None:
    catalogue = SchemaCatalogue.from_lines(["# header", "", RELU, TRANSPOSE, "   ", ADD_OUT])
    assert len(catalogue) == 3
    assert list(catalogue) == ["aten::relu", "aten::transpose.int", "aten::add.out"]
    assert catalogue.get("aten.add.out") == parse_schema(ADD_OUT)
    assert [s.target for s in catalogue.overloads("aten::add")] == ["aten::add.out"]


def test_from_lines_rejects_non_schema_lines() -> None:
    with pytest.raises(ValueError, match="line 2"):
        SchemaCatalogue.from_lines([RELU, "this is not a schema"])


def test_from_lines_defers_parsing_until_lookup() -> None:
    catalogue = SchemaCatalogue.from_lines(["aten::broken(Tensor self -> Tensor"])
    assert "aten::broken" in catalogue
    with pytest.raises(ValueError):
        catalogue.get("aten::broken")


def test_gzipped_catalogue_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = "\n".join(["# generated", RELU, TRANSPOSE]) + "\n"
    (tmp_path / "aten_schemas.txt.gz").write_bytes(gzip.compress(payload.encode("utf-8")))
    monkeypatch.setattr(aten_resources, "resource_roots", lambda: [tmp_path / "missing", tmp_path])
    lines = aten_schema._read_catalogue_lines()
    catalogue = SchemaCatalogue.from_lines(lines)
    assert list(catalogue) == ["aten::relu", "aten::transpose.int"]


def test_missing_catalogue_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aten_resources, "resource_roots", lambda: [tmp_path])
    with pytest.raises(FileNotFoundError):
        aten_schema._read_catalogue_lines()


# ---------------------------------------------------------------------------------------------
# normalize_target


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("torch.ops.aten.transpose.int", "aten::transpose.int"),
        ("aten.transpose.int", "aten::transpose.int"),
        ("aten::transpose.int", "aten::transpose.int"),
        ("aten.relu.default", "aten::relu"),
        ("aten::relu.default", "aten::relu"),
        ("torch.ops.aten.relu.default", "aten::relu"),
        ("aten::relu", "aten::relu"),
        ("aten.relu", "aten::relu"),
        ("prims.convert_element_type.default", "prims::convert_element_type"),
        ("aten::add.Tensor", "aten::add.Tensor"),
    ],
)
def test_normalize_target(spelling: str, expected: str) -> None:
    assert normalize_target(spelling) == expected


@pytest.mark.parametrize(
    "bad", ["", "relu", "aten::", "aten.", "<built-in function getitem>", "aten::relu.a.b", "a b::c"]
)
def test_normalize_target_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        normalize_target(bad)


# ---------------------------------------------------------------------------------------------
# bind


def test_bind_positional_kwargs_and_defaults() -> None:
    schema = parse_schema(SDPA)
    q, k, v = TensorRef("q"), TensorRef("k"), TensorRef("v")
    bound = bind(schema, [q, k, v], {"scale": 0.125})
    assert [b.parameter.name for b in bound] == [p.name for p in schema.parameters]
    by_name = {b.parameter.name: b for b in bound}
    assert by_name["query"] == BoundArgument(schema.parameters[0], q, is_default=False, provided=True)
    assert by_name["attn_mask"].value is None and by_name["attn_mask"].is_default
    assert by_name["dropout_p"].value == 0.0 and by_name["dropout_p"].is_default
    assert by_name["scale"].value == 0.125 and not by_name["scale"].is_default
    assert by_name["enable_gqa"].value is False and by_name["enable_gqa"].is_default
    assert all(b.provided for b in bound)


def test_bind_positional_parameter_by_keyword() -> None:
    schema = parse_schema(TRANSPOSE)
    bound = bind(schema, [TensorRef("x")], {"dim1": 2, "dim0": 1})
    assert [(b.parameter.name, b.value) for b in bound] == [
        ("self", TensorRef("x")),
        ("dim0", 1),
        ("dim1", 2),
    ]


def test_bind_missing_required_argument_is_reported_not_raised() -> None:
    schema = parse_schema(ADD_OUT)
    bound = bind(schema, [TensorRef("a"), TensorRef("b")], {})
    out = bound[-1]
    assert out.parameter.name == "out"
    assert not out.provided and not out.is_default and out.value is None
    assert bound[2].parameter.name == "alpha" and bound[2].value == 1 and bound[2].is_default


def test_bind_fixed_list_default() -> None:
    bound = bind(parse_schema(CONV2D), [TensorRef("x"), TensorRef("w")], {"padding": [1, 1]})
    values = {b.parameter.name: b.value for b in bound}
    assert values["stride"] == [1, 1]
    assert values["padding"] == [1, 1]
    assert values["dilation"] == [1, 1]


def test_bind_errors() -> None:
    schema = parse_schema(ADD_OUT)
    with pytest.raises(ValueError, match="positional"):
        bind(schema, [1, 2, 3], {})  # alpha is keyword-only
    with pytest.raises(ValueError, match="unexpected keyword argument 'beta'"):
        bind(schema, [1, 2], {"beta": 1})
    with pytest.raises(ValueError, match="multiple values"):
        bind(schema, [1, 2], {"self": 3})
    for message in ("positional", "beta", "multiple"):
        assert "\n" not in message


def test_bind_vararg_schema_collects_extras() -> None:
    schema = parse_schema("aten::format(str self, ...) -> str")
    bound = bind(schema, ["{} {}", 1, 2], {})
    assert [b.parameter.name for b in bound] == ["self", "..."]
    assert bound[1].value == (1, 2)
    assert format_signature(schema, bound) == "aten::format(self='{} {}', 1, 2) -> str"


# ---------------------------------------------------------------------------------------------
# format_signature


def test_format_signature_unbound_reads_like_schema() -> None:
    assert format_signature(parse_schema(SDPA)) == SDPA
    assert format_signature(parse_schema(MAX_DIM)) == MAX_DIM
    assert format_signature(parse_schema("aten::f(Tensor self) -> ()")) == "aten::f(Tensor self) -> ()"


def test_format_signature_bound() -> None:
    schema = parse_schema(TRANSPOSE)
    bound = bind(schema, [TensorRef("gelu"), 1, 2], {})
    assert format_signature(schema, bound) == "aten::transpose.int(self=%gelu, dim0=1, dim1=2) -> Tensor(a)"


def test_format_signature_renders_values() -> None:
    class Color(enum.Enum):
        RED = 1

    schema = parse_schema(
        "aten::f(Tensor self, Tensor[] xs, float eps, int[] dims, str mode, bool flag, Any e, "
        "Any pair, Any mapping, *, Tensor(a!) out) -> (Tensor a, Tensor b)"
    )
    bound = bind(
        schema,
        [TensorRef("%x"), [TensorRef("y"), TensorRef("z")], 1e-05, [0, -1], "mean", True, Color.RED, (3,)],
        {"mapping": {"k": None}},
    )
    assert format_signature(schema, bound) == (
        "aten::f(self=%x, xs=[%y, %z], eps=1e-05, dims=[0, -1], mode='mean', flag=True, "
        "e=<Color.RED: 1>, pair=(3,), mapping={'k': None}, out=<missing>) -> (Tensor a, Tensor b)"
    )


def test_format_signature_tuple_typed_single_return_stays_unambiguous() -> None:
    text = "aten::items.str(Dict(str, t) self) -> ((str, t)[])"
    assert format_signature(parse_schema(text)) == text
