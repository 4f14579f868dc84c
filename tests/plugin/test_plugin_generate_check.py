"""``make generate-check`` (``sqlc diff``) catches a checked-in db package that drifted.

Each test copies what generation reads and writes (sqlc.yaml, the schemas,
the queries, the plugin and src/jobtable/db) into a temporary directory and
runs sqlc there, so the repository itself is never touched.

``sqlc diff`` compares only the files a generation produces: it does not
notice a stale extra file left in an output directory (pinned below), so a
test here also regenerates from scratch and compares the file lists.
"""

import pathlib
import re
import shutil

import pytest
from plugin_harness import ROOT, read_tree, run_sqlc

pytestmark = pytest.mark.slow  # every test here runs sqlc

INPUTS = ["sqlc.yaml", "schema.sql", "queries", "postgres", "upgrades", "plugin"]
GENERATED = pathlib.Path("src/jobtable/db")


def _copy_project(destination: pathlib.Path) -> pathlib.Path:
    destination.mkdir()
    for name in INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, destination / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        elif source.is_file():
            shutil.copy2(source, destination / name)
    shutil.copytree(
        ROOT / GENERATED, destination / GENERATED, ignore=shutil.ignore_patterns("__pycache__")
    )
    return destination


def _output_dirs(project: pathlib.Path) -> list[pathlib.Path]:
    """The out directories of sqlc.yaml's codegen entries."""
    outs = re.findall(r"^\s*out:\s*(\S+)\s*$", (project / "sqlc.yaml").read_text(), re.MULTILINE)
    assert outs, "sqlc.yaml names no out directory"
    return [pathlib.Path(out) for out in outs]


@pytest.fixture
def project(tmp_path: pathlib.Path) -> pathlib.Path:
    return _copy_project(tmp_path / "project")


def test_generate_check_passes_on_the_checked_in_output(project: pathlib.Path) -> None:
    done = run_sqlc(project, "diff")
    assert done.returncode == 0, done.stdout + done.stderr


def test_generate_check_fails_when_a_query_changes_without_regenerating(
    project: pathlib.Path,
) -> None:
    query_file = sorted((project / "queries").glob("*.sql"))[0]
    text = query_file.read_text()
    name_line = re.search(r"^-- name: \w+ :\w+\n", text, re.MULTILINE)
    assert name_line is not None, f"{query_file.name} has no named query"
    changed = (
        text[: name_line.end()] + "-- Changed without regenerating.\n" + text[name_line.end() :]
    )
    query_file.write_text(changed)
    done = run_sqlc(project, "diff")
    assert done.returncode != 0, "sqlc diff passed although a query changed"
    added = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("+")]
    assert any("Changed without regenerating." in line for line in added), done.stdout + done.stderr


def test_sqlc_diff_does_not_notice_a_stale_extra_file(project: pathlib.Path) -> None:
    # Pins sqlc's behaviour, which the next test makes up for: should sqlc
    # start catching stale files, this fails and the note above can go.
    (project / _output_dirs(project)[0] / "stale.py").write_text("STALE = True\n")
    done = run_sqlc(project, "diff")
    assert done.returncode == 0, done.stdout + done.stderr


def test_checked_in_output_is_exactly_a_fresh_generation(project: pathlib.Path) -> None:
    outs = _output_dirs(project)
    for out in outs:
        shutil.rmtree(project / out, ignore_errors=True)
    done = run_sqlc(project, "generate")
    assert done.returncode == 0, done.stdout + done.stderr
    for out in outs:
        fresh = read_tree(project / out)
        checked_in = read_tree(ROOT / out) if (ROOT / out).is_dir() else {}
        assert sorted(checked_in) == sorted(fresh), f"{out}: run make generate"
        assert checked_in == fresh, f"{out}: run make generate"


@pytest.mark.postgres
def test_generation_checks_jobtables_postgres_queries_on_the_server(
    project: pathlib.Path,
) -> None:
    # Only the server tells that a parameter compared with another before
    # any column gives it a type is deduced as text and as timestamptz:
    # sqlc accepts the query, so the plugin must see the server's URL,
    # which sqlc passes only when sqlc.yaml lists it under the plugin's env.
    queries = project / "postgres" / "queries" / "jobs.sql"
    cast = "@run_at::timestamptz > @now::timestamptz"
    text = queries.read_text()
    assert cast in text, "CreateJob no longer compares run_at with now"
    queries.write_text(text.replace(cast, "@run_at > @now", 1))
    done = run_sqlc(project, "generate")
    assert done.returncode != 0, "generation passed a query the server does not prepare"
    output = done.stdout + done.stderr
    assert "query CreateJob (jobs.sql): its SQL constant does not prepare" in output, output
