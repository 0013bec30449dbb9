"""Kafka protocol error codes the group coordinator returns (``org.apache.kafka.common.protocol.Errors``).

The numbers are the wire error codes of Kafka responses. Kafka's coordinator signals most request
errors by throwing an ``ApiException`` that the service turns into the response's error code;
:class:`ApiError` plays that role here so the validation code reads like Kafka's.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """Error codes (subset used by the group coordinator); the value is the wire code."""

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
    INVALID_PRODUCER_EPOCH = 47
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    STALE_MEMBER_EPOCH = 113


class ApiError(Exception):
    """A request failed with a Kafka error code (Kafka's ``ApiException``)."""

    def __init__(self, error: Errors, message: str = "") -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error
