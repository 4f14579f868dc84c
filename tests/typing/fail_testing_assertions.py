"""Misuse that must fail: jobtable.testing's assertions given what is not the kind's payload.

Each line that must fail ends with ``# E: <error code>``.
"""

from pydantic import BaseModel

import jobtable
from jobtable.testing import assert_enqueued, assert_not_enqueued


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Archive(BaseModel):
    paths: list[str]


thumbnail = jobtable.Kind("thumbnail", Thumbnail, int)


def misuse(store: jobtable.Store) -> None:
    assert_enqueued(store, thumbnail, Archive(paths=[]))  # E: misc
    assert_enqueued(store, thumbnail, where=lambda payload: bool(payload.paths))  # E: attr-defined
    assert_not_enqueued(store, thumbnail, queue=3)  # E: arg-type
    assert_enqueued(store, thumbnail, Thumbnail(photo_id="p1", size=1), count="1")  # E: arg-type
