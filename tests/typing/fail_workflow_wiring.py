"""Misuse that must fail: a workflow whose wiring does not fit the kinds' types.

A node's result is a later node's payload only when it is the later kind's
payload type. Each line that must fail ends with ``# E: <error code>``.
"""

from pydantic import BaseModel

import jobtable


class Fetched(BaseModel):
    url: str


class Parsed(BaseModel):
    words: int


fetch = jobtable.Kind("fetch", str, Fetched)
parse = jobtable.Kind("parse", Fetched, Parsed)
index = jobtable.Kind("index", Parsed, int)


def wiring() -> None:
    wf = jobtable.Workflow("ingest")
    fetched = wf.add(fetch, "https://example.com")
    parsed = wf.add(parse, fetched)
    wf.add(index, parsed)
    wf.add(index, fetched)  # E: misc
    wf.add(parse, "https://example.com")  # E: misc
    wf.add(index, Parsed(words=1), after=["some-id"])  # E: list-item
    wf.add(index, Parsed(words=1), after=[jobtable.After(parsed, on_failure="skip")])  # E: arg-type
    # A workflow's job takes every job's options, but neither uniqueness nor conn.
    wf.add(index, parsed, tags=["a"], meta={"m": 1}, partition_key="k", sequence_key="s")
    wf.add(index, parsed, unique=None)  # E: call-overload
    wf.add(index, parsed, conn=None)  # E: call-overload
