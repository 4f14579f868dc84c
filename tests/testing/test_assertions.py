"""jobtable.testing's assertions: what was enqueued, by kind and payload, with a useful message."""

import dataclasses

import pydantic
import pytest

import jobtable
from jobtable.testing import (
    aassert_enqueued,
    aassert_not_enqueued,
    aenqueued,
    assert_enqueued,
    assert_not_enqueued,
    drain,
    enqueued,
)


class Thumbnail(pydantic.BaseModel):
    photo_id: str
    size: int


@dataclasses.dataclass
class Email:
    to: str
    tags: list[str]


thumbnail = jobtable.Kind("thumbnail", Thumbnail, str)
email = jobtable.Kind("email", Email, bool)


def test_assert_enqueued_finds_a_job_by_kind_and_exact_payload(store: jobtable.Store) -> None:
    job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=256), queue="media")
    thumbnail.enqueue(store, Thumbnail(photo_id="p2", size=256))
    record = assert_enqueued(store, thumbnail, Thumbnail(photo_id="p1", size=256))
    assert (record.id, record.queue) == (job_id, "media")
    assert assert_enqueued(store, "thumbnail", {"photo_id": "p1", "size": 256}).id == job_id
    assert assert_enqueued(store, thumbnail, queue="media").id == job_id
    assert_enqueued(store, thumbnail, count=2)


def test_a_missing_job_fails_listing_what_was_enqueued_instead(store: jobtable.Store) -> None:
    job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p2", size=512))
    email.enqueue(store, Email(to="a@example.com", tags=[]))
    with pytest.raises(AssertionError) as raised:
        assert_enqueued(store, thumbnail, Thumbnail(photo_id="p1", size=256))
    message = str(raised.value)
    assert "expected a 'thumbnail' job with payload" in message
    assert '{"photo_id":"p1","size":256}' in message
    listed = f"{job_id} queued queue='default' priority=0 payload="
    assert listed + '{"photo_id":"p2","size":512}' in message
    assert "and of other kinds: email (1)" in message


def test_a_store_without_the_kind_says_none_was_enqueued(store: jobtable.Store) -> None:
    with pytest.raises(AssertionError, match="no 'thumbnail' job was enqueued"):
        assert_enqueued(store, thumbnail)


def test_like_matches_part_of_the_stored_payload_recursively(store: jobtable.Store) -> None:
    email.enqueue(store, Email(to="a@example.com", tags=["welcome", "new"]))
    assert_enqueued(store, email, like={"to": "a@example.com"})
    assert_enqueued(store, email, like={"tags": ["welcome", "new"]})
    assert_not_enqueued(store, email, like={"tags": ["welcome"]})
    assert_not_enqueued(store, email, like={"to": "b@example.com"})
    assert_not_enqueued(store, email, like={"cc": None})


def test_where_tests_the_payload_decoded_as_the_kinds_type(store: jobtable.Store) -> None:
    thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=4096))

    def large(payload: Thumbnail) -> bool:
        return payload.size > 1024

    def small(payload: Thumbnail) -> bool:
        return payload.size < 1024

    assert_enqueued(store, thumbnail, where=large)
    with pytest.raises(AssertionError, match="whose payload passes small"):
        assert_enqueued(store, thumbnail, where=small)


def test_count_and_status_narrow_the_match(store: jobtable.Store) -> None:
    for size in (1, 2):
        thumbnail.enqueue(store, Thumbnail(photo_id="p", size=size))
    with pytest.raises(AssertionError, match=r"exactly 1 of a 'thumbnail' job.*; 2 matched"):
        assert_enqueued(store, thumbnail, count=1)
    assert_not_enqueued(store, thumbnail, status=jobtable.Status.SUCCEEDED)


def test_assert_not_enqueued_fails_naming_the_jobs_that_match(store: jobtable.Store) -> None:
    job_id = email.enqueue(store, Email(to="a@example.com", tags=[]))
    with pytest.raises(AssertionError, match=rf"(?s)expected no 'email' job.*1 matched.*{job_id}"):
        assert_not_enqueued(store, email)


def test_bad_arguments_are_refused_naming_them(store: jobtable.Store) -> None:
    with pytest.raises(jobtable.PayloadError, match=r"assert_enqueued: .*thumbnail"):
        assert_enqueued(store, thumbnail, "not a thumbnail")  # type: ignore[misc]
    with pytest.raises(TypeError, match="colour"):
        assert_enqueued(store, thumbnail, colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="count"):
        assert_enqueued(store, thumbnail, count=0)
    with pytest.raises(TypeError, match="Store or a Runner"):
        assert_enqueued("app.db", thumbnail)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Kind or a kind name"):
        assert_enqueued(store, 3)  # type: ignore[arg-type]


async def test_the_async_forms_read_the_same_jobs(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(thumbnail)
    async def make(ctx: jobtable.JobContext[str], payload: Thumbnail) -> str:
        return payload.photo_id

    job_id = await thumbnail.aenqueue(store, Thumbnail(photo_id="p1", size=1))
    await drain(runner)
    record = await aassert_enqueued(runner, thumbnail, status=jobtable.Status.SUCCEEDED)
    assert (record.id, record.result) == (job_id, "p1")
    await aassert_not_enqueued(store, email)
    assert [r.id for r in await aenqueued(store)] == [r.id for r in enqueued(store)] == [job_id]


def test_enqueued_reads_every_job_oldest_first_across_pages(store: jobtable.Store) -> None:
    ids = email.enqueue_many(store, [Email(to=f"{n}@example.com", tags=[]) for n in range(1005)])
    assert [r.id for r in enqueued(store)] == ids
