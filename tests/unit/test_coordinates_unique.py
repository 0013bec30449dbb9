"""When a batch's record coordinates are known unique without a job over the batch
(``offsetscope.pipelines.frames.coordinates_unique``): every task's records ascended per topic
partition, and each topic partition's records are in one task."""

from __future__ import annotations

from typing import Any

from offsetscope.pipelines.frames import coordinates_unique

OFFSETS = "__consumer_offsets"


def _stat(partition: int | None, first_task: int, last_task: int, **kw: Any) -> dict[str, Any]:
    return {
        "topic": kw.get("topic", OFFSETS),
        "source_topic": kw.get("source_topic", OFFSETS),
        "partition": partition,
        "first_task": first_task,
        "last_task": last_task,
    }


def test_partitions_each_in_one_task_that_ascended() -> None:
    stats = [_stat(0, 0, 0), _stat(1, 0, 0), _stat(2, 1, 1)]
    assert coordinates_unique(stats, ascending=True)
    assert not coordinates_unique(stats, ascending=False)


def test_a_partition_spread_over_tasks_is_not_known() -> None:
    # Each task ascends, but both may hold the same offsets.
    assert not coordinates_unique([_stat(0, 0, 1)], ascending=True)


def test_one_partition_from_two_source_topics_in_two_tasks_is_not_known() -> None:
    stats = [_stat(0, 0, 0), _stat(0, 1, 1, source_topic="mirror.__consumer_offsets")]
    assert not coordinates_unique(stats, ascending=True)
    # In the same task, the task's own sequence decides (it sees both).
    same = [_stat(0, 1, 1), _stat(0, 1, 1, source_topic="mirror.__consumer_offsets")]
    assert coordinates_unique(same, ascending=True)


def test_the_same_partition_number_of_two_topics_keys_apart() -> None:
    stats = [_stat(0, 0, 0), _stat(0, 1, 1, topic="__transaction_state")]
    assert coordinates_unique(stats, ascending=True)


def test_rows_without_coordinates_key_nothing() -> None:
    assert coordinates_unique([_stat(None, 0, 1), _stat(3, 1, 1)], ascending=True)
