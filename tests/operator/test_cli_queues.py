"""``jobtable queues …`` and the waiting row of ``jobtable jobs show``, as real processes.

The queues are set up in-process through the Store's public operations; every
command under test runs in a process of its own, on each engine, and is
judged by its exit status, its output and what the store holds afterwards.
"""

import datetime
import json

import pytest
from test_cli import Cli, cli, one_line_error, output

import jobtable
from jobtable._runner.run_operations import FlowClaim
from jobtable._values import timestamp

pytestmark = pytest.mark.slow

__all__ = ["cli"]  # the fixture, used by name

mail = jobtable.Kind("mail", int, int, queue="email")
export = jobtable.Kind("export", int, int, queue="exports")


def claim(store: jobtable.Store, queue: str, max_jobs: int) -> list[str]:
    """Claims up to max_jobs jobs of queue as a runner's claim does: they stay running."""
    _, rows, _ = store.engine.write(FlowClaim((), "r1", queue, max_jobs, timestamp(store.clock())))
    return [row.id for row in rows]


def queue_of(store: jobtable.Store, name: str) -> jobtable.QueueInfo:
    [found] = [queue for queue in store.queues() if queue.name == name]
    return found


def test_list_shows_pause_limits_who_set_them_and_counts_and_its_json_is_the_stores(
    cli: Cli, store: jobtable.Store
) -> None:
    store.declare([jobtable.Queue("exports", concurrency=5)])
    store.set_limits(
        "api",
        partition_limit=1,
        rate=jobtable.Rate(60, per=datetime.timedelta(minutes=1), per_key=True),
    )
    mail.enqueue_many(store, [1, 2])
    store.pause("email")
    export.enqueue(store, 1)
    assert len(claim(store, "exports", 1)) == 1

    table = output(cli("queues", "list"))
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines()]
    rows = {row[0]: row[1:] for row in cells if row}
    #                  paused conc partition rate            by          queued running
    assert rows["api"] == ["no", "-", "1", "60/1m per key", "operator", "0", "0"]
    assert rows["email"] == ["PAUSED", "-", "-", "-", "-", "2", "0"]
    assert rows["exports"] == ["no", "5", "-", "-", "code", "0", "1"]
    listed = json.loads(output(cli("queues", "list", "--json")))
    assert listed == [json.loads(queue.model_dump_json()) for queue in store.queues()]


def test_pause_resume_set_and_clear_change_what_the_store_holds(
    cli: Cli, store: jobtable.Store
) -> None:
    store.declare([jobtable.Queue("exports", concurrency=7)])

    paused = output(cli("queues", "pause", "exports"))
    assert paused.startswith("paused queue 'exports'")
    assert queue_of(store, "exports").paused
    assert json.loads(output(cli("queues", "resume", "exports", "--json")))["paused"] is False
    assert not queue_of(store, "exports").paused

    args = ("--concurrency", "3", "--partition-limit", "2", "--rate", "90/1h30m", "--rate-per-key")
    shown = json.loads(output(cli("queues", "set", "exports", *args, "--json")))
    assert shown == json.loads(queue_of(store, "exports").model_dump_json())
    found = queue_of(store, "exports")
    assert (found.concurrency, found.partition_limit, found.rate_limit) == (3, 2, 90)
    assert (found.rate_per, found.rate_per_key, found.overridden) == (5400.0, True, True)
    assert "rate 90/1h30m per key, limits by operator" in output(
        cli("queues", "set", "exports", *args)
    )

    output(cli("queues", "set", "exports", "--rate", "5/30s"))  # replaces all three
    found = queue_of(store, "exports")
    assert (found.concurrency, found.partition_limit, found.rate_limit) == (None, None, 5)
    assert (found.rate_per, found.rate_per_key) == (30.0, False)

    cleared = output(cli("queues", "clear", "exports"))
    assert cleared.startswith("cleared the operator's limits of queue 'exports'")
    found = queue_of(store, "exports")
    assert (found.concurrency, found.rate_limit, found.overridden) == (7, None, False)
    again = output(cli("queues", "clear", "exports"))
    assert again.startswith("queue 'exports' had no operator's limits: nothing changed")


BAD_VALUES = [
    (("--concurrency", "0"), "--concurrency '0'"),
    (("--concurrency", "-2"), "--concurrency '-2'"),
    (("--concurrency", "many"), "--concurrency 'many'"),
    (("--concurrency", "2147483648"), "--concurrency '2147483648'"),
    (("--concurrency", ""), "--concurrency ''"),
    (("--partition-limit", "0"), "--partition-limit '0'"),
    (("--rate", "60"), "--rate '60'"),
    (("--rate", "0/1m"), "--rate limit '0'"),
    (("--rate", "5/0s"), "--rate '5/0s'"),
    (("--rate", "5/1y"), "--rate period '1y'"),
    (("--rate-per-key", "--concurrency", "2"), "--rate:"),
    ((), "give --concurrency, --partition-limit or --rate"),
]
"""Arguments of ``queues set`` and what the one-line error of each must name."""


def test_a_bad_value_is_a_one_line_error_naming_the_option_and_changes_nothing(
    cli: Cli, store: jobtable.Store
) -> None:
    store.set_limits("exports", concurrency=4)
    before = store.queues()
    for args, named in BAD_VALUES:
        assert named in one_line_error(cli("queues", "set", "exports", *args)), args
    assert store.queues() == before


def test_an_unknown_queue_is_stored_with_a_note_naming_the_queues_and_clear_refuses_it(
    cli: Cli, store: jobtable.Store
) -> None:
    mail.enqueue(store, 1)
    paused = cli("queues", "pause", "emial")
    assert paused.returncode == 0, paused.stderr
    assert paused.stderr == (
        "jobtable: note: queue 'emial' had no jobs and no flow control; it is stored and "
        "applies to the jobs enqueued to it (queues there are: 'email'); "
        "if the name is mistyped, 'jobtable queues resume emial' drops it\n"
    )
    assert queue_of(store, "emial").paused
    refused = one_line_error(cli("queues", "clear", "nope"))
    assert "no queue 'nope': nothing to clear (queues there are: 'email', 'emial')" in refused
    assert [queue.name for queue in store.queues()] == ["email", "emial"]
    resumed = cli("queues", "resume", "emial")
    assert resumed.returncode == 0, resumed.stderr
    assert [queue.name for queue in store.queues()] == ["email"]


def test_jobs_show_says_in_words_why_a_queued_job_waits(cli: Cli, store: jobtable.Store) -> None:
    ready = mail.enqueue(store, 0)
    assert "│ waiting          │ -" in output(cli("jobs", "show", ready))
    store.pause("email")
    waits = {jobtable.WaitReason.PAUSED: ready}
    store.set_limits("exports", concurrency=1)
    export.enqueue(store, 1)
    claim(store, "exports", 1)
    waits[jobtable.WaitReason.CONCURRENCY] = export.enqueue(store, 2)
    store.set_limits("keyed", partition_limit=1)
    keyed = jobtable.Kind("keyed", int, int, queue="keyed")
    keyed.enqueue(store, 1, partition_key="c1")
    claim(store, "keyed", 1)
    waits[jobtable.WaitReason.PARTITION] = keyed.enqueue(store, 2, partition_key="c1")
    store.set_limits("slow", rate=jobtable.Rate(1, per=datetime.timedelta(hours=1)))
    slow = jobtable.Kind("slow", int, int, queue="slow")
    slow.enqueue(store, 1)
    claim(store, "slow", 1)
    waits[jobtable.WaitReason.RATE] = slow.enqueue(store, 2)
    ordered = jobtable.Kind("ordered", int, int, queue="ordered")
    ordered.enqueue(store, 1, sequence_key="o-1")
    waits[jobtable.WaitReason.SEQUENCE] = ordered.enqueue(store, 2, sequence_key="o-1")

    assert set(waits) == set(jobtable.WaitReason)
    for reason, job_id in waits.items():
        assert store.inspect(job_id).waiting is reason
        [row] = [
            line for line in output(cli("jobs", "show", job_id)).splitlines() if "waiting" in line
        ]
        assert f"held back: {reason.text}" in row
