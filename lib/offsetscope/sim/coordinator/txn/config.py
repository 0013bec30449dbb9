"""Transaction coordinator settings, named after the Kafka broker configs they mirror.

Defaults are a fresh Kafka 4.4 single-broker KRaft cluster's:

* ``transaction_version`` is the *finalized* ``transaction.version`` feature level. A cluster
  formatted by Kafka 4.x's storage tool finalizes ``TransactionVersion.LATEST_PRODUCTION``,
  which is 2 (KIP-890 part 2, KIP-1022), so the default is 2: ``TransactionLogValue`` is written
  at version 1 (flexible, tagged fields) and clients that support transactions V2 use it.
* Which *client* transaction version a request carries is decided per request, from the API
  version the client sends (AddPartitionsToTxn > v3, EndTxn > v4 mean TV2): the Java producer
  4.x uses TV2 when the finalized level is >= 2; librdkafka (confluent-kafka) has no KIP-890
  support and always uses TV0. See :func:`client_transaction_version`.

Loading from ``conf/`` happens in ``offsetscope.config``; this dataclass is the section type.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetscope.config import InvalidConfigError

TV_0 = 0
TV_1 = 1
TV_2 = 2


@dataclass(frozen=True, slots=True)
class TransactionCoordinatorConfig:
    """Settings of the bundled transaction coordinator (Kafka broker config names in comments)."""

    # transactional.id.expiration.ms: idle time (since the last update, in Empty or Complete*)
    # after which a transactional id is tombstoned.
    transactional_id_expiration_ms: int = 604_800_000
    # transaction.max.timeout.ms: InitProducerId with a larger timeout gets
    # INVALID_TRANSACTION_TIMEOUT.
    transaction_max_timeout_ms: int = 900_000
    # transaction.abort.timed.out.transaction.cleanup.interval.ms: period of the timeout check.
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    # transaction.remove.expired.transaction.cleanup.interval.ms: period of the expiry job.
    remove_expired_transactional_id_cleanup_interval_ms: int = 3_600_000
    # transaction.state.log.num.partitions (the topic's actual count is what routing uses).
    transaction_state_partitions: int = 50
    # offsets.topic.num.partitions, for AddOffsetsToTxn when __consumer_offsets does not exist yet.
    offsets_topic_partitions: int = 50
    # transaction.partition.verification.enable: partition leaders ask the coordinator before
    # accepting the first transactional batch of a producer (KIP-890 part 1).
    transaction_partition_verification_enable: bool = True
    # The finalized transaction.version feature level (0, 1 or 2).
    transaction_version: int = TV_2
    # Size of the producer-id blocks the controller hands out (ProducerIdsBlock).
    producer_id_block_size: int = 1000
    # Leader epoch of the __transaction_state partitions = the coordinator epoch in markers.
    coordinator_epoch: int = 0
    # Simulation knob, not a Kafka config: virtual time between logging PrepareCommit /
    # PrepareAbort and the markers being written (Kafka: one WriteTxnMarkers round trip).
    marker_delay_ms: int = 0

    def __post_init__(self) -> None:
        if self.transaction_version not in (TV_0, TV_1, TV_2):
            raise InvalidConfigError("transaction_version", "must be 0, 1 or 2")
        for name in (
            "transactional_id_expiration_ms",
            "transaction_max_timeout_ms",
            "abort_timed_out_transaction_cleanup_interval_ms",
            "remove_expired_transactional_id_cleanup_interval_ms",
            "transaction_state_partitions",
            "offsets_topic_partitions",
            "producer_id_block_size",
        ):
            if getattr(self, name) <= 0:
                raise InvalidConfigError(name, "must be positive")
        if self.coordinator_epoch < 0:
            raise InvalidConfigError("coordinator_epoch", "must not be negative")
        if self.marker_delay_ms < 0:
            raise InvalidConfigError("marker_delay_ms", "must not be negative")

    @property
    def transaction_log_value_version(self) -> int:
        """TransactionLogValue version written: 1 (flexible) when transaction.version >= 1."""
        return 1 if self.transaction_version >= TV_1 else 0


def client_transaction_version(finalized: int, client_supports_tv2: bool) -> int:
    """The transaction version a client's requests carry.

    Args:
        finalized: the cluster's finalized ``transaction.version``.
        client_supports_tv2: the client implements KIP-890 part 2 (Java producer >= 4.0: yes;
            librdkafka / confluent-kafka: no).

    Returns:
        2 when both sides support transactions V2, else 0 (there is no "client TV1": version 1
        only changes the log format).
    """
    return TV_2 if client_supports_tv2 and finalized >= TV_2 else TV_0
