"""Group coordinator settings, with Kafka's broker defaults (``GroupCoordinatorConfig``).

Each field names the broker property it mirrors. The values reach the coordinator from
``conf/`` through :mod:`offsetscope.config` (this dataclass is meant to be a section of it:
invalid values raise :class:`~offsetscope.config.InvalidConfigError` naming the key); the
defaults equal Kafka 4.4's, so a scenario that sets nothing behaves like a default broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetscope.config import InvalidConfigError

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    """Classic-group and offset settings of the bundled group coordinator."""

    # offsets.topic.num.partitions
    offsets_topic_partitions: int = 50
    # group.initial.rebalance.delay.ms: how long a group coming from Empty waits for more members
    initial_rebalance_delay_ms: int = 3000
    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    # group.max.size
    max_size: int = INT32_MAX
    # CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (not a broker property; fixed at 5 minutes)
    new_member_join_timeout_ms: int = 300_000
    # offsets.retention.minutes (7 days), in milliseconds
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offset.metadata.max.bytes (Kafka compares it with the metadata's Java string length)
    offset_metadata_max_bytes: int = 4096

    def __post_init__(self) -> None:
        # InvalidConfigError names the key, so offsetscope.config can embed this section as is.
        if self.offsets_topic_partitions < 1:
            raise InvalidConfigError("offsets_topic_partitions", "must be at least 1")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise InvalidConfigError("min_session_timeout_ms", "exceeds max_session_timeout_ms")
        if self.max_size < 1:
            raise InvalidConfigError("max_size", "must be at least 1")
        for key in ("offsets_retention_ms", "offsets_retention_check_interval_ms"):
            if getattr(self, key) < 1:
                raise InvalidConfigError(key, "must be positive")
        if self.initial_rebalance_delay_ms < 0:
            raise InvalidConfigError("initial_rebalance_delay_ms", "must not be negative")
