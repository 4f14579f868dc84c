"""How the PostgreSQL engine connects: the connect timeout, each connection's set-up, errors.

Shared by the engine's pool (``jobtable._engines.postgres.engine``) and the
runner's connection on its event loop (``jobtable._engines.postgres.loop``).
"""

import os
from collections.abc import Callable

import psycopg
from psycopg import conninfo
from psycopg.rows import TupleRow

from jobtable._engines.postgres.pool import TextLoader, client_encoding
from jobtable._engines.postgres.schema import schema_version as stored_schema_version
from jobtable._errors import StoreError
from jobtable._values import redact_url, scrub
from jobtable.db.postgres import schema_version

_Connection = psycopg.Connection[TupleRow]

CONNECT_TIMEOUT = 10
"""Seconds a connection may take to open, unless the URL or PGCONNECT_TIMEOUT sets connect_timeout.

Without one, libpq waits for the operating system's TCP timeout (minutes)
on a host that accepts the connection and never answers.
"""


def with_connect_timeout(url: str, where: str) -> str:
    """Returns url with CONNECT_TIMEOUT added unless it or the environment sets one.

    Raises StoreError, naming the URL without its password, for a URL libpq
    cannot parse.
    """
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.Error as err:
        raise StoreError(f"cannot open {where}: malformed URL: {scrub(str(err), url)}") from None
    if "connect_timeout" in params or os.environ.get("PGCONNECT_TIMEOUT"):
        return url
    return conninfo.make_conninfo(url, connect_timeout=CONNECT_TIMEOUT)


def store_error(where: str, doing: str, err: psycopg.Error) -> StoreError:
    """Returns the StoreError for err; the one place psycopg's errors are translated.

    An OperationalError (a lost connection, a server shutting down, a
    deadlock, a full disk, a pool timeout) or an InterfaceError is transient:
    the same call may succeed later. Any other (bad data, a constraint, a
    statement the server refuses) is not.
    """
    transient = isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)
    return StoreError(f"postgres store {where}: {doing}: {err}", transient=transient)


def configure(durable: bool) -> Callable[[_Connection], None]:
    """Returns what prepares each new pooled connection.

    It sets the client encoding (``client_encoding``), loads text with
    ``TextLoader``, and without durable turns synchronous_commit off.
    """

    def prepare(conn: _Connection) -> None:
        q = schema_version.Querier(conn)
        q.set_client_encoding(encoding=client_encoding(conn))
        conn.adapters.register_loader("text", TextLoader)
        if not durable:
            q.disable_synchronous_commit()

    return prepare


def read_schema_version(url: str) -> int:
    """Returns the version of the jobtable schema at url, 0 when it has none; changes nothing.

    Raises StoreError as ``PostgresEngine.open`` does for a bad URL, a server
    it cannot reach, or a schema newer than this library's or unknown.
    """
    where = redact_url(url)
    url = with_connect_timeout(url, where)
    try:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            return stored_schema_version(schema_version.Querier(conn), where)
    except psycopg.Error as err:
        raise store_error(where, "open", err) from err
