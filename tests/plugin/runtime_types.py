"""Checks at run time that values are of the types the generated code declares.

The runtime tests read rows back through the generated Querier and hold each
field against its annotation, so a driver value that is not what the
annotation says (a str where an enum is declared, an int for a Decimal)
fails the test rather than passing unnoticed.
"""

import dataclasses
import enum
import types
import typing

import psycopg.types.multirange
import psycopg.types.range
import pydantic

_JSON_SCALARS = (str, int, float, bool, type(None))


def _is_json(value: object) -> bool:
    if isinstance(value, _JSON_SCALARS):
        return True
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def check(value: object, annotation: object, where: str = "value") -> None:
    """Raises AssertionError naming where when value is not of annotation."""
    if isinstance(annotation, typing.ForwardRef) or annotation is pydantic.JsonValue:
        # The recursive JSONValue alias refers to itself by name.
        assert _is_json(value), f"{where}: {value!r} is not JSON"
        return
    if annotation is None or annotation is type(None):
        assert value is None, f"{where}: {value!r} is not None"
        return
    supertype = getattr(annotation, "__supertype__", None)
    if supertype is not None:  # a NewType
        check(value, supertype, where)
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        errors = []
        for arg in args:
            try:
                check(value, arg, where)
                return
            except AssertionError as err:
                errors.append(str(err))
        raise AssertionError(f"{where}: {value!r} is none of {annotation}: {errors}")
    if origin is list:
        assert isinstance(value, list), f"{where}: {value!r} is not a list"
        for i, item in enumerate(value):
            check(item, args[0], f"{where}[{i}]")
        return
    if origin is frozenset:
        assert isinstance(value, frozenset), f"{where}: {value!r} is not a frozenset"
        for item in value:
            check(item, args[0], f"{where} member")
        return
    if origin is tuple:
        assert isinstance(value, tuple), f"{where}: {value!r} is not a tuple"
        items = args[:1] * len(value) if args[-1:] == (...,) else args
        assert len(items) == len(value), f"{where}: {value!r} has the wrong length"
        for i, (item, arg) in enumerate(zip(value, items, strict=True)):
            check(item, arg, f"{where}[{i}]")
        return
    if origin is dict:
        assert isinstance(value, dict), f"{where}: {value!r} is not a dict"
        for key, item in value.items():
            check(key, args[0], f"{where} key")
            check(item, args[1], f"{where}[{key!r}]")
        return
    if origin is psycopg.types.range.Range:
        assert isinstance(value, psycopg.types.range.Range), f"{where}: {value!r} is not a Range"
        for bound in (value.lower, value.upper):
            if bound is not None:
                check(bound, args[0], f"{where} bound")
        return
    if origin is psycopg.types.multirange.Multirange:
        assert isinstance(value, psycopg.types.multirange.Multirange), f"{where}: {value!r}"
        for i, item in enumerate(value):
            check(item, psycopg.types.range.Range[args[0]], f"{where}[{i}]")  # type: ignore[valid-type]
        return
    if getattr(annotation, "__value__", None) is not None:  # a type statement's alias
        check(value, annotation.__value__, where)  # type: ignore[attr-defined]
        return
    assert isinstance(annotation, type), f"{where}: cannot check against {annotation!r}"
    if annotation is int:
        assert type(value) is int, f"{where}: {value!r} is not an int"
    elif annotation is float:
        assert type(value) is float, f"{where}: {value!r} is not a float"
    elif issubclass(annotation, enum.Enum):
        assert type(value) is annotation, f"{where}: {value!r} is not a {annotation.__name__}"
    else:
        assert isinstance(value, annotation), f"{where}: {value!r} is not a {annotation}"
    if dataclasses.is_dataclass(value) or isinstance(value, pydantic.BaseModel):
        check_row(value, where)


def check_row(row: object, where: str = "row") -> None:
    """Checks every field of a dataclass or pydantic row against its annotation."""
    hints = typing.get_type_hints(type(row))
    if isinstance(row, pydantic.BaseModel):
        names = list(type(row).model_fields)
    else:
        assert dataclasses.is_dataclass(row), f"{where}: {row!r} is not a row"
        names = [f.name for f in dataclasses.fields(row)]
    # A query of no columns (SELECT FROM t) has a row class of no fields.
    assert names or not hints, f"{where}: {type(row).__name__} has no fields"
    for name in names:
        check(getattr(row, name), hints[name], f"{where}.{name}")
