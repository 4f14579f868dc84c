"""The ``jobtable`` command, run as users run it: the console script in a subprocess.

The jobs are set up in-process through the public API; every command under
test runs in a process of its own and is judged by its exit status, its
stdout (the table, or ``--json``) and its stderr (one line per error).
"""

import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from seam import create, engine_of

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
ping = jobtable.Kind("ping", int, int)

Cli = Callable[..., subprocess.CompletedProcess[str]]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the console script with args; JOBTABLE_STORE only as env gives it."""
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    environ.update(env or {})
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=environ, timeout=120
    )


@pytest.fixture
def cli(store_target: str) -> Cli:
    """Runs the script on the test's store, given as --store."""

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "--store", store_target)

    return call


def output(result: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must succeed; its stderr in the failure otherwise."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error of a command that failed as every command must: status 1, one line."""
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("jobtable: error: ")
    return lines[0]


def failing_runner(store: jobtable.Store, secret: str = "") -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1, name="cli-test")

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        if payload < 0:
            raise RuntimeError(f"upstream said token={secret}")
        return payload

    return runner


def test_the_script_and_python_m_both_run_the_command() -> None:
    assert "migrate" in run_cli("--help").stdout
    result = subprocess.run(
        [sys.executable, "-m", "jobtable", "jobs", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "retry" in result.stdout


def test_version_and_short_help_answer_as_other_tools_do() -> None:
    assert output(run_cli("--version")) == f"jobtable {jobtable.__version__}\n"
    assert "migrate" in output(run_cli("-h"))
    assert "retry" in output(run_cli("jobs", "-h"))


def test_a_command_without_a_store_says_how_to_give_one() -> None:
    assert "JOBTABLE_STORE" in one_line_error(run_cli("stats"))


def test_a_bad_url_is_one_line_without_its_password() -> None:
    for url in (
        "postgresql://ops:hunter2pw@127.0.0.1:1/db?connect_timeout=5",
        "mysql://ops:hunter2pw@127.0.0.1/db",
        "postgresql://ops@127.0.0.1:1/db?password=hunter2pw&connect_timeout=5",
    ):
        for args in (("stats", "--store", url), ("migrate", "--check", "--store", url)):
            line = one_line_error(run_cli(*args))
            assert "hunter2pw" not in line
            assert "***" in line
    # libpq's keyword form is no URL (it is taken as a file path), but it holds a password.
    for target in (
        "host=127.0.0.1 port=1 user=ops password=hunter2pw",
        "host=127.0.0.1 password = 'hunter2pw quoted' user=ops",
    ):
        line = one_line_error(run_cli("stats", "--store", target))
        assert "hunter2pw" not in line
        assert "***" in line


async def test_list_show_and_the_json_agree_with_the_store(
    store: jobtable.Store, store_target: str
) -> None:
    ok, bad = ping.enqueue_many(store, [1, -1])
    await failing_runner(store).run_next()
    await failing_runner(store).run_next()

    listed = json.loads(
        run_cli("jobs", "list", "--json", env={"JOBTABLE_STORE": store_target}).stdout
    )
    assert [r["id"] for r in listed] == [bad, ok]
    failed = run_cli("jobs", "list", "--status", "failed", "--store", store_target)
    assert failed.returncode == 0
    assert bad in failed.stdout
    assert ok not in failed.stdout
    shown = json.loads(output(run_cli("jobs", "show", bad, "--json", "--store", store_target)))
    assert shown == json.loads(store.inspect(bad).model_dump_json())
    human = run_cli("jobs", "show", bad, "--store", store_target).stdout
    assert "error history" in human
    assert jobtable.MESSAGE_INTERNAL in human


def test_list_says_how_to_see_more_and_when_a_later_job_runs(
    cli: Cli, store: jobtable.Store
) -> None:
    at = store.clock() + datetime.timedelta(days=3)
    first, _, third = ping.enqueue_many(store, [1, 2, 3])
    later = ping.enqueue(store, 4, run_at=at)
    page = output(cli("jobs", "list", "--limit", "2"))
    seq = store.inspect(third).seq
    assert page.splitlines()[-1] == f"more: --before {seq}"
    assert "run at" in page
    [row] = [line for line in page.splitlines() if later in line]
    assert at.strftime("%Y-%m-%d") in row
    rest = output(cli("jobs", "list", "--limit", "2", "--before", str(seq)))
    assert first in rest
    assert "more:" not in rest  # the last page
    assert "more:" not in output(cli("jobs", "list"))
    assert len(json.loads(output(cli("jobs", "list", "--limit", "2", "--json")))) == 2


def test_list_by_tag_shows_only_the_tagged_jobs_and_show_shows_tags_and_meta(
    cli: Cli, store: jobtable.Store
) -> None:
    tagged = ping.enqueue(store, 1, tags=["nightly"], meta={"who": "ops"})
    ping.enqueue(store, 2, tags=["other"])
    listed = json.loads(output(cli("jobs", "list", "--tag", "nightly", "--json")))
    assert [r["id"] for r in listed] == [tagged]
    assert (listed[0]["tags"], listed[0]["meta"]) == (["nightly"], {"who": "ops"})
    shown = output(cli("jobs", "show", tagged))
    assert "nightly" in shown
    assert '"who": "ops"' in shown
    refused = cli("jobs", "list", "--tag", "not a tag")
    assert refused.returncode != 0
    assert "tag must be" in refused.stderr


def test_show_cuts_a_long_payload_unless_full(cli: Cli, store: jobtable.Store) -> None:
    def squeezed(shown: str) -> str:
        """The text of the table's cells, without the wrapping and the borders."""
        return re.sub(r"[\s│]", "", shown)

    big = jobtable.Kind("big", str, int)
    job_id = big.enqueue(store, "x" * 100_000)
    shown = output(cli("jobs", "show", job_id))
    assert "x" * 4000 in squeezed(shown)
    assert "x" * 4096 not in squeezed(shown)
    assert "(100002bytes;--fullshowsall)" in squeezed(shown)
    whole = squeezed(output(cli("jobs", "show", job_id, "--full")))
    assert "x" * 100_000 in whole
    assert "--fullshowsall" not in whole


def test_bad_filters_and_options_are_one_line_errors(cli: Cli, store: jobtable.Store) -> None:
    assert "--status 'done'" in one_line_error(cli("jobs", "list", "--status", "done"))
    assert "limit" in one_line_error(cli("jobs", "list", "--limit", "0"))
    assert "--older-than '7x'" in one_line_error(cli("prune", "--older-than", "7x"))
    assert "--older-than" in one_line_error(cli("prune", "--older-than", "-1d"))
    # Past what a timedelta holds: an error naming the option, not an OverflowError.
    assert "--older-than '999999999999d'" in one_line_error(
        cli("prune", "--older-than", "999999999999d")
    )
    assert "'bogus'" in one_line_error(cli("jobs", "list", "--status", "bogus"))


def test_edges_of_durations_and_pages_are_answered_not_tracebacks(
    cli: Cli, store: jobtable.Store
) -> None:
    job_id = ping.enqueue(store, 1)
    # Longer ago than the calendar goes back: nothing finished then.
    assert json.loads(output(cli("prune", "--older-than", "99999999d", "--json"))) == {"deleted": 0}
    # Past the largest seq: every job is before it.
    listed = json.loads(output(cli("jobs", "list", "--before", str(1 << 70), "--json")))
    assert [record["id"] for record in listed] == [job_id]
    assert json.loads(output(cli("jobs", "list", "--before", str(-(1 << 70)), "--json"))) == []


def test_an_unknown_id_fails_naming_it_and_changes_nothing(cli: Cli, store: jobtable.Store) -> None:
    queued = ping.enqueue(store, 1)
    for command in ("cancel", "retry", "delete"):
        line = one_line_error(cli("jobs", command, queued, "no-such-job"))
        assert "'no-such-job' not found" in line
        assert store.get(queued).status == jobtable.Status.QUEUED
    assert "not found" in one_line_error(cli("jobs", "show", "no-such-job"))


def test_an_id_that_starts_with_a_dash_is_an_id_not_an_option(
    cli: Cli, store: jobtable.Store
) -> None:
    # Ids are URL-safe base64: one in 64 starts with "-".
    engine_of(store).write(create("-dash-id", "ping"))
    assert json.loads(output(cli("jobs", "show", "-dash-id", "--json")))["id"] == "-dash-id"
    assert json.loads(output(cli("jobs", "cancel", "-dash-id", "--json"))) == {
        "-dash-id": "cancelled"
    }


async def test_cancel_retry_and_delete_act_on_every_id(cli: Cli, store: jobtable.Store) -> None:
    first, second = ping.enqueue_many(store, [1, 2])
    cancelled = json.loads(output(cli("jobs", "cancel", first, second, "--json")))
    assert cancelled == {first: "cancelled", second: "cancelled"}
    retried = cli("jobs", "retry", first)
    assert retried.returncode == 0
    assert first in retried.stdout
    assert "retried" in retried.stdout
    assert store.get(first).status == jobtable.Status.QUEUED
    assert json.loads(output(cli("jobs", "delete", second, "--json"))) == {second: "deleted"}
    with pytest.raises(jobtable.JobNotFound):
        store.get(second)
    ping.enqueue(store, -1)
    await failing_runner(store).run_next()
    await failing_runner(store).run_next()
    assert json.loads(output(cli("jobs", "retry-failed", "--kind", "ping", "--json"))) == {
        "retried": 1
    }


def test_an_id_given_twice_is_acted_on_once_and_reports_that_action(
    cli: Cli, store: jobtable.Store
) -> None:
    job_id = ping.enqueue(store, 1)
    cancelled = json.loads(output(cli("jobs", "cancel", job_id, job_id, "--json")))
    assert cancelled == {job_id: "cancelled"}
    # Acted on twice, the second retry's "queued" would hide that the first retried it.
    retried = json.loads(output(cli("jobs", "retry", job_id, job_id, "--json")))
    assert retried == {job_id: "retried"}
    assert store.get(job_id).status == jobtable.Status.QUEUED


async def test_stored_text_is_shown_as_written_not_as_markup_or_terminal_codes(
    cli: Cli, store: jobtable.Store
) -> None:
    odd = jobtable.Kind("[bold]odd[/bold]", int, int, queue="[/red]q")
    runner = jobtable.Runner(store, queues={"[/red]q": 1}, name="cli-test")

    @runner.handler(odd)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure("[/] title \x1b]0;pwned\x07 set")

    job_id = odd.enqueue(store, 1)
    await runner.run_next()
    # Rich markup in a kind, queue or message crashed the tables (MarkupError), and a
    # message's escape sequence reached the operator's terminal as a command.
    for command in (("jobs", "list"), ("jobs", "show", job_id), ("stats",)):
        shown = output(cli(*command))
        assert "\x1b" not in shown
        assert "[/red]q" in shown
    assert "[bold]odd[/bold]" in output(cli("jobs", "list"))
    assert "[/] title \\x1b]0;pwned\\x07 set" in output(cli("jobs", "show", job_id))


def test_stats_and_prune(cli: Cli, store: jobtable.Store) -> None:
    ping.enqueue_many(store, [1, 2])
    ping.enqueue(store, 3, queue="later", run_at=store.clock() + datetime.timedelta(hours=1))
    queues = json.loads(output(cli("stats", "--json")))["queues"]
    by_queue = {q["queue"]: q for q in queues}
    assert by_queue["default"]["counts"] == {"queued": 2}
    assert by_queue["default"]["scheduled"] == 0
    assert by_queue["default"]["oldest_queued_age"] is not None
    assert (by_queue["later"]["oldest_queued_age"], by_queue["later"]["scheduled"]) == (None, 1)
    human = cli("stats").stdout
    assert "default" in human
    assert "queued" in human
    assert "scheduled later" in human
    [later] = [line for line in human.splitlines() if "later" in line and "scheduled" not in line]
    assert [cell.strip() for cell in later.split("│")][-3:-1] == ["-", "1"]
    assert json.loads(output(cli("prune", "--older-than", "7d", "--json"))) == {"deleted": 0}


def test_migrate_check_exits_non_zero_while_an_upgrade_is_pending(store_target: str) -> None:
    check = run_cli("migrate", "--check", "--json", "--store", store_target)
    assert check.returncode == 1
    assert json.loads(check.stdout)["pending"] is True
    assert "no jobtable schema" in one_line_error(run_cli("stats", "--store", store_target))
    migrated = run_cli("migrate", "--store", store_target)
    assert migrated.returncode == 0
    assert "created the schema" in migrated.stdout
    assert run_cli("migrate", "--check", "--store", store_target).returncode == 0
    assert "nothing to do" in run_cli("migrate", "--store", store_target).stdout


def test_the_worker_runs_the_applications_runner_and_no_output_shows_a_handlers_secret(
    store: jobtable.Store, store_target: str, tmp_path: pathlib.Path
) -> None:
    secret = "planted-secret-7f3a9c"
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "tasks.py").write_text(
        "import os\n"
        "import jobtable\n"
        "store = jobtable.Store.open(os.environ['APP_STORE'])\n"
        "runner = jobtable.Runner(store, workers=1, name='cli-worker', poll_interval=0.05)\n"
        "ping = jobtable.Kind('ping', int, int)\n"
        "@runner.handler(ping)\n"
        "async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:\n"
        "    if payload < 0:\n"
        f"        raise RuntimeError('upstream said token={secret}')\n"
        "    return payload\n"
    )
    ok, bad = ping.enqueue_many(store, [5, -1])
    env = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    env["APP_STORE"] = store_target
    worker = subprocess.Popen(
        [str(SCRIPT), "worker", "app.tasks:runner"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = 60.0
        start = time.monotonic()
        while store.get(bad).status != jobtable.Status.FAILED:
            assert time.monotonic() - start < deadline, "the worker never ran the jobs"
            assert worker.poll() is None, worker.communicate()
            time.sleep(0.05)
        [runner] = json.loads(output(run_cli("runners", "--json", "--store", store_target)))
        assert (runner["name"], runner["alive"]) == ("cli-worker", True)
        outputs = [
            run_cli(*args, "--store", store_target)
            for args in (
                ("jobs", "list"),
                ("jobs", "list", "--json"),
                ("jobs", "show", bad),
                ("jobs", "show", bad, "--json"),
                ("stats",),
                ("stats", "--json"),
                ("runners",),
                ("jobs", "retry", bad),
            )
        ]
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert store.get(ok).result == 5
    for result in outputs:
        assert result.returncode == 0, result
        assert secret not in result.stdout + result.stderr
    assert jobtable.MESSAGE_INTERNAL in outputs[2].stdout
    # The secret was raised: the worker's own log has it, and only the log.
    assert secret in err
    assert secret not in out


def test_the_worker_refuses_what_is_not_a_runner(tmp_path: pathlib.Path) -> None:
    (tmp_path / "notes.py").write_text(
        "import jobtable\n\nrunner = 42\n\n\ndef make(name):\n    return None\n\n\n"
        "def make_wrong():\n    return 7\n"
    )
    (tmp_path / "deadstore.py").write_text(
        "import jobtable\n\n"
        "store = jobtable.Store.open('postgresql://ops:hunter2pw@127.0.0.1:1/app')\n"
        "runner = jobtable.Runner(store)\n"
    )
    for spec, said in (
        ("notes", "module:attribute"),
        ("missing_module:runner", "cannot import"),
        ("notes:nothing", "no attribute"),
        ("notes:runner", "notes:runner is int 42, want a jobtable.Runner"),
        ("notes:make_wrong", "notes:make_wrong returned int 7, want a jobtable.Runner"),
        # These were tracebacks: a factory that takes arguments, a class, a dead store.
        ("notes:make", "make needs arguments"),
        ("jobtable:Runner", "is the class Runner, not an instance, want a jobtable.Runner"),
        ("deadstore:runner", "importing deadstore: postgres store postgresql://ops:***@"),
    ):
        result = subprocess.run(
            [str(SCRIPT), "worker", spec], cwd=tmp_path, capture_output=True, text=True
        )
        assert said in one_line_error(result)
        assert "hunter2pw" not in result.stderr


def test_the_worker_refuses_a_runner_with_no_handler_and_says_why(
    store_target: str, tmp_path: pathlib.Path
) -> None:
    # The module that attaches the handlers was never imported.
    (tmp_path / "bare.py").write_text(
        "import os\n"
        "import jobtable\n"
        "runner = jobtable.Runner(jobtable.Store.open(os.environ['APP_STORE']))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    env["APP_STORE"] = store_target
    result = subprocess.run(
        [str(SCRIPT), "worker", "bare:runner"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "the runner has no handler" in one_line_error(result)
