"""A fed node is a job like any other: its kind's declarations, every option, every limit.

A node fed by its dependency's result (``wf.add(charge, receipt_node)``)
is created through the one path every job takes, so its kind's tags,
metadata, queue and keys apply, it takes the options a plain enqueue takes,
and a started runner keeps its queue's partition limit and its sequence
for it, on both engines. The mistakes of wiring a workflow are refused
where they are made.
"""

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable

import pydantic
import pytest
from job_rows import stored_keys

import jobtable
from jobtable import JobOptions
from jobtable.testing import drain

WaitUntil = Callable[..., Awaitable[None]]


class Receipt(pydantic.BaseModel):
    customer: str
    amount: int


class Meta(pydantic.BaseModel):
    source: str


receipt = jobtable.Kind("receipt", Receipt, Receipt, queue="q")
charge = jobtable.Kind(
    "charge",
    Receipt,
    int,
    queue="q",
    tags=["billing"],
    meta=Meta,
    partition=jobtable.Partition(by="customer"),
)
ledger = jobtable.Kind("ledger", Receipt, int, queue="q", sequence=jobtable.Sequence(by="customer"))
journal = jobtable.Kind(
    "journal", Receipt, int, queue="q", sequence=jobtable.Sequence(on_failure="continue")
)
charged = jobtable.Kind(
    "charged", Receipt, int, queue="q", partition=jobtable.Partition(by="customer")
)
keyless = jobtable.Kind("keyless", Receipt, int, queue="q", priority=3, max_attempts=2)


def _paid_customer(r: Receipt) -> str:
    if r.amount <= 0:
        raise ValueError("nothing to charge")
    return r.customer


picky = jobtable.Kind(
    "picky", Receipt, int, queue="q", partition=jobtable.Partition(_paid_customer)
)


def test_a_fed_node_takes_its_kinds_declarations_and_an_enqueues_options(
    store: jobtable.Store, store_target: str, engine: str
) -> None:
    wf = jobtable.Workflow("billing")
    first = wf.add(receipt, Receipt(customer="c1", amount=5))
    fed = wf.add(
        charge, first, tags=["urgent"], meta=Meta(source="web"), partition_key="c1", priority=-2
    )
    wf.enqueue(store)
    record = store.inspect(fed.id)
    assert record.status is jobtable.Status.PENDING
    assert record.tags == ["billing", "urgent"]
    assert record.meta == {"source": "web"}
    assert stored_keys(store_target, engine, fed.id).partition_key == "c1"
    assert (record.queue, record.priority) == ("q", -2)


def test_a_fed_node_whose_kind_keys_by_a_function_is_refused_at_add_unless_keyed(
    store: jobtable.Store,
) -> None:
    # A field's key is computed when the node is fed; a function could only
    # run in this process, so the key is given instead.
    wf = jobtable.Workflow("billing")
    first = wf.add(receipt, Receipt(customer="c1", amount=5))
    with pytest.raises(ValueError, match=r"add 'picky'.*function.*give partition_key= to add"):
        wf.add(picky, first)
    assert wf.nodes == [first]
    wf.add(picky, first, partition_key="c1")


def test_a_fed_node_keyed_by_a_payload_field_holds_no_key_until_it_is_fed(
    store: jobtable.Store, store_target: str, engine: str
) -> None:
    wf = jobtable.Workflow("billing")
    fed = wf.add(ledger, wf.add(receipt, Receipt(customer="c1", amount=5)))
    wf.enqueue(store)
    keys = stored_keys(store_target, engine, fed.id)
    assert (keys.partition_key, keys.sequence_key, keys.sequence_blocks) == (None, None, True)


def test_a_partition_or_sequence_by_a_secret_field_is_refused_where_it_is_declared() -> None:
    class Card(pydantic.BaseModel):
        customer: str
        number: pydantic.SecretStr

    for flow in (
        {"partition": jobtable.Partition(by="number")},
        {"sequence": jobtable.Sequence(by="number")},
    ):
        with pytest.raises(ValueError, match=r"Kind 'card'.*field 'number' is a secret"):
            jobtable.Kind("card", Card, int, **flow)
    jobtable.Kind("card", Card, int, partition=jobtable.Partition(by="customer"))


def test_a_node_whose_result_type_is_not_the_dependents_payload_type_is_refused_at_add() -> None:
    counted = jobtable.Kind("counted", str, int)
    wf = jobtable.Workflow("billing")
    first = wf.add(counted, "x")
    with pytest.raises(TypeError, match=r"add 'keyless'.*returns int, not the payload type"):
        wf.add(keyless, first)  # type: ignore[misc]  # mypy refuses it too
    assert wf.nodes == [first]


async def run_charges(
    store: jobtable.Store,
    kind: jobtable.Kind[Receipt, int],
    wait_until: WaitUntil,
    key: JobOptions,
    limited: bool = False,
) -> tuple[int, list[int]]:
    """Runs a workflow's fed job of kind for customer c1 and two plain ones after it.

    Returns how many jobs of kind ran at once at most, and the amounts in
    the order they started. The plain jobs are enqueued after the workflow,
    and each job holds its slot a while, so a fed job without its key would
    run beside one of them. limited: the queue has a partition limit of 1.
    """
    # The jobs without a key count as one key: only kind's jobs have one here.
    limited = limited or "partition_key" in key
    flow = [jobtable.Queue("q", partition_limit=1)] if limited else []
    runner = jobtable.Runner(store, queues={"q": 4}, poll_interval=0.1, flow=flow)
    running, most, started = 0, 0, []

    @runner.handler(receipt)
    def do_receipt(ctx: jobtable.JobContext[Receipt], r: Receipt) -> Receipt:
        return r

    @runner.handler(kind)
    async def do_kind(ctx: jobtable.JobContext[int], r: Receipt) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        started.append(r.amount)
        await asyncio.sleep(0.3)
        running -= 1
        return r.amount

    wf = jobtable.Workflow("billing")
    fed = wf.add(kind, wf.add(receipt, Receipt(customer="c1", amount=0)), **key)
    wf.enqueue(store)
    later = [Receipt(customer="c1", amount=n) for n in (1, 2)]
    ids = [fed.id, *kind.enqueue_many(store, later, **key)]
    await runner.start()
    try:
        done = jobtable.Status.SUCCEEDED
        await wait_until(lambda: all(store.get(i).status is done for i in ids), limit=60)
    finally:
        runner.stop()
        await runner.wait()
    return most, started


async def test_a_fed_job_keeps_its_queues_partition_limit_under_a_started_runner(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    most, started = await run_charges(store, charged, wait_until, {"partition_key": "c1"})
    assert most == 1
    assert sorted(started) == [0, 1, 2]


async def test_a_fed_job_runs_in_its_place_in_its_sequence_under_a_started_runner(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    most, started = await run_charges(store, ledger, wait_until, {"sequence_key": "c1"})
    assert most == 1
    # The fed job was enqueued first, with its workflow: it runs first, though
    # it waited for its dependency while the others were ready.
    assert started == [0, 1, 2]


async def test_fed_jobs_keyed_by_a_field_keep_the_partition_limit_beside_plain_enqueues(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    most, started = await run_charges(store, charged, wait_until, {}, limited=True)
    assert most == 1
    assert sorted(started) == [0, 1, 2]


async def test_a_fed_job_sequenced_by_a_field_joins_its_sequence_when_it_is_fed(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    most, started = await run_charges(store, ledger, wait_until, {})
    assert most == 1
    # The plain jobs were enqueued while the fed one waited for its payload:
    # it joined its sequence when fed, behind them.
    assert started == [1, 2, 0]


async def test_jobs_fed_by_one_result_join_its_sequence_in_their_order_with_their_tags(
    store: jobtable.Store,
) -> None:
    tagged = jobtable.Kind(
        "tagged", Receipt, int, queue="q", tags=["fed"], sequence=jobtable.Sequence(by="customer")
    )
    runner = jobtable.Runner(store, queues={"q": 1})
    started: list[str] = []

    @runner.handler(receipt)
    def do_receipt(ctx: jobtable.JobContext[Receipt], r: Receipt) -> Receipt:
        return r

    @runner.handler(tagged)
    def do_tagged(ctx: jobtable.JobContext[int], r: Receipt) -> int:
        started.append(ctx.id)
        return r.amount

    wf = jobtable.Workflow("billing")
    first = wf.add(receipt, Receipt(customer="c1", amount=5))
    fed = [wf.add(tagged, first).id for _ in range(3)]
    wf.enqueue(store)
    plain = tagged.enqueue(store, Receipt(customer="c1", amount=1))
    await drain(runner)
    assert started == [plain, *fed]
    # A job's tags follow it to its place in the enqueue order.
    assert sorted(job.id for job in store.list_jobs(tag="fed")) == sorted([plain, *fed])


def test_a_workflow_whose_transaction_rolled_back_can_be_enqueued_again(
    store: jobtable.Store, store_target: str, engine: str
) -> None:
    wf = jobtable.Workflow("billing")
    node = wf.add(keyless, Receipt(customer="c1", amount=1))
    if engine == "sqlite":
        conn = sqlite3.connect(store_target)
        wf.enqueue(store, conn=conn)
        conn.rollback()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(store_target) as pg:
            wf.enqueue(store, conn=pg)
            pg.rollback()
    assert wf.enqueue(store) == wf.id
    assert store.get(node.id).status is jobtable.Status.QUEUED
    with pytest.raises(ValueError, match="stored already; build a new Workflow"):
        wf.enqueue(store)


async def test_a_fed_job_holds_a_sequence_that_continues_past_failures_in_its_place(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    # A sequence whose ended jobs never block: only its place, while it
    # waits for its dependency, keeps the later jobs behind the fed one.
    most, started = await run_charges(store, journal, wait_until, {"sequence_key": "c1"})
    assert most == 1
    assert started == [0, 1, 2]


def test_a_workflow_whose_transaction_is_still_open_says_so_when_enqueued_again(
    store: jobtable.Store, store_target: str, engine: str
) -> None:
    wf = jobtable.Workflow("billing")
    wf.add(keyless, Receipt(customer="c1", amount=1))
    still_open = "enqueued in conn's transaction, which is still open: commit it, or roll it back"
    if engine == "sqlite":
        conn = sqlite3.connect(store_target)
        wf.enqueue(store, conn=conn)
        with pytest.raises(ValueError, match=still_open):
            wf.enqueue(store)
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(store_target) as pg:
            wf.enqueue(store, conn=pg)
            with pytest.raises(ValueError, match=still_open):
                wf.enqueue(store)
    with pytest.raises(ValueError, match="stored already"):
        wf.enqueue(store)


summed = jobtable.Kind("summed", str, str, queue="q")


def results_runner(store: jobtable.Store) -> jobtable.Runner:
    """A runner whose summed jobs answer what ctx.results(charge) said: a sum or the refusal."""
    runner = jobtable.Runner(store, queues={"q": 1})

    @runner.handler(receipt)
    def do_receipt(ctx: jobtable.JobContext[Receipt], r: Receipt) -> Receipt:
        return r

    @runner.handler(summed)
    def do_summed(ctx: jobtable.JobContext[str], label: str) -> str:
        try:
            return str(sum(ctx.results(charge)))
        except ValueError as err:
            return str(err)

    return runner


async def test_results_of_a_kind_the_job_does_not_depend_on_is_refused_naming_it(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("billing")
    wf.add(summed, "total", after=[wf.add(receipt, Receipt(customer="c1", amount=5))])
    wf.enqueue(store)
    records = await drain(results_runner(store))
    answer = records[-1].result
    assert isinstance(answer, str)
    assert "has no dependency of kind 'charge'" in answer
    assert "['receipt']" in answer


async def test_results_in_a_job_of_no_workflow_is_refused_naming_the_kind(
    store: jobtable.Store,
) -> None:
    summed.enqueue(store, "total")
    [record] = await drain(results_runner(store))
    assert isinstance(record.result, str)
    assert "has no dependency of kind 'charge'" in record.result


async def test_a_job_fed_by_the_running_job_gets_its_keys_from_the_result(
    store: jobtable.Store, store_target: str, engine: str
) -> None:
    # The result is known when the jobs it feeds are stored, in the success's
    # transaction: their kind's Partition computes the key from it there.
    runner = jobtable.Runner(store, queues={"q": 1})
    added: list[str] = []

    @runner.handler(receipt)
    def do_receipt(ctx: jobtable.JobContext[Receipt], r: Receipt) -> Receipt:
        added.append(ctx.workflow.add(charge, ctx.workflow.current, meta=Meta(source="fan")).id)
        return Receipt(customer="c9", amount=r.amount)

    wf = jobtable.Workflow("billing")
    wf.add(receipt, Receipt(customer="c1", amount=5))
    wf.enqueue(store)
    await drain(runner)
    record = store.inspect(added[0])
    assert record.payload == {"customer": "c9", "amount": 5}
    assert record.tags == ["billing"]
    assert stored_keys(store_target, engine, added[0]).partition_key == "c9"


async def test_a_job_fed_by_the_running_job_whose_key_cannot_be_made_fails_the_attempt(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, queues={"q": 1})

    @runner.handler(receipt)
    def do_receipt(ctx: jobtable.JobContext[Receipt], r: Receipt) -> Receipt:
        ctx.workflow.add(picky, ctx.workflow.current)
        return Receipt(customer=r.customer, amount=0)

    wf = jobtable.Workflow("billing")
    wf.add(receipt, Receipt(customer="c1", amount=5))
    wf.enqueue(store)
    [record] = await drain(runner)
    assert record.status is jobtable.Status.FAILED
    assert [job.kind for job in store.list_jobs()] == ["receipt"]
