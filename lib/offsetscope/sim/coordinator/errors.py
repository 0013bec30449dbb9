"""Kafka protocol error codes of the bundled coordinators (``org.apache.kafka.common.protocol.Errors``).

One enum for the group coordinator, the transaction coordinator and the partition leaders, so a
response that crosses them (a TxnOffsetCommit rejected by the producer-epoch check of the
``__consumer_offsets`` partition, a marker refused by a partition) carries the same type
everywhere. The values are Kafka's wire codes and the names Kafka's; only the codes these
coordinators can return are listed.

Kafka's coordinators signal most request errors by throwing an ``ApiException`` that the service
turns into the response's error code; :class:`ApiError` plays that role for the group
coordinator, :class:`TxnError` for the transaction coordinator's prepare steps.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """A response error code, as ``Errors.java`` numbers it."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    INVALID_REQUEST = 42
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    TRANSACTIONAL_ID_NOT_FOUND = 105
    STALE_MEMBER_EPOCH = 113
    TRANSACTION_ABORTABLE = 120


class ApiError(Exception):
    """A request failed with a Kafka error code (Kafka's ``ApiException``)."""

    def __init__(self, error: Errors, message: str = "") -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error


class TxnError(Exception):
    """Internal control flow: a prepare step decided the request fails with ``error``."""

    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        super().__init__(f"{error.name}: {message}" if message else error.name)
