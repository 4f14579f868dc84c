"""StoreTrouble: a runner's outage is one warning and one line at its end, not one per retry."""

import logging

import pytest

import jobtable
from jobtable._runner.contact import StoreTrouble

LOGGER = "jobtable.test-trouble"


def test_an_outage_logs_one_warning_the_retries_at_debug_and_its_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    trouble = StoreTrouble(logging.getLogger(LOGGER), "r1")
    lost = jobtable.StoreError("connection failed: too many clients already", transient=True)
    trouble.landed()  # no outage: nothing to say
    for doing in ("claim jobs; retrying", "runner heartbeat", "claim jobs; retrying"):
        trouble.failed(doing, lost, backoff=0.1)
    trouble.landed()
    trouble.landed()
    trouble.failed("read cancel requests", lost)
    records = caplog.records
    assert [(r.levelno, r.getMessage().split(" after")[0]) for r in records] == [
        (logging.WARNING, "claim jobs; retrying"),
        (logging.DEBUG, "runner heartbeat"),
        (logging.DEBUG, "claim jobs; retrying"),
        (logging.INFO, "the store answers again"),
        (logging.WARNING, "read cancel requests"),
    ]
    assert "3 failed tries" in records[3].getMessage()
    assert all(r.__dict__["runner"] == "r1" for r in records)
    assert records[0].__dict__["backoff"] == 0.1
    assert records[0].exc_info is not None


def test_an_error_that_is_not_transient_is_logged_in_full_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    trouble = StoreTrouble(logging.getLogger(LOGGER), "r1")
    for _ in range(2):
        trouble.failed("claim jobs; retrying", ValueError("a bug"))
        trouble.failed("claim jobs; retrying", jobtable.StoreError("refused"))
    trouble.landed()
    assert [r.levelno for r in caplog.records] == [logging.ERROR] * 4
    assert all(r.exc_info is not None for r in caplog.records)
