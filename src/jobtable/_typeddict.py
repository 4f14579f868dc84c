"""typing.TypedDict made usable by pydantic on Python 3.11.

pydantic refuses ``typing.TypedDict`` before Python 3.12 (it needs
``typing_extensions.TypedDict``, whose class keeps what it reads). A kind's
payload or result type declared with ``typing.TypedDict`` is rebuilt as a
``typing_extensions.TypedDict`` with the same name, keys and required keys,
so that the types the documentation lists work on every supported Python.
The rebuilt class is only what pydantic validates with: the values are
dicts either way, so the kind keeps the user's type.
"""

import functools
import operator
import sys
import types
import typing
from typing import Any

import typing_extensions


def usable_by_pydantic(t: Any) -> Any:
    """t, with each typing.TypedDict in it rebuilt as a typing_extensions one before 3.12.

    Returns t itself when nothing in it needs rebuilding (always on 3.12 and
    later), and leaves what it cannot rebuild for pydantic to refuse.
    """
    if sys.version_info >= (3, 12):
        return t
    return _rebuilt(t, frozenset())


def _is_typing_typeddict(t: object) -> bool:
    return isinstance(t, type) and typing.is_typeddict(t) and type(t).__module__ == "typing"


def _rebuilt(t: Any, seen: frozenset[object]) -> Any:
    if _is_typing_typeddict(t):
        return t if t in seen else _rebuilt_typeddict(t, seen | {t})
    args = typing.get_args(t)
    if not args or typing.get_origin(t) is typing_extensions.Literal:
        return t
    new_args = tuple(_rebuilt(a, seen) for a in args)
    if all(a is b for a, b in zip(args, new_args, strict=True)):
        return t
    if isinstance(t, types.UnionType):
        return functools.reduce(operator.or_, new_args)
    if isinstance(t, types.GenericAlias):
        return types.GenericAlias(typing.get_origin(t), new_args)
    copy_with = getattr(t, "copy_with", None)
    return copy_with(new_args) if callable(copy_with) else t


def _rebuilt_typeddict(t: type, seen: frozenset[object]) -> Any:
    try:
        hints = typing.get_type_hints(t, include_extras=True)
    except Exception:  # an unresolvable annotation: pydantic says which
        return t
    required: frozenset[str] = getattr(t, "__required_keys__", frozenset())
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
            hint = typing.get_args(hint)[0]
        hint = _rebuilt(hint, seen)
        wrap = typing_extensions.Required if name in required else typing_extensions.NotRequired
        fields[name] = wrap[hint]
    # The functional form, whose name mypy wants as a literal: the name is t's.
    make: Any = typing_extensions.TypedDict
    rebuilt: Any = make(t.__name__, fields)
    rebuilt.__module__ = t.__module__
    rebuilt.__qualname__ = t.__qualname__
    rebuilt.__doc__ = t.__doc__
    return rebuilt
