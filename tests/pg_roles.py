"""A least-privilege set-up on the test server: a schema's owner role, and a role with DML only.

Roles are the cluster's, not a database's: each gets a unique name
(``jobtable_test_`` and random hex digits), and the set-up drops both, with
the schema and everything in it, however the test ended.
"""

import contextlib
import dataclasses
import secrets
import urllib.parse
from collections.abc import Iterator

import psycopg
from psycopg import sql

import jobtable


@dataclasses.dataclass(frozen=True)
class Roles:
    """The URLs of one schema as its owner and as a role that holds only DML rights on it."""

    schema: str
    owner: str
    app: str
    owner_url: str
    app_url: str


def as_user(server: str, user: str, schema: str) -> str:
    """server's URL, logging in as user, its connections using schema."""
    parts = urllib.parse.urlsplit(server)
    host = parts.netloc.rpartition("@")[2]
    query = urllib.parse.urlencode({"options": f"-csearch_path={schema}"})
    return urllib.parse.urlunsplit((parts.scheme, f"{user}@{host}", parts.path, query, ""))


@contextlib.contextmanager
def owner_and_app(server: str) -> Iterator[Roles]:
    """Makes two login roles and a schema the first owns, empty; drops them all on exit.

    server's user must be able to create roles (the test server's is a
    superuser). Neither role may create anything in the database: the owner
    may create in its schema only, and the app role holds nothing until
    granted.
    """
    tag = secrets.token_hex(5)
    owner, app, schema = (
        f"jobtable_test_owner_{tag}",
        f"jobtable_test_app_{tag}",
        f"jobtable_test_{tag}",
    )
    ident = sql.Identifier
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT").format(ident(owner)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT").format(ident(app)))
        conn.execute(
            sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(ident(schema), ident(owner))
        )
    try:
        yield Roles(
            schema, owner, app, as_user(server, owner, schema), as_user(server, app, schema)
        )
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(ident(schema)))
            for role in (app, owner):
                conn.execute(sql.SQL("DROP OWNED BY {}").format(ident(role)))
                conn.execute(sql.SQL("DROP ROLE {}").format(ident(role)))


@contextlib.contextmanager
def granted(server: str) -> Iterator[Roles]:
    """A jobtable schema its owner migrated, and an app role given only ``Store.grant``'s rights.

    The owner first revokes from PUBLIC the EXECUTE right on the schema's
    functions, as a hardened database does, so that only the grant gives
    the app role what it uses. Dropped on exit, as ``owner_and_app``.
    """
    with owner_and_app(server) as roles:
        jobtable.Store.migrate(roles.owner_url)
        with psycopg.connect(roles.owner_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {} FROM PUBLIC").format(
                    sql.Identifier(roles.schema)
                )
            )
        jobtable.Store.grant(roles.owner_url, roles.app)
        yield roles
