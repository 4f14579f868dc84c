"""OpenTelemetry stays optional: only jobtable.otel imports it; the extra needs the API alone."""

import ast
import pathlib
import tomllib

import pytest

import jobtable

PACKAGE = pathlib.Path(jobtable.__file__).parent
ROOT = PACKAGE.parent.parent


def imports_opentelemetry(path: pathlib.Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] == "opentelemetry" for name in names):
            return True
    return False


def test_only_the_otel_modules_import_opentelemetry() -> None:
    importers = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if imports_opentelemetry(path)
    }
    assert importers == {"otel.py", "_otel_metrics.py"}


def test_the_otel_extra_depends_on_the_opentelemetry_api_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [requirement] = project["optional-dependencies"]["otel"]
    assert requirement.startswith("opentelemetry-api")
    assert not any("opentelemetry" in dependency for dependency in project["dependencies"])


async def test_with_no_sdk_configured_the_global_providers_make_jobs_run_as_before(
    store: jobtable.Store,
) -> None:
    import jobtable.otel

    jobtable.otel.instrument(store)  # the API's global providers: no SDK was set up
    try:
        runner = jobtable.Runner(store)

        async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
            return payload * 2

        doubled = runner.register("double", double)
        job_id = doubled.enqueue(21)
        assert await runner.run_next() == job_id
        assert doubled.get(job_id).result == 42
        assert store.counts()["default"] == {jobtable.Status.SUCCEEDED: 1}
    finally:
        jobtable.otel.uninstrument(store)


def test_instrument_names_a_bad_argument(store: jobtable.Store) -> None:
    import jobtable.otel

    with pytest.raises(TypeError, match="want a Store, got str"):
        jobtable.otel.instrument("app.db")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run_parent must be a bool, got 'no'"):
        jobtable.otel.instrument(store, run_parent="no")  # type: ignore[arg-type]
