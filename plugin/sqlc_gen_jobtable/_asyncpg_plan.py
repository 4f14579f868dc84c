"""What the asyncpg driver plans differently: the commands it refuses and its SQL.

asyncpg binds sqlc's ``$1``, ``$2`` placeholders as they are, positionally,
so a query's SQL is sqlc's text unchanged.
"""

from ._request import RequestError

# Why asyncpg cannot run a command; the others it runs as psycopg does.
_REFUSED = {
    ":execlastid": (
        "PostgreSQL has no last insert id (a table may have no serial, or "
        "several): add RETURNING id to the INSERT and use :one"
    ),
    ":batchone": (
        "asyncpg's executemany returns no rows and its fetchmany returns the "
        "rows of every statement in one list, so a statement's own rows cannot "
        "be told apart: call a :one query in a loop, in a transaction"
    ),
    ":batchmany": (
        "asyncpg's executemany returns no rows and its fetchmany returns the "
        "rows of every statement in one list, so a statement's own rows cannot "
        "be told apart: call a :many query in a loop, in a transaction"
    ),
}


def check_asyncpg_command(command: str, where: str) -> None:
    """Raises RequestError, naming where and the cause, when asyncpg cannot run command."""
    cause = _REFUSED.get(command)
    if cause is not None:
        raise RequestError(f"{where}: {command} is not supported with driver asyncpg: {cause}")
