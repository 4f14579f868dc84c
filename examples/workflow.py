"""A workflow: fetch pages, parse each with the fetched result, then one callback for the batch.

It shows:

- ``jobtable.Workflow`` and ``wf.add(kind, payload, after=[...])``: each
  parse job takes its fetch job's result as its payload (``wf.add(parse,
  fetched)``), which mypy checks against the kinds' types;
- a batch: one final job ``after=`` every parse with ``on_failure="run"``,
  which runs once all ended, whatever their outcome, and counts them by
  status with ``ctx.dependencies()`` and reads the parsed results with
  ``ctx.results(parse)``;
- a failing fetch (``jobtable.Failure``) cancels its parse job, with the
  reason in the parse job's record.

Run it with ``.venv/bin/python examples/workflow.py [path/to/workflow.db]``.
"""

import asyncio
import collections
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel

import jobtable


class Page(BaseModel):
    """A fetched page: the result of fetch, the payload of parse."""

    url: str
    text: str


class Words(BaseModel):
    """What parse found in a page."""

    url: str
    words: int


class Report(BaseModel):
    """The batch's callback: how many pages ended in each status, and the words parsed."""

    statuses: dict[str, int]
    words: int


fetch = jobtable.Kind("fetch", str, Page)
parse = jobtable.Kind("parse", Page, Words)
report = jobtable.Kind("report", str, Report)

URLS = ["https://example.com/a", "https://example.com/b", "https://example.com/broken"]


def make_runner(store: jobtable.Store, reported: asyncio.Event) -> jobtable.Runner:
    """A runner with a handler for each kind; reported is set when the report was made."""
    runner = jobtable.Runner(store, workers=2)

    @runner.handler(fetch)
    async def do_fetch(ctx: jobtable.JobContext[Page], url: str) -> Page:
        if url.endswith("broken"):
            raise jobtable.Failure(f"cannot fetch {url}")
        return Page(url=url, text=f"the words of {url}")

    @runner.handler(parse)
    async def do_parse(ctx: jobtable.JobContext[Words], page: Page) -> Words:
        return Words(url=page.url, words=len(page.text.split()))

    @runner.handler(report)
    async def do_report(ctx: jobtable.JobContext[Report], batch: str) -> Report:
        statuses = collections.Counter(d.status for d in await ctx.adependencies())
        words = sum(w.words for w in await ctx.aresults(parse))
        reported.set()
        return Report(statuses=dict(statuses), words=words)

    return runner


async def main(path: Path) -> None:
    with jobtable.Store.open(path) as store:
        wf = jobtable.Workflow("crawl")
        parsed = []
        for url in URLS:
            fetched = wf.add(fetch, url)
            parsed.append(wf.add(parse, fetched))  # the fetched Page becomes parse's payload
        done = wf.add(report, "crawl", after=[jobtable.After(p, on_failure="run") for p in parsed])
        await wf.aenqueue(store)

        reported = asyncio.Event()
        runner = make_runner(store, reported)
        await runner.start()
        await asyncio.wait_for(reported.wait(), timeout=60)
        runner.stop()  # a graceful stop records the report's outcome before it ends
        await runner.wait()

        result = report.get(store, done.id).result
        assert result is not None
        print(f"report: {result.model_dump_json()}")
        broken = store.inspect(parsed[-1].id)
        print(f"{broken.kind} of the broken page: {broken.status} ({broken.cancelled_because})")
        assert result.statuses == {"succeeded": 2, "cancelled": 1}


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "workflow.db"
    asyncio.run(main(target))
