"""The engines a conformance test runs on, one pytest parameter each.

A module of its own, not conftest.py: tests import it by name, and under
pytest-xdist the name ``conftest`` may resolve to another folder's conftest.
"""

import pytest

ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""SQLite, and PostgreSQL (marked postgres: the tests that need the server)."""
