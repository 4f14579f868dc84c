"""The dashboard shows a payload's and a result's secrets masked, on every page."""

import base64
import pathlib

import pydantic
from dashboard_server import Client, serve

import jobtable
from jobtable.testing import drain

PLANTED = "planted-token-dash-8a1c"
K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr


calls = jobtable.Kind("call", Call, Call)


async def test_no_page_shows_a_secret_of_a_payload_or_a_result(tmp_path: pathlib.Path) -> None:
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(calls)
        async def echo(ctx: jobtable.JobContext[Call], payload: Call) -> Call:
            return payload

        job_id = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
        await drain(runner)
        with serve(jobtable.dashboard(store)) as base:
            client = Client(base)
            pages = [client.get(path) for path in ("/", "/jobs", f"/jobs/{job_id}")]
    assert [page.status for page in pages] == [200, 200, 200]
    assert all(PLANTED not in page.text for page in pages)
    assert pages[2].text.count("**********") == 2  # the payload and the result
