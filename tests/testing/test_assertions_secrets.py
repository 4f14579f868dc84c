"""jobtable.testing's assertions on payloads with secrets: compared and shown masked."""

import base64
import pathlib
from collections.abc import Iterator

import pydantic
import pytest

import jobtable
from jobtable.testing import assert_enqueued, assert_not_enqueued

PLANTED = "planted-token-assert-2f9d"
K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr


calls = jobtable.Kind("call", Call, str)


@pytest.fixture
def keyed(tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=K1) as store:
        yield store


def test_a_payload_with_secrets_matches_its_job_with_the_secrets_masked(
    keyed: jobtable.Store,
) -> None:
    job_id = calls.enqueue(keyed, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
    found = assert_enqueued(keyed, calls, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
    assert found.id == job_id
    assert found.payload == {"url": "u", "api_token": "**********"}
    assert_enqueued(keyed, calls, like={"api_token": "**********"})
    assert_not_enqueued(keyed, calls, Call(url="v", api_token=pydantic.SecretStr(PLANTED)))


def test_a_failed_assertion_shows_no_secret(keyed: jobtable.Store) -> None:
    calls.enqueue(keyed, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
    other = Call(url="v", api_token=pydantic.SecretStr(PLANTED + "-other"))
    with pytest.raises(AssertionError) as caught:
        assert_enqueued(keyed, calls, other)
    message = str(caught.value)
    assert PLANTED not in message
    assert '"api_token":"**********"' in message
    with pytest.raises(AssertionError) as caught:
        assert_not_enqueued(keyed, calls)
    assert PLANTED not in str(caught.value)
