"""Calls every method of a generated package with made-up arguments, checking what returns.

A sample value is made for each parameter from its annotation (a NewType's
supertype, an enum's first member, a list of one, a params class with every
field sampled), so the calls need nothing but the generated code. Each
method is called in a few rounds, the ones that add rows first, so the
reading ones find rows; a call the database refuses (a constraint, a
foreign key, a value out of range) counts as failed and is not a mismatch.
Every value a call returns is held against the method's return annotation
with runtime_types.check: a mismatch is a value the driver returned that is
not of the annotated type.
"""

import asyncio
import contextlib
import dataclasses
import datetime
import decimal
import enum
import importlib
import inspect
import ipaddress
import pkgutil
import types
import typing
import uuid
from collections.abc import Callable, Iterable
from types import ModuleType

import psycopg.types.multirange
import psycopg.types.range
import pydantic
from runtime_types import check

ROUNDS = 3
"""How often each method is called: the first round mostly seeds rows."""

_FIRST = ("create", "insert", "add", "copy", "upsert", "put", "enqueue", "new")
_LAST = ("delete", "remove", "drop", "truncate", "purge", "prune", "clear")


@dataclasses.dataclass
class Tally:
    """What the calls of one package did."""

    calls: int = 0
    succeeded: int = 0
    values: int = 0
    """Values returned and checked: each row's fields, each one-column value."""
    mismatches: list[str] = dataclasses.field(default_factory=list)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    """The last database error of each method that never succeeded."""
    worked: set[str] = dataclasses.field(default_factory=set)

    def summary(self, name: str) -> str:
        """One line of figures."""
        never = sorted(set(self.failed) - self.worked)
        return (
            f"{name}: {self.calls} calls, {self.succeeded} succeeded, {self.values} values "
            f"checked, {self.values - len(self.mismatches)} matching their annotations, "
            f"{len(self.mismatches)} not; methods never succeeding: {len(never)}"
        ) + "".join(f"\n  {name}: {self.failed[name][:100]}" for name in never)


def sample(annotation: object, n: int, naive: bool = False) -> object:
    """Returns a value of annotation, varied by n; naive makes datetimes without a zone."""
    supertype = getattr(annotation, "__supertype__", None)
    if supertype is not None:
        return sample(supertype, n, naive)
    if getattr(annotation, "__value__", None) is not None:
        return sample(annotation.__value__, n, naive)  # type: ignore[attr-defined]
    if isinstance(annotation, str | typing.ForwardRef) or annotation is pydantic.JsonValue:
        # The recursive JSON alias names itself.
        return {"n": n}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return sample(args[0], n, naive)
    if origin in (types.UnionType, typing.Union):
        chosen = [a for a in args if a is not type(None)]
        return sample(chosen[0], n, naive) if chosen else None
    if origin in (list, Iterable) or origin is getattr(typing, "Iterable", None):
        return [sample(args[0], n, naive)]
    if origin is frozenset:
        return frozenset()
    if origin is dict:
        return {"k": "v"}
    if origin is tuple:
        return tuple(sample(a, n, naive) for a in args if a is not Ellipsis)
    if origin is psycopg.types.range.Range:
        return psycopg.types.range.Range(empty=True)
    if origin is psycopg.types.multirange.Multirange:
        return psycopg.types.multirange.Multirange()
    if naive and annotation is datetime.datetime:
        return datetime.datetime(2026, 1, 1 + n % 28, 12)
    if not naive and annotation is datetime.time:
        return datetime.time(n % 24, 30, tzinfo=datetime.UTC)
    return _plain(annotation, n, naive)


_PLAIN: dict[object, Callable[[int], object]] = {
    int: lambda n: n,
    float: lambda n: n + 0.5,
    str: lambda n: f"s{n}",
    bool: lambda n: n % 2 == 1,
    bytes: lambda n: bytes([n % 256]),
    decimal.Decimal: lambda n: decimal.Decimal(n) + decimal.Decimal("0.25"),
    datetime.datetime: lambda n: datetime.datetime(2026, 1, 1 + n % 28, 12, tzinfo=datetime.UTC),
    datetime.date: lambda n: datetime.date(2026, 1, 1 + n % 28),
    datetime.time: lambda n: datetime.time(n % 24, 30),
    datetime.timedelta: lambda n: datetime.timedelta(hours=n),
    uuid.UUID: lambda n: uuid.UUID(int=n),
    ipaddress.IPv4Address: lambda n: ipaddress.IPv4Address(f"10.0.0.{n % 250 + 1}"),
    ipaddress.IPv4Network: lambda n: ipaddress.IPv4Network(f"10.{n % 250}.0.0/16"),
    ipaddress.IPv4Interface: lambda n: ipaddress.IPv4Interface(f"10.0.0.{n % 250 + 1}/24"),
    object: lambda n: n,
}


def _plain(annotation: object, n: int, naive: bool) -> object:
    if annotation in _PLAIN:
        return _PLAIN[annotation](n)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        members = list(annotation)
        return members[n % len(members)]
    if isinstance(annotation, type) and (
        dataclasses.is_dataclass(annotation) or issubclass(annotation, pydantic.BaseModel)
    ):
        hints = typing.get_type_hints(annotation)
        fields = (
            list(annotation.model_fields)
            if issubclass(annotation, pydantic.BaseModel)
            else [f.name for f in dataclasses.fields(annotation)]
        )
        return annotation(**{f: sample(hints[f], n, naive) for f in fields})
    raise TypeError(f"no sample for {annotation!r}")


def _count(value: object) -> int:
    """The values a result holds: a row's fields, or 1."""
    if isinstance(value, list):
        return sum(_count(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return len(dataclasses.fields(value))
    if isinstance(value, pydantic.BaseModel):
        return len(type(value).model_fields)
    return 1


def _order(name: str) -> int:
    if name.startswith(_FIRST):
        return 0
    return 2 if name.startswith(_LAST) else 1


def methods(querier: object) -> list[tuple[str, Callable[..., object]]]:
    """The public query methods of querier, adding ones first and deleting ones last."""
    found = [
        (name, getattr(querier, name))
        for name, _ in inspect.getmembers(type(querier), inspect.isfunction)
        if not name.startswith("_")
    ]
    return sorted(found, key=lambda item: (_order(item[0]), item[0]))


def arguments(method: Callable[..., object], n: int) -> dict[str, object]:
    """A sample for each keyword parameter of method: odd n naive datetimes, even aware.

    A timestamp without a time zone takes a naive datetime on asyncpg, one
    with a zone an aware one: the rounds alternate.
    """
    hints = typing.get_type_hints(method)
    params = inspect.signature(method).parameters
    return {name: sample(hints[name], n, n % 2 == 1) for name in params if name != "self"}


def record(tally: Tally, name: str, method: Callable[..., object], result: object) -> None:
    """Holds result against method's return annotation."""
    tally.succeeded += 1
    tally.worked.add(name)
    annotation = typing.get_type_hints(method)["return"]
    values = _count(result)
    tally.values += values
    try:
        check(result, annotation, name)
    except AssertionError as err:
        tally.mismatches.extend([f"{name}: {err}"] * max(values, 1))


def call_sync(
    querier: object, tally: Tally, errors: tuple[type[BaseException], ...], prefix: str = ""
) -> None:
    """Calls every method of a sync querier ROUNDS times."""
    for round_ in range(ROUNDS):
        for name, method in methods(querier):
            tally.calls += 1
            where = prefix + name
            try:
                result = method(**arguments(method, tally.calls + round_))
            except errors as err:
                tally.failed[where] = str(err).splitlines()[0] if str(err) else type(err).__name__
                continue
            record(tally, where, method, result)


def call_async(
    opened: Callable[[], contextlib.AbstractAsyncContextManager[object]],
    tally: Tally,
    errors: tuple[type[BaseException], ...],
    prefix: str = "",
) -> None:
    """Calls every method of the async querier opened gives ROUNDS times, in one event loop."""

    async def run() -> None:
        async with opened() as querier:
            for round_ in range(ROUNDS):
                for name, method in methods(querier):
                    tally.calls += 1
                    where = prefix + name
                    try:
                        awaited = method(**arguments(method, tally.calls + round_))
                        assert inspect.isawaitable(awaited), where
                        result = await awaited
                    except errors as err:
                        message = str(err).splitlines()[0] if str(err) else type(err).__name__
                        tally.failed[where] = message
                        continue
                    record(tally, where, method, result)

    asyncio.run(run())


def query_modules(package: str, skip: tuple[str, ...] = ()) -> list[ModuleType]:
    """The query modules of a generated package: all but models, schema and skip."""
    root = importlib.import_module(package)
    names = [
        info.name
        for info in pkgutil.iter_modules(root.__path__)
        if info.name not in ("models", "schema") and not info.name.startswith(skip)
    ]
    return [importlib.import_module(f"{package}.{name}") for name in sorted(names)]
