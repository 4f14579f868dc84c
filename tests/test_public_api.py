"""The public surface: exactly the names jobtable means to export, each one documented.

Everything else lives in ``_``-prefixed modules; a name that appears in or
vanishes from ``jobtable`` is an API change and must show up here.
"""

import ast
import inspect
import itertools
import pathlib
import types

import pytest

import jobtable

EXPECTED = {
    "APPROVAL",
    "Approval",
    "Signal",
    "SignalWait",
    "TimedOut",
    "CallNext",
    "AttemptOutcome",
    "RunnerHooks",
    "Partition",
    "Queue",
    "QueueInfo",
    "WorkflowGraph",
    "WorkflowNode",
    "WorkflowSummary",
    "Rate",
    "Sequence",
    "WaitReason",
    "dashboard",
    "BulkCancel",
    "Health",
    "KindFigures",
    "KindReport",
    "QueueAlarm",
    "QueueHealth",
    "ThroughputPoint",
    "Stats",
    "SchemaState",
    "RunnerInfo",
    "RetryResult",
    "QueueStats",
    "Debounce",
    "DeleteResult",
    "MESSAGE_INTERNAL",
    "MESSAGE_INTERRUPTED",
    "MESSAGE_PAYLOAD_MISMATCH",
    "MESSAGE_TIMED_OUT",
    "AsyncBatchHandler",
    "AsyncHandler",
    "Batch",
    "BatchJob",
    "BatchKind",
    "SyncBatchHandler",
    "AttemptError",
    "WriteBackoff",
    "CancelResult",
    "EnqueueOptions",
    "Enqueueing",
    "EnqueueResult",
    "ExponentialBackoff",
    "Failure",
    "Job",
    "JobContext",
    "JobNotFound",
    "JobOptions",
    "PeriodicOptions",
    "JobFailed",
    "JobCancelled",
    "WaitTimeout",
    "JobRecord",
    "JobStep",
    "JobtableError",
    "Kind",
    "After",
    "Dependency",
    "Node",
    "Workflow",
    "LinkedJob",
    "WorkflowLinks",
    "NotRunning",
    "PayloadError",
    "ResultError",
    "Retry",
    "RetryPolicy",
    "Runner",
    "RunnerError",
    "SecretKeyError",
    "StepError",
    "Status",
    "Store",
    "StoreError",
    "SyncHandler",
    "Unique",
}

PACKAGE = pathlib.Path(jobtable.__file__).parent


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: constants, then classes, then the rest."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def attribute_docstrings() -> dict[str, str]:
    """Maps each module-level name of jobtable's modules, at any depth, to the string below it.

    The generated package ``jobtable.db`` is left out: no public name is defined there.
    """
    docs: dict[str, str] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "db":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, after in itertools.pairwise(body):
            if not (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                continue
            if isinstance(node, ast.Assign):
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [node.target.id]
            else:
                continue
            for target in targets:
                docs[target] = after.value.value
    return docs


def test_all_is_exactly_the_public_names() -> None:
    assert set(jobtable.__all__) == EXPECTED
    assert len(jobtable.__all__) == len(EXPECTED)


def test_all_is_sorted() -> None:
    assert jobtable.__all__ == sorted(jobtable.__all__, key=isort_key)


def test_the_package_exports_nothing_public_beyond_all() -> None:
    public = {
        name
        for name, value in vars(jobtable).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == EXPECTED


def test_every_public_name_exists() -> None:
    for name in jobtable.__all__:
        assert hasattr(jobtable, name), name


def test_the_package_has_a_docstring() -> None:
    assert (jobtable.__doc__ or "").strip()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(jobtable, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        doc = value.__doc__
    else:
        # Constants and type aliases carry the string literal under their assignment.
        doc = attribute_docstrings().get(name)
    assert doc, f"jobtable.{name} has no docstring"
    assert doc.strip(), f"jobtable.{name} has an empty docstring"


def public_methods() -> list[tuple[str, str]]:
    methods = []
    for name in sorted(EXPECTED):
        cls = getattr(jobtable, name)
        if not inspect.isclass(cls):
            continue
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, staticmethod | classmethod):
                value = value.__func__
            if inspect.isfunction(value) or isinstance(value, property):
                methods.append((name, attr))
    return methods


def test_the_main_classes_have_public_methods_to_check() -> None:
    checked = set(public_methods())
    assert {("Runner", "register"), ("Kind", "enqueue"), ("JobContext", "apublish")} <= checked


@pytest.mark.parametrize(("cls", "method"), public_methods())
def test_every_public_method_has_a_docstring(cls: str, method: str) -> None:
    value = inspect.getattr_static(getattr(jobtable, cls), method)
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    assert (value.__doc__ or "").strip(), f"jobtable.{cls}.{method} has no docstring"


def test_the_old_name_of_write_backoff_still_works_and_warns() -> None:
    with pytest.warns(
        DeprecationWarning, match="jobtable.Backoff is deprecated: use jobtable.WriteBackoff"
    ):
        old = jobtable.Backoff
    assert old is jobtable.WriteBackoff


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Backof'"):
        jobtable.Backof  # noqa: B018
