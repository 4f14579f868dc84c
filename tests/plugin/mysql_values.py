"""What the MySQL runtime tests share: connections, a scratch database, the values of a kind.

The tests run the golden package of the mysql_features case (sync on
PyMySQL, async on asyncmy) on the session's throwaway MariaDB server.
"""

import contextlib
import dataclasses
import datetime
import decimal
import secrets
import urllib.parse
from collections.abc import Iterator
from typing import Any, TypeAlias

# plugin_harness first: it puts the golden packages on the path.
import plugin_harness  # noqa: F401
import pymysql
import pymysql.cursors
from mysql_features import models, schema

# Quoted: PyMySQL's Connection is generic in its stubs only.
Conn: TypeAlias = "pymysql.Connection[pymysql.cursors.Cursor]"

AT = datetime.datetime(2024, 2, 29, 23, 59, 58)


def connect(url: str, database: str | None = None) -> Conn:
    """A connection to the server at url, in database when given."""
    parts = urllib.parse.urlsplit(url)
    return pymysql.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user="root",
        database=database,
        client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
    )


@contextlib.contextmanager
def scratch_database(url: str) -> Iterator[str]:
    """A database of its own on the server at url, made from the case's schema; dropped after."""
    name = f"plugin_test_{secrets.token_hex(6)}"
    with connect(url) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        try:
            with connect(url, name) as c, c.cursor() as setup:
                setup.execute(schema.SCHEMA)
                while setup.nextset():
                    pass
            yield name
        finally:
            cur.execute(f"DROP DATABASE {name}")


FULL = models.Kind(
    id=0,
    flag=True,
    maybe=False,
    tiny=-128,
    tiny_u=255,
    small=-32768,
    medium=16777215,
    regular=-2147483648,
    big=9223372036854775807,
    amount=decimal.Decimal("12345678.91"),
    ratio=0.5,
    dbl=1e300,
    name="naïve — 名前 🎉",
    code="abc",
    body="it's 100% ?",
    data=b"\x00\xff\x00",
    bin=b"\x01\x02\x03\x04",
    vbin=b"\x00",
    day=datetime.date(2024, 2, 29),
    at=AT,
    ts=datetime.datetime(2038, 1, 19, 3, 14, 7),
    dur=datetime.timedelta(hours=-838, minutes=-59, seconds=-59),
    yr=2155,
    doc='{"a": [1, null]}',
    mood=models.KindsMood.SO_SO,
    tags=frozenset({"red", "blue"}),
    bits=b"\xa5",
)
NULLS = dataclasses.replace(
    FULL,
    maybe=None,
    tiny_u=None,
    medium=None,
    big=None,
    ratio=None,
    code=None,
    body=None,
    data=None,
    bin=None,
    vbin=None,
    day=None,
    ts=None,
    dur=None,
    yr=None,
    doc=None,
    tags=None,
    bits=None,
)


def kind_args(k: models.Kind) -> dict[str, Any]:
    """The arguments of create_kind that insert k, its id aside."""
    return {f.name: getattr(k, f.name) for f in dataclasses.fields(k) if f.name != "id"}
