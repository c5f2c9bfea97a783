"""FX text Python cannot parse: FX prints a string argument without quotes (einsum's equation ``bij,bjk->bik``).
Such text is read piece by piece; what still cannot be read is named in the call's signature problem, which the
app and the reports show, instead of the whole call's arguments being lost."""

from __future__ import annotations

from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import parse_fx_node
from inspector.core.model.keys import MAIN
from inspector.core.model.signature import call_signature


def test_unquoted_strings_in_fx_text() -> None:
    head = "%einsum : [num_users=1] = call_function[target=torch.ops.aten.einsum.default]"
    fx = parse_fx_node(head + "(args = (bij,bjk->bik, [%a, %b]), kwargs = {})")
    assert fx is not None and fx.complete
    assert [str(a) for a in fx.args] == ["bij,bjk->bik", "[%a, %b]"]
    # "ij,jk" reads as two names; binding joins them back, as the schema has one str parameter there
    text = head + "(args = (ij,jk, [%a, %b]), kwargs = {})"
    sig = call_signature(AtenCall(text, "einsum", "torch.ops.aten.einsum.default", "aten::einsum", MAIN, []))
    assert sig.problem is None
    assert [(b.parameter.name, str(b.value)) for b in sig.bound if b.provided][:2] == \
        [("equation", "ij,jk"), ("tensors", "[%a, %b]")]


def test_unreadable_fx_arguments_say_what_could_not_be_read() -> None:
    text = ("%x : [num_users=1] = call_function[target=torch.ops.aten.gelu.default]"
            "(args = (%a,), kwargs = {approximate: (tanh})")
    fx = parse_fx_node(text)
    assert fx is not None and not fx.complete
    assert fx.unread == ("(tanh",)
    text = ("%x : [num_users=1] = call_function[target=torch.ops.aten.gelu.default]"
            "(args = (%a, [1 2]), kwargs = {approximate: tanh})")
    fx = parse_fx_node(text)
    assert fx is not None and not fx.complete and fx.unread == ("[1 2]",)
    assert str(fx.kwargs["approximate"]) == "tanh"
    # a piece with no brackets, quotes or references is an unquoted string
    fx = parse_fx_node(text.replace("[1 2]", "<lambda>"))
    assert fx is not None and fx.complete and [str(a) for a in fx.args] == ["%a", "<lambda>"]


def test_the_signature_problem_names_what_could_not_be_read() -> None:
    text = ("%x : [num_users=1] = call_function[target=torch.ops.aten.transpose.int]"
            "(args = (%a, 1, [2 3]), kwargs = {})")
    sig = call_signature(AtenCall(text, "x", "torch.ops.aten.transpose.int", "aten::transpose.int", MAIN, []))
    assert sig.problem == "the FX arguments were only partly readable: could not read '[2 3]'"
    assert [(b.parameter.name, str(b.value)) for b in sig.bound if b.provided] == \
        [("self", "%a"), ("dim0", "1"), ("dim1", "[2 3]")]
