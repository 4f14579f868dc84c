"""SQLite's declared types as sqlite3 returns them, by spelling and by affinity."""

import re

from ._pytype import BYTES, FLOAT, INT, STR, PyType
from ._request import Column, RequestError, UntypedError

_SQLITE_BOOL = PyType("bool", decode="bool({})", decode_nullable="_bool_or_none({})")
_SQLITE_DECIMAL = PyType(
    "decimal.Decimal",
    decode="_decimal({})",
    encode="str({})",
    decode_nullable="_or_none(_decimal, {})",
    encode_nullable="_decimal_text({})",
)

# SQLite accepts any spelling and derives an affinity from it; these are the
# spellings in common use, each mapped to the type sqlite3 returns for it.
# sqlc joins the words of a type name (DOUBLE PRECISION arrives as
# DOUBLEPRECISION), so names are compared without spaces: see sqlite_name.
_SQLITE_SPELLINGS = {
    "integer": INT,
    "int": INT,
    "tinyint": INT,
    "smallint": INT,
    "mediumint": INT,
    "bigint": INT,
    "unsigned big int": INT,
    "int2": INT,
    "int4": INT,
    "int8": INT,
    "text": STR,
    "clob": STR,
    "character": STR,
    "varchar": STR,
    "varying character": STR,
    "character varying": STR,
    "nchar": STR,
    "native character": STR,
    "nvarchar": STR,
    "char": STR,
    "json": STR,
    "datetime": STR,
    "timestamp": STR,
    "date": STR,
    "time": STR,
    "uuid": STR,
    "real": FLOAT,
    "double": FLOAT,
    "double precision": FLOAT,
    "float": FLOAT,
    "blob": BYTES,
    "boolean": _SQLITE_BOOL,
    "bool": _SQLITE_BOOL,
    "numeric": _SQLITE_DECIMAL,
    "decimal": _SQLITE_DECIMAL,
}


def sqlite_name(name: str) -> str:
    # Drop a length or precision, as in VARCHAR(255) or DECIMAL(10, 5), the
    # quotes of a quoted name, and every space.
    name = re.sub(r"\(.*\)\s*$", "", name)
    return re.sub(r'[\s"`]+', "", name).lower()


_SQLITE = {sqlite_name(name): py for name, py in _SQLITE_SPELLINGS.items()}


def _sqlite_affinity(name: str) -> PyType | None:
    """Returns the type of a spelling not listed, by SQLite's rules of affinity.

    A name holding INT has INTEGER affinity; CHAR, CLOB or TEXT, TEXT; BLOB,
    BLOB; REAL, FLOA or DOUB, REAL (checked in that order, as SQLite does).
    Anything else has NUMERIC affinity, whose values may be integers, floats
    or text: no one type, so None.
    """
    upper = name.upper()
    if "INT" in upper:
        return INT
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return STR
    if "BLOB" in upper:
        return BYTES
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return FLOAT
    return None


def sqlite_base(column: Column, dims: int, where: str, owner: str) -> PyType | None:
    """Returns the type of a SQLite column by its declared type, None when it has none."""
    untyped = column.type_name.lower() == "any"
    base = _SQLITE.get(sqlite_name(column.type_name))
    if base is None and not untyped:
        base = _sqlite_affinity(column.type_name)
    if dims:
        raise RequestError(f"{where}: column {column.name!r}: SQLite has no arrays")
    if base is None and untyped and owner:
        raise UntypedError(
            f"{where}: column {column.name!r} is declared without a type, so "
            "SQLite stores values of any type in it: declare one, or map it "
            "with an override by column"
        )
    if base is None and untyped:
        raise UntypedError(
            f"{where}: column {column.name!r}: sqlc infers no type for this "
            "expression (SQLite's max(), min(), ifnull(), datetime() and the like "
            "return any type): CAST it, as in CAST(max(x) AS INTEGER) AS x, or map "
            "sqlc's type any with an override (db_type: any, py_type: ..., "
            "nullable: true)"
        )
    return base
