"""Store.workflow's two reads seek the workflow's own rows, whatever else the table holds.

SQLite's EXPLAIN QUERY PLAN names the index each read searches: the jobs by
jobs_workflow, their edges by job_deps_job. A scan of the jobs table would
make the workflow page cost the whole table.
"""

import pathlib
import sqlite3

import jobtable
from jobtable.db.sqlite import workflows


def plan(conn: sqlite3.Connection, query: str) -> list[str]:
    return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", ("some-workflow",))]


def test_the_graph_reads_search_the_workflow_s_index(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        assert plan(conn, workflows.LIST_WORKFLOW_JOBS) == [
            "SEARCH jobs USING INDEX jobs_workflow (workflow_id=?)"
        ]
        assert plan(conn, workflows.LIST_WORKFLOW_DEPS) == [
            "SEARCH jobs USING INDEX jobs_workflow (workflow_id=?)",
            "SEARCH job_deps USING COVERING INDEX job_deps_job (job=?)",
        ]
    finally:
        conn.close()
