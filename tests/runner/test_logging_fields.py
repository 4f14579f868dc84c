"""The README's logging set-up shows the job id and kind of every record about a job."""

import io
import logging

import jobtable

README_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s [job_id=%(job_id)s kind=%(kind)s]"


async def test_the_readme_formatter_prints_the_job_id_and_kind_of_a_failed_job(
    store: jobtable.Store,
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(README_FORMAT, defaults={"job_id": "-", "kind": "-"}))
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
