"""MySQL's column types as PyMySQL returns them, and the SET columns of a schema.

sqlc's MySQL catalog names a type by its base name (``tinyint``, ``varchar``)
with the declared length beside it, says ``unsigned`` apart, and turns both
ENUM and SET columns into an enum named ``table_column``: which of the two a
column is, only the schema text tells (see ``set_types``).
"""

import re

from ._pytype import BYTES, FLOAT, INT, STR, PyType
from ._request import Column, Enum

_BOOL = PyType("bool", decode="bool({})", decode_nullable="_bool_or_none({})")
# A SET value: PyMySQL returns its members joined by commas ("" for none),
# and a parameter goes the same way; members hold no comma.
_SET = PyType(
    "frozenset[str]",
    decode="_mysql_set({})",
    encode="_mysql_set_text({})",
    decode_nullable="_or_none(_mysql_set, {})",
    encode_nullable="_or_none(_mysql_set_text, {})",
)

_MYSQL = {
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "integer", "bigint"), INT),
    # YEAR is returned as an int (2024).
    "year": INT,
    "bool": _BOOL,
    "boolean": _BOOL,
    "decimal": PyType("decimal.Decimal"),
    "numeric": PyType("decimal.Decimal"),
    "dec": PyType("decimal.Decimal"),
    "fixed": PyType("decimal.Decimal"),
    "float": FLOAT,
    "double": FLOAT,
    "real": FLOAT,
    "double precision": FLOAT,
    **dict.fromkeys(
        (
            "char",
            "varchar",
            "nchar",
            "nvarchar",
            "tinytext",
            "text",
            "mediumtext",
            "longtext",
            # PyMySQL returns JSON as its text: json.loads it where wanted.
            "json",
        ),
        STR,
    ),
    **dict.fromkeys(
        (
            "binary",
            "varbinary",
            "tinyblob",
            "blob",
            "mediumblob",
            "longblob",
            # BIT(n) arrives as its bytes, big-endian.
            "bit",
        ),
        BYTES,
    ),
    "date": PyType("datetime.date"),
    "datetime": PyType("datetime.datetime"),
    "timestamp": PyType("datetime.datetime"),
    # TIME is a duration, up to 838 hours either way, not a time of day.
    "time": PyType("datetime.timedelta"),
}

# The helpers the MySQL code calls, in the form of _helpers' source.
MYSQL_HELPER_SOURCE = r"""
def _mysql_set(value: str) -> frozenset[str]:
    # A SET arrives as its members joined by commas, "" for the empty set.
    return frozenset(value.split(",")) if value else frozenset()


def _mysql_set_text(value: frozenset[str]) -> str:
    return ",".join(sorted(value))


def _mysql_marks(count: int) -> str:
    # sqlc.slice: one placeholder per value; for none, an empty set, which
    # IN matches to nothing and NOT IN to everything.
    return ", ".join(["%s"] * count) or "SELECT NULL FROM DUAL WHERE FALSE"
"""


def mysql_base(
    column: Column, enums: dict[tuple[str, str], str], sets: frozenset[str]
) -> PyType | None:
    """Returns the Python type of column's type, not yet nullable; None when it has none.

    A TINYINT is a bool where sqlc says it is one: declared BOOL, BOOLEAN or
    TINYINT(1), which sqlc reports as tinyint of length 1.
    """
    name = column.type_name.lower()
    if name in sets:
        return _SET
    enum = enums.get(("", name))
    if enum is not None:
        return PyType(
            f"models.{enum}",
            decode=f"models.{enum}({{}})",
            decode_nullable=f"_or_none(models.{enum}, {{}})",
        )
    if name == "tinyint" and column.length == 1:
        return _BOOL
    return _MYSQL.get(name)


def _table_bodies(schema: str, table: str) -> list[str]:
    """Returns the text after each CREATE TABLE or ALTER TABLE of table in schema."""
    quoted = rf"(?:`{re.escape(table)}`|{re.escape(table)}\b)"
    head = re.compile(
        rf"\b(?:CREATE\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?|ALTER\s+TABLE\s+)"
        rf"(?:\w+\.|`\w+`\.)?{quoted}",
        re.IGNORECASE,
    )
    bodies = []
    for match in head.finditer(schema):
        end = schema.find(";", match.end())
        bodies.append(schema[match.end() : end if end >= 0 else len(schema)])
    return bodies


def set_types(schema: str, enums: tuple[Enum, ...], tables: tuple[str, ...]) -> frozenset[str]:
    """Returns the names of the enums of sqlc's catalog that are SET columns in schema.

    sqlc names the enum of a column ``table_column``; the column is a SET
    where its table's definition declares it ``column SET(``.
    """
    found: set[str] = set()
    for enum in enums:
        for table in tables:
            prefix = table.lower() + "_"
            if not enum.name.lower().startswith(prefix):
                continue
            column = enum.name[len(prefix) :]
            declared = re.compile(
                rf"(?:`{re.escape(column)}`|\b{re.escape(column)})\s+SET\s*\(", re.IGNORECASE
            )
            if any(declared.search(body) for body in _table_bodies(schema, table)):
                found.add(enum.name.lower())
    return frozenset(found)
