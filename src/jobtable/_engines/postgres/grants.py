"""The rights a role needs to use a PostgreSQL store it does not own: DML on its tables.

The schema's owner creates and upgrades it (``jobtable migrate``); runners,
web processes, the CLI and the dashboard may run as another role holding
only what ``role_grants`` lists. The statements come from the generated
``grants`` queries, which quote every name.
"""

import psycopg

from jobtable._engines.postgres.engine import _connection_url, _store_error
from jobtable._engines.postgres.schema import SCHEMA_VERSION, schema_version
from jobtable._errors import StoreError
from jobtable._values import redact_url
from jobtable.db.postgres import grants
from jobtable.db.postgres import schema_version as schema_queries

NOT_GRANTED = "01007"
"""The SQLSTATE of PostgreSQL's warning that a GRANT granted nothing (or not all)."""


def _apply(conn: psycopg.Connection[object], statements: list[str], where: str) -> None:
    """Runs statements on conn, in its open transaction; raises StoreError if one granted nothing.

    A user that holds a right without its grant option (the application's
    role, say, rather than the owner) is not refused by PostgreSQL: the
    GRANT succeeds with a warning and grants nothing. That warning raises
    here instead, so the caller's transaction rolls back and the user is
    told to run it as the owner.
    """
    refused: list[str] = []
    conn.add_notice_handler(
        lambda notice: (
            refused.append(notice.message_primary or "") if notice.sqlstate == NOT_GRANTED else None
        )
    )
    for statement in statements:
        conn.execute(statement)
        if refused:
            raise StoreError(
                f"cannot grant on {where}: {refused[0]}, since its user may not grant "
                "these rights (it does not own the tables); run `jobtable grant --apply` "
                "with the schema's owner's URL"
            )


def role_grants(url: str, role: str, *, apply: bool) -> list[str]:
    """Returns the statements that give role DML rights on the jobtable tables at url.

    With apply, runs them too, in one transaction, as url's user (the
    schema's owner, or a role that may grant on its tables). Raises
    StoreError, changing nothing, for a schema that is missing or not at
    this jobtable's version (``jobtable migrate`` first: the statements name
    the latest version's tables), a role that does not exist, or a user that
    may not grant; and as ``Store.open`` does for a URL it cannot use.
    """
    where = redact_url(url)
    conninfo = _connection_url(url, where)
    try:
        with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
            version = schema_version(schema_queries.Querier(conn), where)
            if version != SCHEMA_VERSION:
                raise StoreError(
                    f"cannot grant on {where}: its jobtable schema is at version {version}, "
                    f"not {SCHEMA_VERSION}; run `jobtable migrate` (as the schema's owner) first"
                )
            statements = [row.statement for row in grants.Querier(conn).role_grants(grantee=role)]
            if apply:
                _apply(conn, statements, where)
            return statements
    except psycopg.Error as err:
        raise _store_error(where, "grant", err) from err
