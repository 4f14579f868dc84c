"""A SQLite table as its catalog describes it: what the schema checks and upgrades compare."""

import sqlite3
from typing import NamedTuple

from jobtable._engines.tables import Table


class _CatalogRow(NamedTuple):
    what: str
    name: str
    type_: str
    not_null: int


# A table's columns and indexes in one read: sqlc cannot read SQLite's
# pragma functions, so this catalog read is written here, like the PRAGMAs.
_DESCRIBE_TABLE = (
    "SELECT 'column', name, type, \"notnull\" FROM pragma_table_info(?1) "
    "UNION ALL SELECT 'index', name, '', 0 FROM pragma_index_list(?1)"
)


def describe(conn: sqlite3.Connection, table: str) -> Table:
    """The table as conn's catalog describes it (no columns: it does not exist)."""
    return Table.of(_CatalogRow(*row) for row in conn.execute(_DESCRIBE_TABLE, (table,)))
