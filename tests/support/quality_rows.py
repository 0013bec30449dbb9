"""Rows for the quality-gate tests: a clean batch of ``group_generations``, rows planted to
break one check each, and duplicates of one natural key."""

from __future__ import annotations

from generation_rows import T, generation

from offsetscope.clock import VirtualClock

NOW = VirtualClock(T + 3_600_000)  # when the gates run

CLEAN = [generation("g", 1, None), generation("g", 2, 1), generation("h", 5, 3)]
PLANTED = {
    # what is wrong -> (row, the checks it must break)
    "state": (generation("g", 3, 2, state="Rebalancing"), {"valid:state"}),
    "order": (generation("h", 6, 9), {"order:generation>previous_generation"}),
    "future": (
        generation("i", 1, None, stored_at=T + 400 * 86_400_000),
        {"plausible_time:stored_at"},
    ),
    "negative": (
        generation("j", 1, None, first_record_offset=-5, last_record_offset=-5),
        {"at_least_0:first_record_offset"},
    ),
}
# the same natural key twice: both copies break uniqueness
DUPLICATES = [generation("k", 1, None), generation("k", 1, None, member_count=2)]
