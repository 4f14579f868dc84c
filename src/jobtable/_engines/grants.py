"""Which engine answers ``Store.grants``: PostgreSQL's roles; SQLite has none."""

import os

from jobtable._engines.target import _need_psycopg, parse_target

_MAX_NAME_BYTES = 63
"""PostgreSQL's longest identifier: a longer one is cut short, which could name another role."""


def check_role(role: object) -> str:
    """Returns role when it can name a PostgreSQL role; ValueError naming what is wrong."""
    if not isinstance(role, str):
        raise TypeError(f"grant: role is {type(role).__name__}, want the role's name as a str")
    if not role or "\x00" in role or len(role.encode()) > _MAX_NAME_BYTES:
        raise ValueError(
            f"grant: role {role!r} cannot name a PostgreSQL role: want 1 to "
            f"{_MAX_NAME_BYTES} bytes, no NUL"
        )
    return role


def role_grants(target: str | os.PathLike[str], role: str, *, apply: bool) -> list[str]:
    """The statements that give role DML rights on the store at target; run too with apply.

    Raises TypeError or ValueError for a role that cannot name one, ValueError
    for a SQLite target, whose file's permissions are its
    only access control, and as ``postgres.grants.role_grants`` does.
    """
    check_role(role)
    engine, where = parse_target(target)
    if engine != "postgres":
        raise ValueError(
            f"grant: {os.fspath(where)!r} is a SQLite file, which has no roles: whoever may "
            "write the file (and its folder) may use the store; grants are for PostgreSQL"
        )
    url = os.fspath(where)
    _need_psycopg(url)
    from jobtable._engines.postgres.grants import role_grants as postgres_grants

    return postgres_grants(url, role, apply=apply)
