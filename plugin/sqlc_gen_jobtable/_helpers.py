"""The helper functions and type aliases that generated code defines when it uses them."""

from ._mysql_types import MYSQL_HELPER_SOURCE

# The helper functions a generated query module defines when its code calls
# them, each as ruff format writes it.
_HELPER_SOURCE = r"""
def _bool_or_none(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _jsonb_or_none(value: JSONValue | None) -> psycopg.types.json.Jsonb | None:
    return None if value is None else psycopg.types.json.Jsonb(value)


def _jsonb_list(
    values: list[JSONValue] | list[JSONValue | None] | None,
) -> list[psycopg.types.json.Jsonb | None] | None:
    if values is None:
        return None
    return [None if v is None else psycopg.types.json.Jsonb(v) for v in values]


def _or_none(convert: Callable[[_V], _T], value: _V | None) -> _T | None:
    return None if value is None else convert(value)


def _pg_array(value: object) -> list[str | None]:
    # psycopg returns an array of a type it does not know in its text form,
    # {a,"b c",NULL}, and as a list once the type is registered.
    if isinstance(value, list):
        return [None if v is None else str(v) for v in value]
    if not isinstance(value, str) or value[:1] != "{" or value[-1:] != "}":
        raise TypeError(f"not a one-dimensional array: {value!r}")
    items: list[str | None] = []
    for quoted, bare in re.findall(r'"((?:[^"\\]|\\.)*)"|([^,{}]+)', value[1:-1]):
        if bare:
            items.append(None if bare == "NULL" else bare)
        else:
            items.append(re.sub(r"\\(.)", r"\1", quoted))
    return items


def _not_null(value: str | None) -> str:
    if value is None:
        raise TypeError("NULL in an array declared without NULLs")
    return value


def _text_array(kind: Callable[[str], _T], value: object) -> list[_T]:
    return [kind(_not_null(v)) for v in _pg_array(value)]


def _text_array_or_none(
    kind: Callable[[str], _T],
    value: object,
) -> list[_T | None] | None:
    if value is None:
        return None
    return [None if v is None else kind(v) for v in _pg_array(value)]


def _hstore(value: object) -> dict[str, str | None]:
    # psycopg returns hstore in its text form unless register_hstore ran.
    if isinstance(value, dict):
        return {str(k): None if v is None else str(v) for k, v in value.items()}
    if not isinstance(value, str):
        raise TypeError(f"not an hstore: {value!r}")
    quoted = r'"((?:[^"\\]|\\.)*)"'
    out: dict[str, str | None] = {}
    pair = quoted + r"\s*=>\s*(?:(NULL)|" + quoted + ")"
    for key, null, val in re.findall(pair, value):
        text = None if null else re.sub(r"\\(.)", r"\1", val)
        out[re.sub(r"\\(.)", r"\1", key)] = text
    return out


def _hstore_text(value: dict[str, str | None]) -> str:
    pairs = [_hstore_value(k) + "=>" + _hstore_value(v) for k, v in value.items()]
    return ", ".join(pairs)


def _hstore_value(value: str | None) -> str:
    if value is None:
        return "NULL"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _decimal(value: float | str) -> decimal.Decimal:
    # SQLite stores a NUMERIC as an integer or a float where it can.
    return decimal.Decimal(str(value))


def _decimal_text(value: decimal.Decimal | None) -> str | None:
    return None if value is None else str(value)


def _status_rows(status: str) -> int:
    # asyncpg returns the command's status, as in UPDATE 3 or INSERT 0 1:
    # the rows are its last word, which a command that counts none lacks.
    last = status.rpartition(" ")[2]
    return int(last) if last.isdecimal() else 0


def _all_null(values: tuple[object, ...]) -> bool:
    return all(v is None for v in values)


def _marks(count: int) -> str:
    # sqlc.slice: one placeholder per value; for none, an empty set, which
    # IN matches to nothing and NOT IN to everything.
    return ", ".join("?" * count) or "SELECT NULL WHERE 0"
"""
HELPERS = {
    block.split("(", 1)[0].removeprefix("def "): block.strip()
    for source in (_HELPER_SOURCE, MYSQL_HELPER_SOURCE)
    for block in source.strip().split("\n\n\ndef ")
    for block in ["def " + block.removeprefix("def ")]
}

# What each helper needs besides itself: other helpers, modules, type variables.
HELPER_NEEDS = {
    "_text_array": ("_pg_array", "_not_null"),
    "_text_array_or_none": ("_pg_array",),
    "_hstore_text": ("_hstore_value",),
}

# Type aliases the models module defines when some annotation uses them.
ALIASES = {
    "JSONValue": "",  # spelled by the models module, which knows its mode
    "Inet": (
        "Inet: TypeAlias = (\n"
        "    ipaddress.IPv4Address\n"
        "    | ipaddress.IPv6Address\n"
        "    | ipaddress.IPv4Interface\n"
        "    | ipaddress.IPv6Interface\n"
        ")"
    ),
}
