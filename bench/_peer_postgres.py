"""What the PostgreSQL peers share: a throwaway database each, emptied between runs."""

import contextlib
import secrets
import urllib.parse

from bench import _db
from bench._peer_queue import Queue


class PeerDatabase:
    """A throwaway database on the server, dropped by close."""

    def __init__(self, url: str, prefix: str) -> None:
        import psycopg

        self.name = f"jobtable_peer_{prefix}_{secrets.token_hex(4)}"
        self._server = url
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')
        parts = urllib.parse.urlsplit(url)
        self.url = urllib.parse.urlunsplit(parts._replace(path=f"/{self.name}"))
        self.conn = psycopg.connect(self.url, autocommit=True)

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        _db.drop_anew(self._server, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class OnPostgres(Queue):
    """A peer on a database of its own, emptied with clear_sql."""

    engine = "postgres"
    db: PeerDatabase
    clear_sql: str

    def clear(self) -> None:
        self.db.execute(self.clear_sql)

    def close(self) -> None:
        self.db.close()
