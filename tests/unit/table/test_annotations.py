"""table/annotations.py: one annotation -> kind table for both readers of Python signatures, so a class's
constructor argument and a function's argument with the same annotation take the same words."""
import inspect

import pytest

from torchsh.table import annotations, from_torch, signature

ANNOTATIONS = ("bool", "int", "int | None", "float | None", "str", "str | None", "list[int]", "int | list[int]",
               "Tensor | None", "list[float] | None", "Literal['min', 'max']", "dtype | None")


def _param(annotation, default=inspect.Parameter.empty, name="x"):
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)


@pytest.mark.parametrize("annotation", ANNOTATIONS)
def test_a_class_and_a_function_read_an_annotation_as_the_same_kind(annotation):
    assert signature.kind_of(_param(annotation))[0] == from_torch._kind_of(_param(annotation))[0]


def test_typing_spellings_read_as_the_plain_ones():
    import typing
    assert annotations.annotation_text(typing.Optional[int]) == "int | None"
    assert annotations.annotation_text(typing.Union[int, typing.List[int]]) == "int | List[int]"
    assert annotations.annotated_kind(annotations.annotation_text(typing.Optional[int])) == ("int", "int")


def test_a_union_no_row_types_is_json_for_a_class_and_left_out_for_a_function():
    """`int | tuple[int, int] | str` (padding): a class takes it as JSON words; a function's parameter that nothing
    types drops the function rather than guess."""
    text = "str | int | tuple[int, int]"
    assert signature.kind_of(_param(text)) == ("json", text)
    assert from_torch._kind_of(_param(text, name="padding")) == (None, None)
