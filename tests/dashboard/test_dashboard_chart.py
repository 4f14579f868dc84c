"""The overview's throughput chart: an hour of minutes, stacked by status, scaled to the peak."""

import datetime

import jobtable
from jobtable._dashboard.views import HEIGHT, throughput_chart

NOW = datetime.datetime(2026, 12, 3, 15, 30, 40, tzinfo=datetime.UTC)


def point(minutes_ago: int, status: jobtable.Status, jobs: int) -> jobtable.ThroughputPoint:
    minute = NOW.replace(second=0) - datetime.timedelta(minutes=minutes_ago)
    return jobtable.ThroughputPoint(minute=minute, status=status, jobs=jobs)


def test_the_chart_has_one_bar_a_minute_ending_with_the_current_one() -> None:
    chart = throughput_chart([], NOW)
    assert len(chart.bars) == 60
    assert chart.bars[0].minute == "14:31"
    assert chart.bars[-1].minute == "15:30"
    assert chart.peak == 0
    assert all(not bar.segments for bar in chart.bars)


def test_the_tallest_bar_fills_the_chart_and_statuses_stack_bottom_up() -> None:
    points = [
        point(0, jobtable.Status.SUCCEEDED, 30),
        point(0, jobtable.Status.FAILED, 10),
        point(5, jobtable.Status.SUCCEEDED, 20),
    ]
    chart = throughput_chart(points, NOW)
    last = chart.bars[-1]
    assert (chart.peak, chart.total, last.total) == (40, 60, 40)
    assert [s.status for s in last.segments] == ["succeeded", "failed"]
    succeeded, failed = last.segments
    assert succeeded.y + succeeded.height == HEIGHT
    assert round(failed.y + failed.height, 2) == succeeded.y
    assert round(sum(s.height for s in last.segments)) == HEIGHT - 4
    assert chart.bars[-6].total == 20


def test_points_outside_the_hour_are_left_out() -> None:
    chart = throughput_chart([point(60, jobtable.Status.SUCCEEDED, 5)], NOW)
    assert chart.total == 0
