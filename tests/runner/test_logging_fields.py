"""The telemetry guide's logging set-up shows the job id and kind of every record about a job."""

import io
import logging
import re

from doc_blocks import block_holding

import jobtable

GUIDE_BLOCK = block_holding("logging.Formatter(")
"""The guide's set-up (docs/guides/operating/telemetry.md), whose format the test uses."""


def guide_format() -> str:
    """The format string the guide's block passes to logging.Formatter."""
    match = re.search(r'logging\.Formatter\(\s*"([^"]+)"', GUIDE_BLOCK.text)
    assert match, f"{GUIDE_BLOCK.where}: no format string"
    return match[1]


def test_the_guides_format_names_the_job_id_and_kind_fields() -> None:
    assert GUIDE_BLOCK.document.name == "telemetry.md"
    assert "[job_id=%(job_id)s kind=%(kind)s]" in guide_format()
    assert 'defaults={"job_id": "-", "kind": "-"}' in GUIDE_BLOCK.text


async def test_the_guides_formatter_prints_the_job_id_and_kind_of_a_failed_job(
    store: jobtable.Store,
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(guide_format(), defaults={"job_id": "-", "kind": "-"}))
    logger = logging.getLogger("jobtable.test_logging_fields")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:

        async def broken(ctx: jobtable.JobContext[int], payload: int) -> int:
            raise RuntimeError("boom")

        runner = jobtable.Runner(store, logger=logger)
        job_id = runner.register("broken", broken).enqueue(0)
        await runner.run_next()
        logger.info("a record about no job")
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert any("job failed" in line and f"[job_id={job_id} kind=broken]" in line for line in lines)
    assert any(line.endswith("a record about no job [job_id=- kind=-]") for line in lines)
