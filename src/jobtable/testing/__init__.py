"""Test helpers for code that enqueues and handles jobtable jobs, the way River has rivertest.

- ``await drain(runner)`` (``drain_sync`` in sync tests) runs every job the
  runner would run, inline, and returns their records;
- ``assert_enqueued(store, kind, payload)`` and ``assert_not_enqueued``
  check what was enqueued, by kind and payload, exact, partial (``like=``)
  or by predicate (``where=``), with a message listing what was enqueued
  instead;
- ``FrozenClock`` is a store clock that stands still until the test moves it,
  for scheduled jobs and retries;
- the pytest plugin (loaded wherever jobtable is installed) gives the
  fixtures ``jobtable_store``, ``jobtable_clock`` and ``jobtable_target``.
"""

from jobtable.testing._assertions import (
    ANY,
    Criteria,
    aassert_enqueued,
    aassert_not_enqueued,
    aenqueued,
    assert_enqueued,
    assert_not_enqueued,
    enqueued,
)
from jobtable.testing._clock import FrozenClock
from jobtable.testing._drain import drain, drain_sync

__all__ = [
    "ANY",
    "Criteria",
    "FrozenClock",
    "aassert_enqueued",
    "aassert_not_enqueued",
    "aenqueued",
    "assert_enqueued",
    "assert_not_enqueued",
    "drain",
    "drain_sync",
    "enqueued",
]
