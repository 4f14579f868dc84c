"""Every way to create a job gets its kind's declarations and takes every option, alike.

The ways are enumerated below (``PATHS``) and the options are read from the
one options type (``jobtable.JobOptions``): a new option that one way
ignores, or a new way that ignores one, fails here. Each test runs on both
engines. A periodic schedule takes every option but a job's time
(``jobtable.PeriodicOptions``: its tick is its time). The Django backend
takes a Django task's options, not these; a check of the source tree keeps
its jobs, as every other, built by the one function.
"""

import ast
import datetime
import pathlib
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, cast

import pydantic
import pytest
from job_rows import StoredKeys, stored_keys

import jobtable
from jobtable._options import EnqueueOptions, JobOptions, PeriodicOptions
from jobtable.testing import drain


class Item(pydantic.BaseModel):
    customer: str


class ItemMeta(pydantic.BaseModel):
    source: str


declared = jobtable.Kind(
    "declared",
    Item,
    int,
    queue="declared-q",
    priority=4,
    max_attempts=5,
    timeout=30.0,
    tags=["kind-tag"],
    meta=ItemMeta,
    partition=jobtable.Partition(by="customer"),
    sequence=jobtable.Sequence(by="customer"),
)
spawner = jobtable.Kind("spawner", Item, Item, queue="spawn")
"""The running job, of a workflow, that adds jobs through ctx.workflow."""


@declared.on_enqueue
def _hooked(job: jobtable.Enqueueing) -> None:
    job.tags.append("hooked")
    job.meta.setdefault("source", "hook")  # a periodic tick gives no meta of its own


ITEM = Item(customer="c1")
LATER = datetime.datetime(2100, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


class Env(NamedTuple):
    store: jobtable.Store
    target: str
    engine: str


Path = Callable[[Env, JobOptions], Awaitable[str]]


async def _enqueue(env: Env, options: JobOptions) -> str:
    return declared.enqueue(env.store, ITEM, **options)


async def _aenqueue(env: Env, options: JobOptions) -> str:
    return await declared.aenqueue(env.store, ITEM, **options)


async def _enqueue_many(env: Env, options: JobOptions) -> str:
    return declared.enqueue_many(env.store, [ITEM], **options)[0]


async def _aenqueue_many(env: Env, options: JobOptions) -> str:
    return (await declared.aenqueue_many(env.store, [ITEM], **options))[0]


async def _enqueue_result(env: Env, options: JobOptions) -> str:
    return declared.enqueue_result(env.store, ITEM, **options).id


async def _in_transaction(env: Env, options: JobOptions) -> str:
    if env.engine == "sqlite":
        conn = sqlite3.connect(env.target)
        try:
            job_id = declared.enqueue(env.store, ITEM, conn=conn, **options)
            conn.commit()
        finally:
            conn.close()
        return job_id
    import psycopg

    with psycopg.connect(env.target) as pg:  # commits at the end of the block
        return declared.enqueue(env.store, ITEM, conn=pg, **options)


async def _workflow_node(env: Env, options: JobOptions) -> str:
    wf = jobtable.Workflow("paths")
    node = wf.add(declared, ITEM, **options)
    wf.enqueue(env.store)
    return node.id


async def _workflow_node_async(env: Env, options: JobOptions) -> str:
    wf = jobtable.Workflow("paths")
    node = wf.add(declared, ITEM, **options)
    await wf.aenqueue(env.store)
    return node.id


async def _workflow_fed_node(env: Env, options: JobOptions) -> str:
    # Fed once its dependency ran: its keys by the payload's field are computed then.
    wf = jobtable.Workflow("paths")
    node = wf.add(declared, wf.add(spawner, ITEM), **options)
    wf.enqueue(env.store)
    runner = jobtable.Runner(env.store, queues={"spawn": 1})
    runner.handler(spawner)(lambda ctx, item: item)
    await drain(runner)
    return node.id


async def _added(env: Env, options: JobOptions, fed: bool) -> str:
    """The id of the job a running job of a workflow adds with options, fed or not."""
    runner = jobtable.Runner(env.store, queues={"spawn": 1})
    added: list[str] = []
    refused: list[Exception] = []

    @runner.handler(spawner)
    def spawn(ctx: jobtable.JobContext[Item], item: Item) -> Item:
        flow = ctx.workflow
        try:
            node = flow.add(declared, flow.current, **options) if fed else None
            node = node or flow.add(declared, item, **options)
        except Exception as err:
            refused.append(err)
            raise
        added.append(node.id)
        return item

    wf = jobtable.Workflow("paths")
    wf.add(spawner, ITEM)
    wf.enqueue(env.store)
    [record] = await drain(runner)
    if refused:
        raise refused[0]
    if record.status is not jobtable.Status.SUCCEEDED:
        raise AssertionError(f"the adding job ended {record.status}: {record.errors}")
    return added[0]


async def _periodic(env: Env, options: JobOptions) -> str:
    runner = jobtable.Runner(env.store, queues={"spawn": 1})
    every = datetime.timedelta(hours=1)
    timeless = cast(PeriodicOptions, options)  # the test gives a tick no delay nor run_at
    runner.periodic(declared, every=every, payload=ITEM, **timeless)
    await drain(runner)
    [job] = env.store.list_jobs(kind="declared")
    return job.id


async def _workflow_add(env: Env, options: JobOptions) -> str:
    return await _added(env, options, fed=False)


async def _workflow_add_fed(env: Env, options: JobOptions) -> str:
    return await _added(env, options, fed=True)


PATHS: dict[str, Path] = {
    "enqueue": _enqueue,
    "aenqueue": _aenqueue,
    "enqueue_many": _enqueue_many,
    "aenqueue_many": _aenqueue_many,
    "enqueue_result": _enqueue_result,
    "enqueue in a transaction": _in_transaction,
    "workflow node": _workflow_node,
    "workflow node, aenqueue": _workflow_node_async,
    "workflow fed node": _workflow_fed_node,
    "ctx.workflow.add": _workflow_add,
    "ctx.workflow.add, fed": _workflow_add_fed,
    "periodic tick": _periodic,
}
TIMELESS_PATHS = {"periodic tick"}
"""The ways whose job's time is their own: they take every option but delay and run_at."""


Check = Callable[[jobtable.JobRecord, StoredKeys], bool]


def _delayed_an_hour(record: jobtable.JobRecord, keys: StoredKeys) -> bool:
    wait = record.run_at - record.created_at
    return datetime.timedelta(minutes=59) <= wait <= datetime.timedelta(minutes=61)


OPTIONS: dict[str, tuple[object, Check]] = {
    "max_attempts": (3, lambda r, k: r.max_attempts == 3),
    "priority": (-7, lambda r, k: r.priority == -7),
    "queue": ("other-q", lambda r, k: r.queue == "other-q"),
    "timeout": (12.5, lambda r, k: r.timeout == 12.5),
    "delay": (datetime.timedelta(hours=1), _delayed_an_hour),
    "run_at": (LATER, lambda r, k: r.run_at == LATER),
    "partition_key": ("pk", lambda r, k: k.partition_key == "pk"),
    "sequence_key": ("sk", lambda r, k: k.sequence_key == "sk" and k.sequence_blocks),
    "tags": (["extra"], lambda r, k: r.tags == ["kind-tag", "extra", "hooked"]),
    "meta": ({"source": "web"}, lambda r, k: r.meta == {"source": "web"}),
}
"""A value of each option every way takes, and what its job is stored with then."""


def test_every_option_of_the_one_options_type_has_a_check_here() -> None:
    assert set(OPTIONS) == JobOptions.__optional_keys__ | JobOptions.__required_keys__


def test_a_periodic_schedule_takes_every_option_but_a_jobs_time() -> None:
    assert JobOptions.__optional_keys__ - PeriodicOptions.__optional_keys__ == {"delay", "run_at"}


def test_an_enqueue_takes_only_uniqueness_debounce_and_conn_beyond_every_jobs_options() -> None:
    # A workflow's job cannot be unique or debounced (its jobs are stored together,
    # each once) nor take conn (the workflow's enqueue does): any other option
    # belongs to every way.
    assert EnqueueOptions.__optional_keys__ - JobOptions.__optional_keys__ == {
        "unique",
        "debounce",
        "conn",
    }


@pytest.fixture
def env(store: jobtable.Store, store_target: str, engine: str) -> Env:
    return Env(store, store_target, engine)


async def _created(env: Env, path: str, options: dict[str, Any]) -> tuple[Any, StoredKeys]:
    job_id = await PATHS[path](env, JobOptions(**options))  # type: ignore[typeddict-item]
    return env.store.inspect(job_id), stored_keys(env.target, env.engine, job_id)


@pytest.mark.parametrize("path", PATHS)
async def test_every_way_applies_the_kinds_declarations(env: Env, path: str) -> None:
    record, keys = await _created(env, path, {"meta": {"source": "kind"}})
    assert (record.queue, record.priority, record.max_attempts) == ("declared-q", 4, 5)
    assert record.timeout == 30.0
    assert record.tags == ["kind-tag", "hooked"]
    assert keys == StoredKeys("c1", "c1", True)


@pytest.mark.parametrize("path", PATHS)
async def test_every_way_checks_the_metadata_against_the_kinds_model(env: Env, path: str) -> None:
    with pytest.raises(jobtable.PayloadError, match="invalid meta: source"):
        await _created(env, path, {"meta": {"source": ["not", "a", "str"]}})


@pytest.mark.parametrize(
    ("path", "option"),
    [
        (path, option)
        for path in PATHS
        for option in OPTIONS
        if path not in TIMELESS_PATHS or option in PeriodicOptions.__optional_keys__
    ],
)
async def test_every_way_takes_and_stores_every_option(env: Env, path: str, option: str) -> None:
    value, check = OPTIONS[option]
    given: dict[str, Any] = {option: value}
    if option != "meta":
        given["meta"] = {"source": "kind"}
    record, keys = await _created(env, path, given)
    assert check(record, keys), (path, option, record, keys)


def test_a_jobs_row_is_built_in_one_function_only() -> None:
    # Every way above, the periodic tick and the Django backend reach the jobs
    # table through Kind._create: no other code builds a job to store.
    src = pathlib.Path(jobtable.__file__).parent
    builders = []
    for module in sorted(src.rglob("*.py")):
        if "db" in module.relative_to(src).parts:
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for call in ast.walk(node):
                    func = call.func if isinstance(call, ast.Call) else None
                    if isinstance(func, ast.Name) and func.id == "NewJob":
                        builders.append(f"{module.relative_to(src)}:{node.name}")
    assert sorted(set(builders)) == ["_kind.py:_create"]


def test_a_periodic_schedule_refuses_a_bad_option_where_it_is_declared(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    every = datetime.timedelta(hours=1)
    with pytest.raises(TypeError, match="periodic 'declared': unknown option 'run_at'"):
        runner.periodic(declared, every=every, payload=ITEM, run_at=LATER)  # type: ignore[call-arg]
    quiet = jobtable.Debounce(quiet=datetime.timedelta(seconds=1))
    with pytest.raises(TypeError, match="periodic 'declared': debounce is an enqueue's option"):
        runner.periodic(declared, every=every, payload=ITEM, debounce=quiet)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="periodic 'declared': tag 'no spaces'"):
        runner.periodic(declared, every=every, payload=ITEM, tags=["no spaces"])


def test_a_workflow_node_refuses_a_bad_option_where_it_is_added() -> None:
    wf = jobtable.Workflow("paths")
    quiet = jobtable.Debounce(quiet=datetime.timedelta(seconds=1))
    with pytest.raises(TypeError, match="add 'declared': debounce is an enqueue's option"):
        wf.add(declared, ITEM, debounce=quiet)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="add 'declared': a partition key must be"):
        wf.add(declared, ITEM, partition_key="")
