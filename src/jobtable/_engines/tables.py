"""A database's tables checked against the schema they should have, on every engine.

A schema version number says which tables a store should have; this
module checks that they do. Each engine describes a table with one catalog
read (its columns with their types and NOT NULL, and its index names), both
in the store and in a fresh creation of the current schema (the generated
``SCHEMA``), so the check follows every future schema version without a list
of its own. Extra tables, columns and indexes of the application's are left
alone.
"""

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from jobtable._errors import StoreError


class CatalogRow(Protocol):
    """One row of an engine's DescribeTable: a column (its type and NOT NULL) or an index."""

    @property
    def what(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def type_(self) -> str: ...
    @property
    def not_null(self) -> bool | int: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """A column's type, as the catalog spells it (compared without case), and its NOT NULL."""

    type: str
    not_null: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """A table as its catalog describes it; no columns means it does not exist."""

    columns: Mapping[str, Column]
    indexes: frozenset[str]

    @classmethod
    def of(cls, rows: Iterable[CatalogRow]) -> "Table":
        """The table that the rows of one DescribeTable read describe."""
        columns: dict[str, Column] = {}
        indexes: set[str] = set()
        for row in rows:
            if row.what == "column":
                columns[row.name] = Column(row.type_.upper(), bool(row.not_null))
            else:
                indexes.add(row.name)
        return cls(columns, frozenset(indexes))


def differences(want: Mapping[str, Table], have: Mapping[str, Table]) -> list[str]:
    """What have lacks or has otherwise than want, one phrase each (``jobs: missing column x``)."""
    found: list[str] = []
    for name, table in want.items():
        actual = have.get(name)
        if actual is None or not actual.columns:
            found.append(f"missing table {name}")
            continue
        for column, shape in table.columns.items():
            got = actual.columns.get(column)
            if got is None:
                found.append(f"{name}: missing column {column}")
                continue
            if got.type != shape.type:
                found.append(f"{name}: column {column} is {got.type}, want {shape.type}")
            if got.not_null != shape.not_null:
                null = "NOT NULL" if shape.not_null else "nullable"
                found.append(f"{name}: column {column} is not {null}")
        found.extend(
            f"{name}: missing index {index}" for index in sorted(table.indexes - actual.indexes)
        )
    return found


def check_tables(want: Mapping[str, Table], describe: Callable[[str], Table], where: str) -> None:
    """Raises StoreError naming every difference between the store's tables and want.

    describe reads one table of the store (one catalog query each); where
    begins the message (``cannot open PATH: ...``).
    """
    found = differences(want, {name: describe(name) for name in want})
    if found:
        raise StoreError(f"{where}: {'; '.join(found)}; the database is left as it is")


def tables_refusal(where: str, version: int, latest: int) -> str:
    """The start of the message for tables that differ, at open (version == latest) or upgrade."""
    if version == latest:
        return f"cannot open {where}: its tables differ from those of its schema version {version}"
    return (
        f"cannot open {where}: its tables, upgraded from schema version {version}, differ from "
        f"those of version {latest} (the upgrade was rolled back)"
    )
