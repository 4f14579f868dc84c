"""The package people install: ``python -m build`` makes an sdist and a wheel that work.

The module builds both once, the way a release would (``python -m build``
builds the sdist, then the wheel from the unpacked sdist, so the wheel also
proves the sdist holds what a build needs). It then checks what each holds,
and installs the wheel with its ``postgres`` extra into a fresh virtual
environment, where the demo runs from a directory outside the checkout.
"""

import email
import email.message
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

# The first test also waits for the build and the venv: minutes on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jobtable"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION: str = PYPROJECT["project"]["version"]

SDIST_NEEDS = [
    # To build and install.
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    # To regenerate src/jobtable/db (make generate, make generate-check).
    "Makefile",
    "sqlc.yaml",
    "schema.sql",
    "postgres/schema.sql",
    "plugin/sqlc-gen-jobtable",
]
"""Files the sdist must hold, beside every file of the package, the queries and the plugin."""


@dataclass(frozen=True)
class Dist:
    """The sdist and the wheel that one ``python -m build`` made."""

    sdist: pathlib.Path
    wheel: pathlib.Path


def run(args: list[str], cwd: pathlib.Path, timeout: float = 600) -> str:
    """Runs args in cwd without the checkout on PYTHONPATH; returns stdout, fails with both."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{args} exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    return done.stdout


def package_files() -> set[str]:
    """Every file under src/jobtable but caches, as a path inside the wheel."""
    return {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """One ``python -m build`` of the checkout, in an isolated build env as pip would."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return Dist(sdist=sdist, wheel=wheel)


@pytest.fixture(scope="module")
def sdist_tree(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The unpacked sdist's top directory."""
    out = tmp_path_factory.mktemp("sdist")
    with tarfile.open(dist.sdist) as tar:
        tar.extractall(out, filter="data")
    (top,) = out.iterdir()
    return top


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """The python of a fresh venv with the wheel and its postgres extra installed from PyPI."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True, clear=True)
    python = env_dir / "bin" / "python"
    # pip's cache is the user's own, so a second run downloads nothing.
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"jobtable[postgres] @ {dist.wheel.as_uri()}",
        ],
        cwd=env_dir,
    )
    yield python
    shutil.rmtree(env_dir, ignore_errors=True)


def wheel_metadata(wheel: pathlib.Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(f"jobtable-{VERSION}.dist-info/METADATA").decode()
    return email.message_from_string(text)


def test_build_names_both_files_after_the_pyproject_version(dist: Dist) -> None:
    assert dist.sdist.name == f"jobtable-{VERSION}.tar.gz"
    assert dist.wheel.name == f"jobtable-{VERSION}-py3-none-any.whl"


def test_the_wheel_holds_exactly_the_package_files(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as zf:
        names = {n for n in zf.namelist() if not n.startswith(f"jobtable-{VERSION}.dist-info/")}
    # Any package data added under src/jobtable (py.typed, assets) must ship.
    assert names == package_files()


def test_the_wheel_holds_the_generated_code_schemas_and_py_typed(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as zf:
        names = set(zf.namelist())
    assert {
        "jobtable/py.typed",
        "jobtable/db/sqlite/schema.py",
        "jobtable/db/sqlite/jobs.py",
        "jobtable/db/postgres/schema.py",
        "jobtable/db/postgres/jobs.py",
    } <= names


def test_the_wheel_declares_the_pytest_plugin(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as zf:
        text = zf.read(f"jobtable-{VERSION}.dist-info/entry_points.txt").decode()
    assert "[pytest11]\njobtable.testing.pytest_plugin = jobtable.testing.pytest_plugin" in text


def test_the_wheel_ships_every_dashboard_asset(dist: Dist) -> None:
    assets = [PACKAGE / "_dashboard" / "templates", PACKAGE / "_dashboard" / "static"]
    wanted = {
        p.relative_to(PACKAGE.parent).as_posix()
        for folder in assets
        for p in folder.rglob("*")
        if p.is_file()
    }
    assert {
        "jobtable/_dashboard/templates/base.html",
        "jobtable/_dashboard/templates/overview.html",
        "jobtable/_dashboard/templates/job.html",
        "jobtable/_dashboard/static/dashboard.css",
        "jobtable/_dashboard/static/dashboard.js",
    } <= wanted
    with zipfile.ZipFile(dist.wheel) as zf:
        assert wanted <= set(zf.namelist())


def test_the_dashboard_extra_requires_starlette_jinja2_and_uvicorn(dist: Dist) -> None:
    requires = wheel_metadata(dist.wheel).get_all("Requires-Dist") or []
    dashboard = [r for r in requires if r.endswith("extra == 'dashboard'")]
    names = sorted(r.split(";")[0].split("<")[0].split(">")[0] for r in dashboard)
    assert names == ["jinja2", "starlette", "uvicorn"]


def test_the_wheel_declares_the_mit_license_and_ships_its_text(dist: Dist) -> None:
    meta = wheel_metadata(dist.wheel)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    with zipfile.ZipFile(dist.wheel) as zf:
        shipped = zf.read(f"jobtable-{VERSION}.dist-info/licenses/LICENSE")
    assert shipped == (ROOT / "LICENSE").read_bytes()


def test_the_postgres_extra_requires_psycopg_with_its_bundled_libpq(dist: Dist) -> None:
    requires = wheel_metadata(dist.wheel).get_all("Requires-Dist") or []
    postgres = sorted(r for r in requires if r.endswith("extra == 'postgres'"))
    assert [r.split(";")[0].split("<")[0].split(">")[0] for r in postgres] == [
        "psycopg[binary]",
    ]


def test_the_sdist_holds_the_package_and_what_generation_reads(sdist_tree: pathlib.Path) -> None:
    for name in SDIST_NEEDS:
        assert (sdist_tree / name).is_file(), name
    for source in [*package_files()]:
        assert (sdist_tree / "src" / source).is_file(), source
    for directory in ["queries", "postgres/queries", "plugin/sqlc_gen_jobtable"]:
        wanted = sorted(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / directory).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )
        assert wanted, directory
        for name in wanted:
            assert (sdist_tree / name).is_file(), name


def test_generate_check_passes_in_the_unpacked_sdist(sdist_tree: pathlib.Path) -> None:
    # sqlc.yaml runs ./plugin/sqlc-gen-jobtable: the sdist keeps its execute bit.
    assert os.access(sdist_tree / "plugin" / "sqlc-gen-jobtable", os.X_OK)
    sqlc = ROOT / ".venv" / "bin" / "sqlc"
    env_path = os.pathsep.join([str(ROOT / ".venv" / "bin"), os.environ.get("PATH", "")])
    done = subprocess.run(
        [str(sqlc), "diff"],
        cwd=sdist_tree,
        env={**os.environ, "PATH": env_path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_installed_package_is_the_venvs_and_reports_its_version(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = run(
        [
            str(installed),
            "-I",
            "-c",
            "import jobtable; print(jobtable.__file__, jobtable.__version__)",
        ],
        cwd=tmp_path,
    )
    where, version = out.split()
    assert pathlib.Path(where).is_relative_to(installed.parent.parent)
    assert not pathlib.Path(where).is_relative_to(ROOT)
    assert version == VERSION


def test_the_installed_console_script_runs_the_command(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = run([str(installed.with_name("jobtable")), "migrate", "--store", "x.db"], cwd=tmp_path)
    assert "created the schema" in out


def test_a_fresh_venv_runs_the_demo_from_outside_the_checkout(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    demo = tmp_path / "demo.py"
    shutil.copy2(ROOT / "examples" / "demo.py", demo)
    out = run([str(installed), "-I", str(demo), str(tmp_path / "demo.db")], cwd=tmp_path)
    assert "succeeded," in out
    assert "is only in the log (stderr), in no file of the database" in out


def test_the_postgres_extra_runs_without_a_system_libpq(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # "binary" is psycopg-binary's libpq, bundled in its wheel; "python" would
    # mean psycopg had loaded the system's libpq, which a machine may lack.
    out = run(
        [str(installed), "-I", "-c", "import psycopg; print(psycopg.pq.__impl__)"], cwd=tmp_path
    )
    assert out.strip() == "binary"


ON_POSTGRESQL = """\
import asyncio
import sys

import jobtable


def double(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload * 2


async def main(url: str) -> None:
    with jobtable.Store.open(url) as store:
        runner = jobtable.Runner(store, workers=1)
        kind = runner.register("double", double)
        job_id = await kind.aenqueue(21)
        await runner.start()
        for _ in range(6000):  # a generous limit: 60 s on a loaded machine
            job = await kind.aget(job_id)
            if job.status in (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED):
                break
            await asyncio.sleep(0.01)
        runner.stop()
        await runner.wait()
        print(job.status.value, job.result)


asyncio.run(main(sys.argv[1]))
"""
"""A script that runs one job to completion on the PostgreSQL store given by URL."""


def test_the_installed_package_runs_a_job_on_postgresql(
    installed: pathlib.Path, pg_url: str, tmp_path: pathlib.Path
) -> None:
    script = tmp_path / "on_postgresql.py"
    script.write_text(ON_POSTGRESQL, encoding="utf-8")
    out = run([str(installed), "-I", str(script), pg_url], cwd=tmp_path)
    assert out.split() == ["succeeded", "42"]
