"""A classic group's generation row with one member, for tests that write ``generations``."""

from __future__ import annotations

from typing import Any

from offsetscope.history.rows import GenerationMember, GenerationRow

T = 1_700_000_000_000  # the generations' time base, epoch milliseconds


def generation(group: str, gen: int, previous: int | None, **kw: Any) -> GenerationRow:
    """Generation ``gen`` of ``group``, stored ``gen`` seconds after :data:`T`, its record at
    offset ``gen * 10``; ``kw`` replaces fields."""
    member = GenerationMember(
        "m-1", None, "client", "/10.0.0.1", 45_000, 300_000, ("orders",), None, None
    )
    fields: dict[str, Any] = {
        "group_id": group,
        "group_life": 0,
        "generation": gen,
        "kind": "classic",
        "protocol_type": "consumer",
        "protocol": "range",
        "state": "Stable",
        "leader": "m-1",
        "member_count": 1,
        "members": (member,),
        "assignment": (("m-1", (("orders", 0),)),),
        "assignment_epoch": None,
        "join_completed_at": T + gen * 1_000,
        "stored_at": T + gen * 1_000,
        "assignment_at": T + gen * 1_000,
        "updated_at": T + gen * 1_000,
        "previous_generation": previous,
        "generations_skipped": 0,
        "rebalances": 1,
        "members_joined": (),
        "members_left": (),
        "members_replaced": (),
        "static_replacements": 0,
        "partitions_assigned": 1,
        "partitions_moved": 0,
        "moved_partitions": (),
        "record_partition": 0,
        "first_record_offset": gen * 10,
        "last_record_offset": gen * 10,
    }
    fields.update(kw)
    return GenerationRow(**fields)


def write_in_clusters(
    spark: Any, cfg: Any, group: str, at: int, rebalances: dict[str, int]
) -> None:
    """Append generation 1 of ``group`` at ``at`` to ``group_generations`` once per cluster,
    with that cluster's count of rebalances: the same group id in several clusters."""
    from offsetscope.spark import writes

    for batch, (cluster, count) in enumerate(rebalances.items()):
        row = generation(
            group, 1, None, join_completed_at=at, stored_at=at, assignment_at=at,
            updated_at=at, rebalances=count,
        )  # fmt: skip
        df = writes.rows_frame(spark, "group_generations", [row], cluster=cluster)
        writes.append(df, cfg, "group_generations", query_name="t", batch_id=batch)
