"""Secrets in payloads and results: encrypted at rest, whole for the handler, masked elsewhere.

A planted secret goes in as a SecretStr or SecretBytes at several depths.
The tests read every byte the database holds (on SQLite the file and its
WAL, on PostgreSQL every table of the test's schema as text) and find it in
none, while the handler receives it intact; keys rotate across a restart.
"""

import asyncio
import base64
import collections
import logging
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

import jobtable
from jobtable._operator.admin import Reseal, Resealed
from jobtable._secrets import new_key
from jobtable.testing import drain

PLANTED = "planted-token-9c41e7"
PLANTED_BYTES = b"planted-bytes-5d02aa"
MASK = "**********"

# Fixed, not random: pytest-xdist's workers must collect the same parameters.
K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()
K2 = "k2:" + base64.b64encode(bytes(range(32, 64))).decode()
K16 = "k16:" + base64.b64encode(bytes(range(16))).decode()


class Header(pydantic.BaseModel):
    name: str
    value: pydantic.SecretBytes


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr
    headers: list[Header] = []
    fallback: pydantic.SecretStr | None = None


class Issued(pydantic.BaseModel):
    account: str
    key: pydantic.SecretStr


calls = jobtable.Kind("call", Call, str)
issue = jobtable.Kind("issue", str, Issued)


def planted_call(url: str = "https://api.example/v1") -> Call:
    return Call(
        url=url,
        api_token=pydantic.SecretStr(PLANTED),
        headers=[Header(name="x-key", value=pydantic.SecretBytes(PLANTED_BYTES))],
        fallback=pydantic.SecretStr(PLANTED + "-fallback"),
    )


def _drained(runner: jobtable.Runner) -> list[jobtable.JobRecord]:
    """The records drain ran: every job of the runner's queues, retries included."""
    return asyncio.run(drain(runner))


def _drained_once(runner: jobtable.Runner) -> None:
    """Runs each ready job once: a failed attempt's retry waits."""
    asyncio.run(drain(runner, retries=False))


def database_bytes(target: str) -> bytes:
    """Every byte the database holds: the SQLite file and its WAL, or every PostgreSQL table."""
    if not target.startswith("postgresql"):
        path = pathlib.Path(target)
        files = [path, path.with_name(path.name + "-wal")]
        return b"\n".join(p.read_bytes() for p in files if p.exists())
    import psycopg

    with psycopg.connect(target) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        texts = [
            str(row[0])
            for (table,) in tables
            for row in conn.execute(f'SELECT t::text FROM "{table}" AS t').fetchall()
        ]
    assert texts, "the dump found no rows: it reads the wrong schema"
    return "\n".join(texts).encode()


def assert_no_secret(data: bytes) -> None:
    for needle in (PLANTED.encode(), PLANTED_BYTES, MASK.encode()):
        assert needle not in data


def call_runner(store: jobtable.Store, received: list[Call]) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(calls)
    async def call(ctx: jobtable.JobContext[str], payload: Call) -> str:
        received.append(payload)
        return "done"

    return runner


def test_the_handler_receives_the_secrets_the_database_holds_none(
    store_target: str,
) -> None:
    received: list[Call] = []
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, planted_call())
        assert_no_secret(database_bytes(store_target))
        runner = call_runner(store, received)
        [record] = _drained(runner)
        assert record.status is jobtable.Status.SUCCEEDED, record.error
    [payload] = received
    assert payload.api_token.get_secret_value() == PLANTED
    assert payload.headers[0].value.get_secret_value() == PLANTED_BYTES
    assert payload.fallback is not None
    assert payload.fallback.get_secret_value() == PLANTED + "-fallback"
    assert_no_secret(database_bytes(store_target))
    assert record.id == job_id


def test_a_result_with_a_secret_is_encrypted_and_kind_get_returns_it(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(issue)
        async def make(ctx: jobtable.JobContext[Issued], account: str) -> Issued:
            await ctx.apublish(Issued(account=account, key=pydantic.SecretStr(PLANTED + "-half")))
            return Issued(account=account, key=pydantic.SecretStr(PLANTED))

        job_id = issue.enqueue(store, "acct-1")
        _drained(runner)
        typed = issue.get(store, job_id)
        assert typed.result is not None
        assert typed.result.key.get_secret_value() == PLANTED
        assert store.get(job_id).result == {"account": "acct-1", "key": MASK}
        assert PLANTED not in store.get(job_id).model_dump_json()
    assert_no_secret(database_bytes(store_target))


def test_every_reader_but_the_handler_sees_the_mask(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as keyed:
        job_id = calls.enqueue(keyed, planted_call())
        record = keyed.inspect(job_id)
        [listed] = keyed.list_jobs(kind="call")
    want = planted_call().model_dump(mode="json")
    assert record.payload == want == listed.payload
    assert isinstance(record.payload, dict)
    assert record.payload["api_token"] == MASK
    assert PLANTED not in record.model_dump_json()


def test_without_a_key_the_enqueue_is_refused_saying_how_and_stores_nothing(
    store: jobtable.Store,
) -> None:
    with pytest.raises(jobtable.PayloadError) as caught:
        calls.enqueue(store, planted_call())
    message = str(caught.value)
    assert "'call'" in message
    assert "JOBTABLE_SECRET_KEYS" in message
    assert "secret_keys=" in message
    assert PLANTED not in message
    assert store.list_jobs() == []


def test_the_key_can_come_from_the_environment(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBTABLE_SECRET_KEYS", f"{K2}, {K1}")
    with jobtable.Store.open(store_target) as store:
        assert store.secret_keys is not None
        assert store.secret_keys.ids == ("k2", "k1")
        calls.enqueue(store, planted_call())
    with jobtable.Store.open(store_target, secret_keys="") as store:
        assert store.secret_keys is None


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ("k1:not*base64", "'k1'"),
        (f"k1:{base64.b64encode(b'short').decode()}", "'k1' is 5 bytes"),
        ("no key here", "ID:KEY"),
        (f"{K1},{K1}", "'k1' is given twice"),
        (K16, "'k16' is 16 bytes, and the first key, which encrypts, must be 32"),
        (f"k1:{base64.b64encode(bytes(24)).decode()}", "'k1' is 24 bytes, and the first"),
    ],
    ids=["not base64", "short", "no id", "twice", "16 bytes", "24 bytes"],
)
def test_a_bad_key_is_refused_naming_its_id_never_the_key(
    tmp_path: pathlib.Path, keys: str, named: str
) -> None:
    with pytest.raises(ValueError, match="secret") as caught:
        jobtable.Store.open(tmp_path / "jobs.db", secret_keys=keys)
    assert named in str(caught.value)
    assert K1.partition(":")[2] not in str(caught.value)
    assert not (tmp_path / "jobs.db").exists()


def test_a_shorter_key_only_decrypts_kept_after_a_32_byte_key_for_rotation(
    tmp_path: pathlib.Path,
) -> None:
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=f"{K1},{K16}") as store:
        assert store.secret_keys is not None
        assert (store.secret_keys.current, store.secret_keys.ids) == ("k1", ("k1", "k16"))


def _run_one(runner: jobtable.Runner) -> str | None:
    return asyncio.run(runner.run_next())


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        (K2, 'secret key "k1" is not configured'),
        ("", 'secret key "k1" is not configured'),
        (new_key("k1"), 'secret key "k1" does not decrypt a stored secret'),
    ],
    ids=["another key", "no key", "another key under the id"],
)
def test_a_runner_that_cannot_decrypt_a_job_puts_it_back_without_using_an_attempt(
    store_target: str, keys: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jobtable")
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, planted_call())  # max_attempts=1: one attempt
    received: list[Call] = []
    with jobtable.Store.open(store_target, secret_keys=keys) as store:
        for _ in range(3):
            assert _run_one(call_runner(store, received)) in (job_id, None)
            record = store.inspect(job_id)
            assert record.status is jobtable.Status.QUEUED
            assert (record.errors, record.max_attempts - record.attempt) == ([], 1)
            assert record.run_at > store.clock()  # it waits: no claim again at once
        with pytest.raises(jobtable.SecretKeyError, match='secret key "k1", which the runner'):
            _drained(call_runner(store, received))
    [logged, *_] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert said in logged
    assert "put back without using an attempt" in logged
    # A runner with the key runs it, in its first attempt.
    with jobtable.Store.open(store_target, secret_keys=f"{K2},{K1}") as store:
        [done] = _drained(call_runner(store, received))
        assert done.status is jobtable.Status.SUCCEEDED
    assert [p.api_token.get_secret_value() for p in received] == [PLANTED]


def test_no_log_record_holds_the_secret(
    store_target: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        calls.enqueue(store, planted_call())
        calls.enqueue(store, planted_call("https://api.example/v2"))
        _drained(call_runner(store, []))
    with jobtable.Store.open(store_target, secret_keys=K2) as store:
        calls.enqueue(store, planted_call())
    with (
        jobtable.Store.open(store_target, secret_keys=new_key("k2")) as store,
        pytest.raises(jobtable.SecretKeyError),  # put back: another key under k2
    ):
        _drained(call_runner(store, []))
    assert any('secret key "k2"' in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        text = logging.Formatter().format(record) + repr(record.__dict__)
        assert PLANTED not in text
        assert repr(PLANTED_BYTES)[2:-1] not in text


def test_keys_rotate_across_a_restart_and_a_mixed_queue_drains(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        old = [calls.enqueue(store, planted_call(f"https://old/{i}")) for i in range(2)]
    # The new key goes first; the old one still decrypts.
    received: list[Call] = []
    with jobtable.Store.open(store_target, secret_keys=f"{K2},{K1}") as store:
        new = calls.enqueue(store, planted_call("https://new"))
        done = _drained(call_runner(store, received))
    assert [r.id for r in done] == [*old, new]
    assert all(r.status is jobtable.Status.SUCCEEDED for r in done)
    assert [p.url for p in received] == ["https://old/0", "https://old/1", "https://new"]
    assert {p.api_token.get_secret_value() for p in received} == {PLANTED}


def test_rotate_reencrypts_old_jobs_so_the_old_key_can_go(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(issue)
        async def make(ctx: jobtable.JobContext[Issued], account: str) -> Issued:
            return Issued(account=account, key=pydantic.SecretStr(PLANTED))

        issued = issue.enqueue(store, "acct")
        _drained(runner)  # its result is stored under k1
        old = calls.enqueue(store, planted_call("https://old"))
    with jobtable.Store.open(store_target, secret_keys=f"{K2},{K1}") as store:
        assert _key_ids(store) == {"k1"}
        new = calls.enqueue(store, planted_call("https://new"))
        assert store.rotate_secrets() == 2  # old's payload, issued's result; new is under k2
        assert store.rotate_secrets() == 0
        assert _key_ids(store) == {"k2"}
    assert_no_secret(database_bytes(store_target))
    received: list[Call] = []
    with jobtable.Store.open(store_target, secret_keys=K2) as store:
        done = _drained(call_runner(store, received))
        result = issue.get(store, issued).result
    assert [r.id for r in done] == [old, new]
    assert [p.api_token.get_secret_value() for p in received] == [PLANTED, PLANTED]
    assert result is not None
    assert result.key.get_secret_value() == PLANTED


def test_rotate_without_a_key_or_with_a_missing_one_says_which(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, planted_call())
    with (
        jobtable.Store.open(store_target, secret_keys="") as store,
        pytest.raises(jobtable.SecretKeyError, match="no secret key is configured"),
    ):
        store.rotate_secrets()
    with (
        jobtable.Store.open(store_target, secret_keys=K2) as store,
        pytest.raises(
            jobtable.SecretKeyError, match=f'job {job_id}: secret key "k1" is not configured'
        ),
    ):
        store.rotate_secrets()


def test_a_reseal_changes_no_job_whose_texts_changed_since_read(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, planted_call())
        [row] = store.engine.read(_sealed)
        stale = Resealed(job_id, row.payload, '{"changed":1}', '"published"', None)
        assert store.engine.write(Reseal((stale,))) == set()
        current = Resealed(job_id, row.payload, '{"changed":1}', None, None)
        assert store.engine.write(Reseal((current,))) == {job_id}
        assert store.inspect(job_id).payload == {"changed": 1}


def _sealed(q: Any) -> list[Any]:
    return list(q.list_sealed_jobs(after_seq=0, max_jobs=10))


def _key_ids(store: jobtable.Store) -> set[str]:
    """The key ids the stored secrets name."""
    texts = [t for row in store.engine.read(_sealed) for t in (row.payload, row.result) if t]
    return set(re.findall(r'"\$secret":"([^"]+)"', "".join(texts)))


def test_unique_keys_count_a_secret_as_its_mask(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as keyed:
        first = calls.enqueue_result(keyed, planted_call(), unique=jobtable.Unique())
        again = calls.enqueue_result(keyed, planted_call(), unique=jobtable.Unique())
    assert not first.duplicate
    assert again == (first.id, True)


def _recorder(
    received: dict[str, Any], name: str
) -> Callable[[jobtable.JobContext[int], Any], int]:
    def handle(ctx: jobtable.JobContext[int], payload: Any) -> int:
        received[name] = payload
        return 0

    return handle


def test_a_secret_in_any_shape_round_trips(tmp_path: pathlib.Path) -> None:
    shapes: list[tuple[type[Any], Any]] = [
        (pydantic.SecretStr, pydantic.SecretStr(PLANTED)),
        (dict[str, pydantic.SecretStr], {"a": pydantic.SecretStr(PLANTED)}),
        (tuple[int, pydantic.SecretBytes], (1, pydantic.SecretBytes(PLANTED_BYTES))),
        (pydantic.Secret[int], pydantic.Secret[int](42)),
        (list[pydantic.SecretStr | None], [None, pydantic.SecretStr(PLANTED)]),
        (collections.deque[pydantic.SecretStr], collections.deque([pydantic.SecretStr(PLANTED)])),
    ]
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        runner = jobtable.Runner(store, workers=1)
        received: dict[str, Any] = {}
        for i, (payload_type, value) in enumerate(shapes):
            kind = jobtable.Kind(f"shape{i}", payload_type, int)

            runner.handler(kind)(_recorder(received, kind.name))
            kind.enqueue(store, value)
        done = _drained(runner)
    assert all(r.status is jobtable.Status.SUCCEEDED for r in done), [r.error for r in done]
    assert [received[f"shape{i}"] for i in range(len(shapes))] == [v for _, v in shapes]
    assert_no_secret(database_bytes(str(tmp_path / "jobs.db")))


def test_a_payload_that_would_be_mistaken_for_a_stored_secret_is_refused(
    tmp_path: pathlib.Path,
) -> None:
    kind = jobtable.Kind("mixed", tuple[pydantic.SecretStr, dict[str, str]], int)
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        with pytest.raises(jobtable.PayloadError, match=r"the key '\$secret'"):
            kind.enqueue(store, (pydantic.SecretStr("x"), {"$secret": "k1", "v": "x"}))
        assert store.list_jobs() == []


@pytest.mark.parametrize(
    ("payload_type", "payload"),
    [
        (frozenset[pydantic.SecretStr], frozenset({pydantic.SecretStr(PLANTED)})),
        (set[tuple[int, pydantic.SecretStr]], {(1, pydantic.SecretStr(PLANTED))}),
        (dict[pydantic.SecretStr, int], {pydantic.SecretStr(PLANTED): 1}),
    ],
    ids=["set", "set of tuples", "dict key"],
)
def test_a_secret_whose_place_is_not_kept_is_refused_not_stored_masked(
    tmp_path: pathlib.Path, payload_type: Any, payload: Any
) -> None:
    kind = jobtable.Kind("placeless", payload_type, int)
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        with pytest.raises(jobtable.PayloadError, match="its secrets cannot be stored"):
            kind.enqueue(store, payload)
        assert store.list_jobs() == []


def test_a_result_with_secrets_and_no_key_fails_the_job_with_our_message(
    tmp_path: pathlib.Path,
) -> None:
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys="") as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(issue)
        async def make(ctx: jobtable.JobContext[Issued], account: str) -> Issued:
            return Issued(account=account, key=pydantic.SecretStr(PLANTED))

        job_id = issue.enqueue(store, "acct")
        _drained(runner)
        job = store.get(job_id)
    assert job.status is jobtable.Status.FAILED
    assert job.error == (
        "the result holds secrets, which are stored encrypted, and no secret key is configured"
    )
    assert_no_secret(database_bytes(str(tmp_path / "jobs.db")))
