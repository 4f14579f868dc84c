"""No text of a handler's exception ever reaches the database or the API: a property.

Hypothesis draws secret strings and the shape of the exception that carries
them (plain, chained, grouped, in a sync or an async handler, before or after
a publish). The secret is never in the payload: the handler looks it up by
key. After each job, the test reads the whole database (on SQLite every byte
of the file, its WAL and shared memory; on PostgreSQL every row as text), the
Job, its JSON and the typed Job, and finds the secret in none of them.
"""

import asyncio
import json
import pathlib
from collections.abc import Iterator

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import jobtable

SHAPES = ["plain", "chained", "cause", "group", "repr", "sync", "after_publish"]


class Leaky(Exception):
    """An exception whose str and repr both quote the secret."""

    def __init__(self, secret: str) -> None:
        super().__init__(secret)
        self.secret = secret

    def __repr__(self) -> str:
        return f"Leaky(token={self.secret!r})"


def raise_with(secret: str, shape: str) -> None:
    """Raises an exception of shape that carries secret in its text."""
    if shape in ("plain", "sync", "after_publish"):
        raise RuntimeError(f"GET https://api.example/v1?token={secret} returned 500")
    if shape == "chained":
        try:
            raise KeyError(secret)
        except KeyError:
            raise ValueError("lookup failed") from None
    if shape == "cause":
        raise ConnectionError("upstream failed") from OSError(f"body: {secret}")
    if shape == "group":
        raise ExceptionGroup("several failed", [ValueError(secret), TypeError("x")])
    raise Leaky(secret)


def database_text(store: jobtable.Store, target: str) -> bytes:
    """Everything the database holds, as bytes to search."""
    if not target.startswith("postgresql"):
        folder = pathlib.Path(target).parent
        return b"\n".join(p.read_bytes() for p in sorted(folder.glob("jobs.db*")))
    import psycopg

    with psycopg.connect(target) as conn:
        rows = conn.execute(
            "SELECT jobs::text FROM jobs UNION ALL SELECT runners::text FROM runners"
        ).fetchall()
    return "\n".join(str(r[0]) for r in rows).encode()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every example of a test, as a worker process has."""
    new = asyncio.new_event_loop()
    yield new
    new.close()


secret_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]),
    min_size=6,
    max_size=40,
).map(lambda text: f"s3cr3t-{text}")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(secret=secret_texts, shape=st.sampled_from(SHAPES))
def test_exception_text_never_reaches_the_table_or_the_api(
    store: jobtable.Store,
    store_target: str,
    loop: asyncio.AbstractEventLoop,
    secret: str,
    shape: str,
) -> None:
    secrets: dict[int, str] = {}
    runner = jobtable.Runner(store, name="secrets")

    async def handle(ctx: jobtable.JobContext[str], key: int) -> str:
        if shape == "after_publish":
            await ctx.apublish("halfway")
        raise_with(secrets[key], shape)
        return "unreachable"

    def handle_sync(ctx: jobtable.JobContext[str], key: int) -> str:
        raise_with(secrets[key], shape)
        return "unreachable"

    kind = runner.register("leaky", handle_sync if shape == "sync" else handle)
    key = len(secrets)
    secrets[key] = secret
    job_id = kind.enqueue(key)
    assert loop.run_until_complete(runner.run_next()) == job_id

    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    stored = database_text(store, store_target)
    # As raw text (the error column) and as it would look inside JSON (the result).
    for needle in (secret.encode(), json.dumps(secret)[1:-1].encode()):
        assert needle not in stored
    assert secret not in repr(job)
    assert all(secret not in text for text in strings(json.loads(job.model_dump_json())))
    assert secret not in repr(kind.get(job_id))


def strings(value: object) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
