# Every target creates the virtual environment and installs what it needs
# when they are missing: on a fresh machine with only Python, `make check` is
# the whole set-up.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
GENERATED := src/jobtable/db

.PHONY: all check generate generate-check lint format typecheck test test-fast test-django docs demo bench bench-peers screenshots clean

all: check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[postgres,dev]'
	touch $(STAMP)

venv: $(STAMP)

# The plugin prepares every generated SQL constant: on SQLite always, on
# PostgreSQL on the server this names, the test server's (the tests' default
# when JOBTABLE_TEST_POSTGRES_URL is not set), where it also reads the types.
JOBTABLE_TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/test
SQLC_GEN_JOBTABLE_POSTGRES_URL ?= $(JOBTABLE_TEST_POSTGRES_URL)
export SQLC_GEN_JOBTABLE_POSTGRES_URL

# Regenerates the db module from scratch: schema and queries through sqlc and
# our plugin (plugin/), which needs only Python on PATH.
generate: $(STAMP)
	rm -rf $(GENERATED)/sqlite $(GENERATED)/sqlite_upgrade $(GENERATED)/postgres
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/sqlc generate

# Fails when the checked-in db module differs from a fresh generation.
generate-check: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/sqlc diff

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: $(STAMP)
	$(BIN)/mypy src tests plugin/sqlc_gen_jobtable examples bench

# Tests run in parallel on pytest-xdist workers. Most of the suite waits on
# PostgreSQL, child processes and timers, so more workers than cores pay.
TEST_WORKERS ?= 4

# pytest exits 5 when it collected no test: that proves nothing, so it fails
# loudly instead of passing as an empty green.
define run_pytest
	@$(BIN)/pytest -n $(TEST_WORKERS) $(1); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make $@: pytest ran no test" >&2; exit 1; fi; \
	exit $$status
endef

test: $(STAMP)
	$(call run_pytest,)

# The tests that need neither PostgreSQL nor a child process.
test-fast: $(STAMP)
	$(call run_pytest,-m "not postgres and not slow")

# jobtable.contrib.django needs Django 6, which needs Python 3.12 or newer: its
# mypy run and tests (tests/contrib) use a venv of their own, made with the
# first Python >= 3.12 found (PYTHON_DJANGO=... to choose). None found: the
# target says so and passes, except on CI (CI set), where it fails.
PYTHON_DJANGO ?= $(shell for p in python3.14 python3.13 python3.12 $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo $$p; break; }; done)
DJANGO_VENV := .venv-django
DJANGO_STAMP := $(DJANGO_VENV)/.installed
DJANGO_FILES = $(shell find src/jobtable/contrib tests/contrib -name '*.py')

$(DJANGO_STAMP): pyproject.toml
	$(PYTHON_DJANGO) -m venv $(DJANGO_VENV)
	$(DJANGO_VENV)/bin/pip install --quiet --upgrade pip
	$(DJANGO_VENV)/bin/pip install --quiet -e '.[postgres,dev,django]'
	touch $(DJANGO_STAMP)

ifeq ($(PYTHON_DJANGO),)
test-django:
	@echo "make test-django: no Python 3.12 or newer found (Django 6 needs one); set PYTHON_DJANGO" >&2
	@if [ -n "$$CI" ]; then exit 1; fi
else
test-django: $(DJANGO_STAMP)
	$(DJANGO_VENV)/bin/mypy $(DJANGO_FILES)
	@$(DJANGO_VENV)/bin/pytest -n $(TEST_WORKERS) tests/contrib; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make $@: pytest ran no test" >&2; exit 1; fi; \
	exit $$status
endif

# The documentation site: the guides in docs/ and the API reference that
# mkdocstrings reads from the docstrings, built into site/. --strict turns
# every warning into a failure: a broken link or anchor, a page missing from
# the nav, a reference to a name that does not exist.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[postgres,dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

check: lint typecheck generate-check test test-django docs

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# The soak, a long steady run (30 minutes by default), is a command of its
# own and not part of this target: .venv/bin/python -m bench.soak (BENCHMARKS.md, "Soak").
bench: $(STAMP)
	$(BIN)/python -m bench

# jobtable beside huey, procrastinate and pgqueuer on one workload: installs
# the bench extra (pinned peers and profilers) into the venv first.
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[postgres,dev,bench]'
	touch $(BENCH_STAMP)

bench-peers: $(BENCH_STAMP)
	$(BIN)/python -m bench --peers

# Runs the dashboard's browser tests and keeps their screenshots of the
# pages in docs/, which the README and the guides show.
screenshots: $(STAMP)
	JOBTABLE_SCREENSHOTS=1 $(BIN)/pytest -q tests/dashboard/test_dashboard_browser.py \
		tests/dashboard/test_dashboard_queues_browser.py -k sqlite

clean:
	rm -rf $(VENV) $(DJANGO_VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis site

# The sdist and the wheel people install, in dist/ (tests/test_packaging.py
# checks what they hold and installs the wheel into a fresh venv).
.PHONY: dist
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build
