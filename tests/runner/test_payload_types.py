"""The payload types the documentation lists, and what a payload that JSON cannot hold becomes.

typing.TypedDict works on every supported Python (pydantic alone needs
typing_extensions.TypedDict before 3.12); a plain dict stores its values as
JSON, so a datetime or a Decimal in it comes back as a string; a NaN or an
infinity is refused, naming where it is.
"""

import datetime
import decimal
import math
import typing

import pytest

import jobtable


class Line(typing.TypedDict):
    sku: str
    count: int


class Order(typing.TypedDict, total=False):
    order_id: typing.Required[int]
    lines: list[Line]
    note: str


class Receipt(typing.TypedDict):
    order_id: int
    at: datetime.datetime


def make_receipt(ctx: jobtable.JobContext[Receipt], payload: Order) -> Receipt:
    assert all(line["count"] > 0 for line in payload.get("lines", []))
    return Receipt(
        order_id=payload["order_id"], at=datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    )


async def test_a_typing_typeddict_is_a_payload_and_a_result_type(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    orders = runner.register("order", make_receipt)
    job_id = orders.enqueue(Order(order_id=7, lines=[Line(sku="a", count=2)]))
    bare = orders.enqueue(Order(order_id=8))  # the keys that are not required may be left out
    assert await runner.run_next() == job_id
    assert await runner.run_next() == bare
    receipt = orders.get(job_id).result
    assert receipt == {"order_id": 7, "at": datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)}
    assert orders.get(bare).status == jobtable.Status.SUCCEEDED


def test_a_typing_typeddict_payload_is_validated_like_any_other(store: jobtable.Store) -> None:
    orders = jobtable.Kind("order", Order, Receipt)
    with pytest.raises(jobtable.PayloadError, match="order_id"):
        orders.enqueue(store, {"lines": []})  # type: ignore[call-overload]
    with pytest.raises(jobtable.PayloadError, match="count"):
        orders.enqueue(store, Order(order_id=1, lines=[{"sku": "a"}]))  # type: ignore[typeddict-item]
    assert store.list_jobs() == []


async def test_a_plain_dict_payload_stores_datetimes_and_decimals_as_json_strings(
    store: jobtable.Store,
) -> None:
    seen: list[dict[str, object]] = []

    def handler(ctx: jobtable.JobContext[int], payload: dict[str, object]) -> int:
        seen.append(payload)
        return 0

    runner = jobtable.Runner(store)
    kind = runner.register("loose", handler)
    at = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    kind.enqueue({"at": at, "amount": decimal.Decimal("1.50"), "pair": (1, 2)})
    await runner.run_next()
    # As the payload types guide says: only a declared type brings them back.
    assert seen == [{"at": "2030-01-02T03:04:05Z", "amount": "1.50", "pair": [1, 2]}]


class Reading(typing.TypedDict):
    sensor: str
    values: list[float]


@pytest.mark.parametrize(
    ("kind", "payload", "where"),
    [
        (jobtable.Kind("number", float, int), math.nan, "the value is"),
        (jobtable.Kind("maybe", float | None, int), math.inf, "the value is"),  # type: ignore[arg-type]
        (
            jobtable.Kind("reading", Reading, int),
            Reading(sensor="s", values=[1.0, -math.inf]),
            "field 'values[1]' is",
        ),
        (jobtable.Kind("loose", dict, int), {"a": {"b": math.nan}}, "field 'a.b' is"),
    ],
)
def test_a_nan_or_infinity_is_refused_naming_where_it_is(
    store: jobtable.Store, kind: jobtable.Kind[object, int], payload: object, where: str
) -> None:
    with pytest.raises(jobtable.PayloadError) as raised:
        kind.enqueue(store, payload)
    message = str(raised.value)
    assert f"{where} a float NaN or infinity, which cannot be stored" in message
    assert "input_value" not in message
    assert store.list_jobs() == []
