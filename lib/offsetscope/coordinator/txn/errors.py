"""Kafka protocol error codes the transaction coordinator and partition leaders return.

The values are Kafka's wire codes (``clients/.../common/protocol/Errors.java``); the names are
Kafka's. Only the codes this bundled coordinator can produce are listed.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """A response error code, as ``Errors.java`` numbers it."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_COORDINATOR = 16
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
    PRODUCER_FENCED = 90
    TRANSACTIONAL_ID_NOT_FOUND = 105
    TRANSACTION_ABORTABLE = 120


class TxnError(Exception):
    """Internal control flow: a prepare step decided the request fails with ``error``."""

    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        super().__init__(f"{error.name}: {message}" if message else error.name)
