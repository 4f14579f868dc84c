"""No span or metric of an instrumented store holds a payload's secret, nor a missing key's."""

import base64
import pathlib

import pydantic

import jobtable
import jobtable.otel
from otel.conftest import Telemetry

PLANTED = "planted-token-otel-4b7e"
K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr


calls = jobtable.Kind("call", Call, str)


async def call(ctx: jobtable.JobContext[str], payload: Call) -> str:
    assert payload.api_token.get_secret_value() == PLANTED
    return "done"


async def test_no_span_holds_a_secret_of_a_run_or_of_a_failure_for_its_key(
    tmp_path: pathlib.Path,
) -> None:
    telemetry = Telemetry()
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        telemetry.instrument(store)
        ran = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
        keyless = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
        runner = jobtable.Runner(store)
        runner.handler(calls)(call)
        assert await runner.run_next() == ran
        jobtable.otel.uninstrument(store)
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys="") as store:
        telemetry.instrument(store)
        runner = jobtable.Runner(store)
        runner.handler(calls)(call)
        assert await runner.run_next() == keyless
        jobtable.otel.uninstrument(store)
        assert store.get(ran).status is jobtable.Status.SUCCEEDED
        # Put back, its attempt unused, for a runner with the key.
        assert (store.get(keyless).status, store.get(keyless).error) == (
            jobtable.Status.QUEUED,
            None,
        )
    assert len(telemetry.spans("run call")) == 2
    assert len(telemetry.spans("enqueue call")) == 2
    assert PLANTED not in telemetry.text()
    telemetry.tracer_provider.shutdown()
    telemetry.meter_provider.shutdown()
