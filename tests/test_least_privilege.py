"""Runners and web processes on PostgreSQL as a role with DML rights only.

The schema's owner migrates it and runs ``Store.grant``; everything else
runs as a role that may read and write jobtable's tables and nothing more:
no CREATE anywhere, no ownership (so no ANALYZE, no ALTER), not a superuser,
and no EXECUTE on the schema's functions but what the grant gives (the
owner revoked PUBLIC's, as a hardened database does). Each test gets its
own roles and schema (tests/pg_roles.py), dropped afterwards.
"""

import base64
import datetime
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pg_cluster
import psycopg
import pytest
from pg_roles import Roles, granted, owner_and_app
from pgbouncer_server import Bouncer
from psycopg import sql
from pydantic import BaseModel, SecretStr

import jobtable
from jobtable._engines.postgres import schema as postgres_schema

KEY1 = "k1:" + base64.b64encode(bytes(range(32))).decode()
KEY2 = "k2:" + base64.b64encode(bytes(range(1, 33))).decode()
RATE = jobtable.Rate(1000, per=datetime.timedelta(seconds=1))


class Login(BaseModel):
    user: str
    token: SecretStr


class Go(BaseModel):
    word: str


double = jobtable.Kind("double", int, int)
login = jobtable.Kind("login", Login, str)
once = jobtable.Kind("once", int, int, unique=jobtable.Unique())
fair = jobtable.Kind("fair", int, int, queue="limited", partition=jobtable.Partition(str))
ordered = jobtable.Kind("ordered", int, int, queue="limited", sequence=jobtable.Sequence())
stepped = jobtable.Kind("stepped", int, int)
tick = jobtable.Kind("tick", int, int)
waiter = jobtable.Kind("waiter", str, str)
GO = jobtable.Signal("go", Go)
INT_KINDS = (double, once, fair, ordered, tick)
ENDED = {jobtable.Status.SUCCEEDED, jobtable.Status.FAILED, jobtable.Status.CANCELLED}


@pytest.fixture
def roles(pg_server: str) -> Iterator[Roles]:
    """A migrated schema, its owner, and a role holding only what Store.grant gives."""
    with granted(pg_server) as made:
        yield made


def runner_of(store: jobtable.Store) -> jobtable.Runner:
    """A runner of every kind above, with flow control and a periodic schedule."""
    flow = [jobtable.Queue("limited", concurrency=2, partition_limit=1, rate=RATE)]
    runner = jobtable.Runner(store, queues={"default": 4, "limited": 2}, flow=flow)
    for kind in INT_KINDS:

        @runner.handler(kind)
        def run(ctx: jobtable.JobContext[int], payload: int) -> int:
            return 2 * payload

    @runner.handler(login)
    def run_login(ctx: jobtable.JobContext[str], payload: Login) -> str:
        return payload.user + ":" + payload.token.get_secret_value()

    @runner.handler(stepped)
    async def run_stepped(ctx: jobtable.JobContext[int], payload: int) -> int:
        return await ctx.step("plus one", lambda n: n + 1, payload, returns=int)

    @runner.handler(waiter)
    async def run_waiter(ctx: jobtable.JobContext[str], payload: str) -> str:
        await ctx.sleep_for(datetime.timedelta(milliseconds=100))
        return (await ctx.wait_for(GO, key=payload)).word

    runner.periodic(tick, every=datetime.timedelta(seconds=1), payload=7)
    return runner


def enqueue_everything(store: jobtable.Store, url: str) -> list[str]:
    """Enqueues one job of each way and feature, as the app role; returns their ids."""
    ids = [double.enqueue(store, 1), *double.enqueue_many(store, [2, 3, 4])]
    # In the application's own transaction (prepared statements off, for a pooler).
    with psycopg.connect(url, prepare_threshold=None) as conn:
        ids.append(double.enqueue(store, 5, conn=conn))
    first = once.enqueue(store, 6)
    assert once.enqueue(store, 6) == first  # the unique key held
    ids.append(first)
    ids += fair.enqueue_many(store, [1, 1, 2, 2])
    ids += ordered.enqueue_many(store, [1, 2, 3])
    ids.append(login.enqueue(store, Login(user="ann", token=SecretStr("hunter2"))))
    flow = jobtable.Workflow("least privilege")
    a = flow.add(double, 10)
    b = flow.add(double, a, after=[a])
    flow.enqueue(store)
    return [*ids, a.id, b.id]


async def run_everything(
    url: str, wait_until: Callable[..., Awaitable[None]], **opening: Any
) -> None:
    """Runs every feature through the store at url, opened with opening (the app role's)."""
    store = jobtable.Store.open(url, migrate=False, secret_keys=KEY1, **opening)
    try:
        store.pause("limited")
        store.set_limits("limited", concurrency=1)
        store.resume("limited")
        store.clear_limits("limited")
        runner = runner_of(store)
        await runner.start()
        try:
            ids = enqueue_everything(store, url)
            assert await double.aenqueue_and_wait(store, 21, wait_timeout=60) == 42
            assert await stepped.aenqueue_and_wait(store, 1, wait_timeout=60) == 2
            # A durable sleep, then a wait for a signal: the signals and job_waits tables.
            sleeper = waiter.enqueue(store, "least")
            await wait_until(lambda: store.signal_wait(sleeper) is not None, limit=60)
            assert store.signal(GO, "least", Go(word="go")) == 1
            ids.append(sleeper)
            await wait_until(lambda: all(store.get(i).status in ENDED for i in ids), limit=60)
            ticks = store.list_jobs(kind="tick")
        finally:
            runner.stop()
            await runner.wait()
        assert {store.get(job_id).status for job_id in ids} == {jobtable.Status.SUCCEEDED}
        assert store.get(ids[-1]).result == "go"
        assert store.get(ids[-2]).result == 40
        assert ticks
        assert store.stats().queues
        assert store.health().queues == []
        assert store.workflows()
    finally:
        store.close()
    with jobtable.Store.open(url, secret_keys=f"{KEY2},{KEY1}", **opening) as rotating:
        assert rotating.rotate_secrets() == 1
        assert rotating.prune(datetime.timedelta(0)) > 0


async def test_every_feature_runs_as_a_role_with_dml_rights_only(
    roles: Roles, wait_until: Callable[..., Awaitable[None]], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="jobtable"):
        await run_everything(roles.app_url, wait_until)
    # A right missing for the runner's own upkeep (its heartbeat, its prune)
    # is logged, not raised: none may be.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.slow
async def test_every_feature_runs_as_that_role_through_pgbouncer(
    roles: Roles, pgbouncer: Bouncer, wait_until: Callable[..., Awaitable[None]]
) -> None:
    pooled = pgbouncer.add_schema(roles.schema, roles.schema, user=roles.app)
    try:
        await run_everything(pooled, wait_until, pooled=True, listen_url=roles.app_url)
    finally:
        pgbouncer.remove_schema(roles.schema)


def test_the_role_may_create_and_analyze_nothing(roles: Roles) -> None:
    # What makes the test above mean something: the role holds DML only.
    refused: list[sql.SQL | sql.Composed] = [
        sql.SQL("CREATE TABLE {}.extra (n int)").format(sql.Identifier(roles.schema)),
        sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(roles.schema + "_extra")),
        sql.SQL("ALTER TABLE jobs ADD COLUMN extra int"),
        sql.SQL("CREATE INDEX extra ON jobs (kind)"),
        sql.SQL("TRUNCATE jobs"),
    ]
    with psycopg.connect(roles.app_url) as conn, conn.transaction(force_rollback=True):
        for statement in refused:  # each in a savepoint, all rolled back: nothing is left
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(statement)
        # ANALYZE by a role that may not is skipped with a warning, not an error.
        rights = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, pg_has_role(c.relowner, 'USAGE')"
            " FROM pg_roles, pg_class AS c"
            " WHERE rolname = current_user AND c.oid = 'jobs'::regclass"
        ).fetchone()
    assert rights == (False, False, False, False)


def test_grants_names_every_table_and_function_the_schema_has(roles: Roles) -> None:
    statements = " ".join(jobtable.Store.grants(roles.owner_url, roles.app))
    with psycopg.connect(roles.owner_url) as conn:
        names = conn.execute(
            "SELECT c.relname FROM pg_class AS c"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            " UNION ALL SELECT p.proname FROM pg_proc AS p"
            " WHERE p.pronamespace = current_schema()::regnamespace"
        ).fetchall()
    assert len(names) > 10
    for (name,) in names:
        assert f"{roles.schema}.{name}" in statements, name


def test_grants_prints_without_granting_and_grant_twice_changes_nothing(
    pg_server: str,
) -> None:
    with owner_and_app(pg_server) as made:
        jobtable.Store.migrate(made.owner_url)
        printed = jobtable.Store.grants(made.owner_url, made.app)
        for migrate in (False, True):
            with pytest.raises(jobtable.StoreError, match="jobtable grant ROLE"):
                jobtable.Store.open(made.app_url, migrate=migrate)
        assert jobtable.Store.grant(made.owner_url, made.app) == printed
        assert jobtable.Store.grant(made.owner_url, made.app) == printed
        jobtable.Store.open(made.app_url, migrate=False).close()
    assert printed[0] == f"GRANT USAGE ON SCHEMA {made.schema} TO {made.app}"
    assert not any("CREATE" in s or "ALL" in s or "ANALYZE" in s for s in printed)


def test_a_role_without_rights_opening_a_schema_to_create_is_told_to_migrate_as_owner(
    pg_server: str,
) -> None:
    with owner_and_app(pg_server) as made:
        with psycopg.connect(made.owner_url, autocommit=True) as conn:
            schema = sql.Identifier(made.schema)
            conn.execute(
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, sql.Identifier(made.app))
            )
        with pytest.raises(jobtable.StoreError, match="jobtable migrate") as refused:
            jobtable.Store.open(made.app_url)
        assert "owner" in str(refused.value)
        assert jobtable.Store.schema_state(made.owner_url).version == 0


def test_grant_refuses_what_it_cannot_grant(pg_server: str, tmp_path: object) -> None:
    with owner_and_app(pg_server) as made:
        with pytest.raises(jobtable.StoreError, match="jobtable migrate"):
            jobtable.Store.grants(made.owner_url, made.app)
        jobtable.Store.migrate(made.owner_url)
        with pytest.raises(jobtable.StoreError, match="does not exist"):
            jobtable.Store.grant(made.owner_url, made.app + "_missing")
        with pytest.raises(jobtable.StoreError):
            jobtable.Store.grant(made.app_url, made.app)  # not the owner
    with pytest.raises(ValueError, match="63 bytes"):
        jobtable.Store.grants(made.owner_url, "r" * 64)
    with pytest.raises(ValueError, match="SQLite"):
        jobtable.Store.grants("jobs.db", "app")


def test_grant_as_a_role_holding_the_rights_without_their_grant_option_is_refused(
    roles: Roles,
) -> None:
    # PostgreSQL lets such a GRANT succeed, granting nothing, with a warning:
    # run with the application's URL by mistake, it would look done.
    with pytest.raises(jobtable.StoreError, match=r"no privileges were granted.*owner.s URL"):
        jobtable.Store.grant(roles.app_url, roles.owner)
    with pytest.raises(jobtable.StoreError, match="no privileges were granted"):
        jobtable.Store.grant(roles.app_url, roles.app)
    assert jobtable.Store.grant(roles.owner_url, roles.app)


def test_grants_quote_the_role_as_an_identifier(roles: Roles) -> None:
    statements = jobtable.Store.grants(roles.owner_url, 'App "Role"; DROP TABLE jobs')
    assert all(s.endswith(' TO "App ""Role""; DROP TABLE jobs"') for s in statements)


@pytest.mark.slow
def test_a_role_without_the_temporary_right_is_told_the_grant_it_needs(
    throwaway_pg: pg_cluster.Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PUBLIC's TEMPORARY right is revoked on a cluster of the test's own, not the shared one.
    monkeypatch.setattr(postgres_schema, "_REFERENCES", {})  # built once per process
    with granted(throwaway_pg.url) as made:
        with psycopg.connect(throwaway_pg.url, autocommit=True) as conn:
            conn.execute("REVOKE TEMPORARY ON DATABASE postgres FROM PUBLIC")
        with pytest.raises(jobtable.StoreError) as refused:
            jobtable.Store.open(made.app_url, migrate=False)
        with psycopg.connect(throwaway_pg.url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("GRANT TEMPORARY ON DATABASE postgres TO {}").format(
                    sql.Identifier(made.app)
                )
            )
        jobtable.Store.open(made.app_url, migrate=False).close()
    assert f"GRANT TEMPORARY ON DATABASE postgres TO {made.app}" in str(refused.value)
