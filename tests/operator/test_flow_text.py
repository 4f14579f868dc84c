"""How operators read and type flow control: WaitReason's words, limits and rates as text."""

import datetime
import pathlib
import re

import pytest

import jobtable
from jobtable._operator import flow_text

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guides" / "flow-control.md"


def test_every_wait_reason_has_its_own_words_and_the_guide_shows_them() -> None:
    texts = {reason: reason.text for reason in jobtable.WaitReason}
    assert len(set(texts.values())) == len(texts)
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", GUIDE.read_text(), re.M)[1:]  # under `waiting`
    assert {jobtable.WaitReason(value): shown for value, shown in rows} == texts


@pytest.mark.parametrize(
    ("text", "limit", "seconds"),
    [("60/1m", 60, 60), ("5/1s", 5, 1), ("90/1h30m", 90, 5400), (" 7/2d ", 7, 172800)],
)
def test_a_rate_reads_as_limit_over_period_and_prints_back_the_same(
    text: str, limit: int, seconds: int
) -> None:
    rate = flow_text.parse_rate("rate", text)
    assert rate == jobtable.Rate(limit, per=datetime.timedelta(seconds=seconds))
    assert f"{limit}/{flow_text.period_text(seconds)}" == text.strip()
    assert flow_text.period_text(0.5) == "0.5s"


def test_idle_queues_join_the_listed_ones_by_name() -> None:
    busy = flow_text.every_queue([], ["b"])[0].model_copy(update={"name": "c", "queued": 3})
    merged = flow_text.every_queue([busy], ["a", "c"])
    assert [(queue.name, queue.queued) for queue in merged] == [("a", 0), ("c", 3)]
    assert flow_text.limits_by(merged[0]) == "-"
