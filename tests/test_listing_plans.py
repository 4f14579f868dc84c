"""Each filtered page of list_jobs reads about its page, however many rows do not match.

The table holds a few hundred old jobs that match the filters and many newer
ones that match none of them: a query that scans in seq order, or filters
after reading, would read every newer row before it found its page. Each
ListJobs* query must read only index entries that match, so what it reads
does not grow with the rows that do not.

SQLite counts the virtual machine's steps (a progress handler called every
step), PostgreSQL the rows each plan node of EXPLAIN ANALYZE read or
filtered out: both are counts, not timings.
"""

import itertools
import json
import pathlib
import re
import sqlite3
from collections.abc import Sequence
from typing import Protocol, cast

import jobtable
from jobtable._engines import listing
from jobtable._engines.listing import ListingQueries
from jobtable.db.postgres import jobs as pg_jobs
from jobtable.db.sqlite import jobs as sqlite_jobs

LIMIT = 20
STATUSES = ["queued", "running", "succeeded", "failed", "cancelled", "pending"]
# Every combination of the three filters, each a value the old jobs have.
FILTERS = [
    dict(zip(names, values, strict=True))
    for size in range(4)
    for names in itertools.combinations(("status", "kind", "queue"), size)
    for values in [tuple({"status": "failed", "kind": "report", "queue": "mail"}[n] for n in names)]
]
# The running and queued listings read the claim's indexes: the same filters
# with status "running" and "queued". Succeeded jobs are listed from indexes
# that hold every status, keeping the status's: the same filters with it too.
RUNNING = [{**fs, "status": s} for fs in FILTERS if "status" in fs for s in ("running", "queued")]
COMMON = [{**fs, "status": "succeeded"} for fs in FILTERS if "status" in fs]
T = "2025-01-02T03:04:05.000001Z"


def old_jobs() -> list[tuple[str, str, str, str]]:
    """(id, kind, queue, status) of 1,000 old jobs, mixing the filters' values and others."""
    return [
        (
            f"old-{n}",
            ["report", "ping"][n % 2],
            ["mail", "default"][n // 2 % 2],
            STATUSES[n // 4 % 6],
        )
        for n in range(1_000)
    ]


def new_jobs(count: int, start: int) -> list[tuple[str, str, str, str]]:
    """count newer jobs that match no filter: another kind, queue and status."""
    return [(f"new-{start + n}", "filler", "bulk", "succeeded") for n in range(count)]


def rows(jobs: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str, str | None]]:
    return [(i, k, q, s, "x" if s == "failed" else None) for i, k, q, s in jobs]


class _Recorder:
    """Stands for a Querier: records the ListJobs* method the listing calls, and its arguments."""

    def __init__(self) -> None:
        self.called: list[tuple[str, dict[str, object]]] = []

    def __getattr__(self, name: str) -> object:
        def call(**arguments: object) -> list[object]:
            self.called.append((name, arguments))
            return []

        return call


def picked(fs: dict[str, str]) -> tuple[str, dict[str, object]]:
    """The name of the query the listing picks for the filters fs, and its parameters."""
    recorder = _Recorder()
    list_page(cast(ListingQueries[object], recorder), fs)
    [(name, arguments)] = recorder.called
    return name.upper(), arguments


def query_of(module: object, fs: dict[str, str]) -> str:
    sql: str = getattr(module, picked(fs)[0])
    return sql


# --- SQLite ---------------------------------------------------------------------------------


def sqlite_insert(conn: sqlite3.Connection, jobs: list[tuple[str, str, str, str]]) -> None:
    conn.executemany(
        "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at, created_at,"
        f" updated_at) VALUES (?, ?, ?, ?, ?, '{{}}', '{T}', '{T}', '{T}')",
        rows(jobs),
    )
    conn.commit()


def list_page(q: ListingQueries[object], fs: dict[str, str]) -> Sequence[object]:
    """The page the store reads for the filters fs, from the query it picks."""
    return listing.list_page(
        q,
        before=1 << 62,
        status=fs.get("status"),
        kind=fs.get("kind"),
        queue=fs.get("queue"),
        max_jobs=LIMIT,
    )


def sqlite_steps(conn: sqlite3.Connection, fs: dict[str, str]) -> tuple[int, int]:
    """(steps, rows) of one page: the VM steps it took and the rows it returned."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        found = list_page(sqlite_jobs.Querier(conn), fs)
    finally:
        conn.set_progress_handler(None, 1)
    return steps, len(found)


def sqlite_plan(conn: sqlite3.Connection, fs: dict[str, str]) -> list[str]:
    sql = query_of(sqlite_jobs, fs)
    count = max(int(n) for n in re.findall(r"\?(\d+)", sql))
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, [1] * count)]


# The indexes of the statuses whose rows are few (running) or not finished
# (queued, ready or scheduled), which a listing may read whole and sort.
UNFINISHED = ("jobs_running", "jobs_queued", "jobs_scheduled")


def assert_reads_in_order(fs: dict[str, str], plan: list[str]) -> None:
    """Only running or queued rows, read from their own indexes, are scanned and sorted."""
    for n, step in enumerate(plan):
        if "TEMP B-TREE" in step:
            assert any(name in " ".join(plan[:n]) for name in UNFINISHED), (fs, plan)
        if step.startswith("SCAN") and "subquery" not in step:
            assert any(name in step for name in UNFINISHED), (fs, plan)


def test_each_sqlite_page_reads_the_same_with_ten_times_the_rows_that_do_not_match(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        sqlite_insert(conn, old_jobs())
        sqlite_insert(conn, new_jobs(2_000, 0))
        conn.execute("ANALYZE")
        before = {str(fs): sqlite_steps(conn, fs) for fs in FILTERS + RUNNING + COMMON}
        sqlite_insert(conn, new_jobs(20_000, 2_000))
        conn.execute("ANALYZE")
        for fs in FILTERS + RUNNING + COMMON:
            steps, found = sqlite_steps(conn, fs)
            small_steps, small_found = before[str(fs)]
            assert found == small_found == LIMIT, fs
            # A scan would take about ten times the steps.
            assert steps <= small_steps * 1.2 + 50, (fs, small_steps, steps)
            assert_reads_in_order(fs, sqlite_plan(conn, fs))
    finally:
        conn.close()


class Listed(Protocol):
    """What the listing's rows have in common, which this test reads."""

    @property
    def id(self) -> str: ...

    @property
    def seq(self) -> int: ...


def test_each_sqlite_listing_pages_through_what_matches_newest_first(
    tmp_path: pathlib.Path,
) -> None:
    """Every status with every kind and queue filter: three keyset pages, as a scan finds them."""
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    jobs = old_jobs() + new_jobs(300, 0)
    conn = sqlite3.connect(path)
    try:
        sqlite_insert(conn, jobs)
        q = cast(ListingQueries[Listed], sqlite_jobs.Querier(conn))
        for status, kind, queue in itertools.product(
            [None, *STATUSES], [None, "report"], [None, "mail"]
        ):
            want = [
                job_id
                for job_id, k, qu, st in reversed(jobs)
                if status in (None, st) and kind in (None, k) and queue in (None, qu)
            ][:21]
            got: list[str] = []
            before = 1 << 62
            for _ in range(3):
                page = listing.list_page(
                    q, before=before, status=status, kind=kind, queue=queue, max_jobs=7
                )
                got += [row.id for row in page]
                before = page[-1].seq if page else 0
            assert got == want, (status, kind, queue)
    finally:
        conn.close()


# --- PostgreSQL -----------------------------------------------------------------------------


def read_rows(plan: dict[str, object]) -> int:
    """The rows the plan's nodes read from jobs: returned or removed by a filter, every loop."""
    total = 0
    if "Relation Name" in plan:
        loops = int(str(plan.get("Actual Loops", 1)))
        returned = float(str(plan.get("Actual Rows", 0)))
        removed = float(str(plan.get("Rows Removed by Filter", 0)))
        total += int((returned + removed) * loops)
    for child in plan.get("Plans", []):  # type: ignore[attr-defined]
        total += read_rows(child)
    return total


def test_each_postgres_page_reads_about_its_page(pg_url: str) -> None:
    import psycopg

    jobtable.Store.open(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at, created_at,"
                " updated_at) VALUES (%s, %s, %s, %s, %s, '{}', %s, %s, %s)",
                [(*row, T, T, T) for row in rows(old_jobs() + new_jobs(20_000, 0))],
            )
        conn.execute("ANALYZE jobs")
        for fs in FILTERS + RUNNING + COMMON:
            sql = query_of(pg_jobs, fs)
            params = picked(fs)[1]
            [[result]] = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + sql,
                params,
            ).fetchall()
            plan = json.loads(result) if isinstance(result, str) else result
            top = plan[0]["Plan"]
            assert top["Actual Rows"] == LIMIT, fs
            # At most six pages of seqs (one a status) from an index, then the
            # row of each, against 21,000 rows; and every running row
            # (jobs_running) when running jobs are listed, which are few: as
            # many as workers. A kind and a queue read the kind's jobs and
            # keep the queue's: half of them here.
            running = sum(s == "running" for *_, s in old_jobs())
            pages = 24 if {"kind", "queue"} <= fs.keys() else 12
            if fs.get("status") == "succeeded" and len(fs) > 1:
                # The old jobs of kind or queue hold every status: one in six is the page's.
                pages *= 6
            queued = sum(s == "queued" for *_, s in old_jobs())
            unfinished = {"running": running, "queued": queued}
            limit = pages * LIMIT + unfinished.get(fs.get("status", "running"), 0)
            assert read_rows(top) <= limit, (fs, json.dumps(top, indent=1))


def test_list_jobs_finds_the_same_jobs_under_each_filter_set(store: jobtable.Store) -> None:
    kinds = [jobtable.Kind(name, dict[str, int], dict[str, int]) for name in ("report", "ping")]
    ids = {
        (kind.name, queue): [kind.enqueue(store, {"n": n}, queue=queue) for n in range(3)]
        for kind in kinds
        for queue in ("mail", "default")
    }
    cancelled = ids[("report", "mail")][1]
    store.cancel(cancelled)
    for fs in FILTERS:
        # The filters' status is "failed": no job failed. Compare with "cancelled" too.
        for status in [None] if "status" not in fs else ["failed", "cancelled"]:
            chosen = {**fs, **({} if status is None else {"status": status})}
            expected = [
                job_id
                for (kind_name, queue), group in ids.items()
                for job_id in group
                if chosen.get("kind", kind_name) == kind_name
                and chosen.get("queue", queue) == queue
                and chosen.get("status", store.inspect(job_id).status)
                == store.inspect(job_id).status
            ]
            seqs = {job_id: store.inspect(job_id).seq for job_id in expected}
            newest_first = sorted(expected, key=seqs.__getitem__, reverse=True)
            got = [r.id for r in store.list_jobs(**chosen, limit=100)]  # type: ignore[arg-type]
            assert got == newest_first, chosen
            # Keyset pages of 2 give the same jobs.
            paged: list[str] = []
            before = None
            while page := store.list_jobs(**chosen, limit=2, before=before):
                paged += [r.id for r in page]
                before = page[-1].seq
            assert paged == newest_first, chosen
    assert [r.id for r in store.list_jobs(status="cancelled", kind="report", queue="mail")] == [
        cancelled
    ]


# --- Listing by tag -------------------------------------------------------------------------
#
# The old jobs carry tags; the newer ones carry another tag or none. A page by
# tag must read job_tags's range of its tag in seq order, whatever the rows
# without it: its cost does not grow with them.

TAG_FILTERS: list[dict[str, str]] = [{}, {"status": "failed"}, {"kind": "report"}]


def tagged(jobs: list[tuple[str, str, str, str]], tags: str) -> list[tuple[object, ...]]:
    return [(*row, tags) for row in rows(jobs)]


def sqlite_insert_tagged(
    conn: sqlite3.Connection, jobs: list[tuple[str, str, str, str]], tags: str
) -> None:
    conn.executemany(
        "INSERT INTO jobs (id, kind, queue, status, error, tags, payload, run_at, created_at,"
        f" updated_at) VALUES (?, ?, ?, ?, ?, ?, '{{}}', '{T}', '{T}', '{T}')",
        tagged(jobs, tags),
    )
    conn.commit()


def tag_page(q: ListingQueries[object], fs: dict[str, str]) -> Sequence[object]:
    return listing.list_page(
        q,
        before=1 << 62,
        status=fs.get("status"),
        kind=fs.get("kind"),
        queue=fs.get("queue"),
        tag="team:a",
        max_jobs=LIMIT,
    )


def sqlite_tag_steps(conn: sqlite3.Connection, fs: dict[str, str]) -> tuple[int, int]:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        found = tag_page(sqlite_jobs.Querier(conn), fs)
    finally:
        conn.set_progress_handler(None, 1)
    return steps, len(found)


def test_a_sqlite_page_by_tag_reads_the_tags_index_whatever_the_rows_without_it(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        sqlite_insert_tagged(conn, old_jobs(), '["team:a","nightly"]')
        sqlite_insert_tagged(conn, new_jobs(2_000, 0), '["team:b"]')
        conn.execute("ANALYZE")
        before = {str(fs): sqlite_tag_steps(conn, fs) for fs in TAG_FILTERS}
        sqlite_insert_tagged(conn, new_jobs(10_000, 2_000), '["team:b"]')
        sqlite_insert_tagged(conn, new_jobs(10_000, 12_000), "[]")
        conn.execute("ANALYZE")
        for fs in TAG_FILTERS:
            steps, found = sqlite_tag_steps(conn, fs)
            small_steps, small_found = before[str(fs)]
            assert found == small_found == LIMIT, fs
            assert steps <= small_steps * 1.2 + 50, (fs, small_steps, steps)
        for sql in (sqlite_jobs.LIST_JOBS_BY_TAG, sqlite_jobs.LIST_JOBS_BY_TAG_FILTERED):
            count = max(int(n) for n in re.findall(r"\?(\d+)", sql))
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, [1] * count)]
            # job_tags's primary key, in order (no sort), then each job by its seq.
            assert plan[0].startswith("SEARCH job_tags USING PRIMARY KEY (tag=? AND seq<?)"), plan
            assert plan[1].startswith("SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)"), plan
            assert not any("TEMP B-TREE" in step for step in plan), plan
    finally:
        conn.close()


def test_a_claim_and_a_finish_write_no_tag_entry(tmp_path: pathlib.Path) -> None:
    """job_tags changes only on insert and delete: a claim's and a finish's update leave it."""
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        sqlite_insert_tagged(conn, [("j1", "report", "mail", "queued")], '["team:a"]')
        changes = conn.total_changes
        conn.execute("UPDATE jobs SET status = 'running', attempt = 1 WHERE id = 'j1'")
        conn.execute("UPDATE jobs SET status = 'succeeded', result = '1' WHERE id = 'j1'")
        # Two rows changed: the job's, twice; no trigger wrote a job_tags row.
        assert conn.total_changes - changes == 2
    finally:
        conn.close()


def test_a_postgres_page_by_tag_reads_about_its_page(pg_url: str) -> None:
    import psycopg

    jobtable.Store.open(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        insert = (
            "INSERT INTO jobs (id, kind, queue, status, error, tags, payload, run_at, created_at,"
            " updated_at) VALUES (%s, %s, %s, %s, %s, %s, '{}', %s, %s, %s)"
        )
        with conn.cursor() as cur:
            cur.executemany(
                insert,
                [(*row, T, T, T) for row in tagged(old_jobs(), '["team:a","nightly"]')],
            )
            cur.executemany(
                insert, [(*row, T, T, T) for row in tagged(new_jobs(20_000, 0), '["team:b"]')]
            )
        conn.execute("ANALYZE jobs")
        conn.execute("ANALYZE job_tags")
        for fs in TAG_FILTERS:
            sql = pg_jobs.LIST_JOBS_BY_TAG_FILTERED if fs else pg_jobs.LIST_JOBS_BY_TAG
            params: dict[str, object] = {"before": 1 << 62, "max_jobs": LIMIT, "tag": "team:a"}
            if fs:
                params = {"status": None, "kind": None, "queue": None, **params, **fs}
            [[result]] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
            plan = json.loads(result) if isinstance(result, str) else result
            top = plan[0]["Plan"]
            assert top["Actual Rows"] == LIMIT, fs
            text = json.dumps(top)
            assert '"Index Name": "job_tags_pkey"' in text, text
            # The tag's entries in seq order, and the job of each: the page's,
            # plus those a filter skips (five in six here for a status).
            assert read_rows(top) <= 7 * 2 * LIMIT, (fs, json.dumps(top, indent=1))


def test_a_postgres_claim_and_finish_write_no_tag_entry(pg_url: str) -> None:
    """The triggers fire on insert and delete only: status updates write no tag row."""
    import psycopg

    jobtable.Store.open(pg_url).close()
    counts = (
        "SELECT n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_xact_user_tables"
        " WHERE relid = 'job_tags'::regclass"
    )
    with psycopg.connect(pg_url) as conn:
        # The session's counts of writes to job_tags, read before and after
        # each step within one transaction (pending counts are per session).
        start = conn.execute(counts).fetchone()
        conn.execute(
            "INSERT INTO jobs (id, kind, status, tags, payload, run_at, created_at, updated_at)"
            " VALUES ('j1', 'report', 'queued', '[\"team:a\",\"b\"]', '{}', %s, %s, %s)",
            (T, T, T),
        )
        inserted = conn.execute(counts).fetchone()
        conn.execute("UPDATE jobs SET status = 'running', attempt = 1 WHERE id = 'j1'")
        conn.execute("UPDATE jobs SET status = 'succeeded', result = '1' WHERE id = 'j1'")
        finished = conn.execute(counts).fetchone()
        conn.execute("DELETE FROM jobs WHERE id = 'j1'")
        deleted = conn.execute(counts).fetchone()
    assert start is not None
    assert inserted is not None
    assert deleted is not None
    assert [b - a for a, b in zip(start, inserted, strict=True)] == [2, 0, 0]
    assert finished == inserted
    assert [b - a for a, b in zip(inserted, deleted, strict=True)] == [0, 0, 2]
