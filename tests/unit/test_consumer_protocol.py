"""Embedded consumer-protocol subscriptions and assignments: every version and the known quirks."""

from __future__ import annotations

import pytest
from golden import KONSUMER_GM01_ASG, KONSUMER_GM01_SUB, arr, by, i16, i32, s

from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol import errors
from offsetscope.protocol.json_format import kafka_blob_json

FOO0 = arr(1) + s("foo") + arr(1) + i32(0)  # [{"topic": "foo", "partitions": [0]}]

SUBSCRIPTIONS = [
    (
        0,
        b"".join(
            [
                i16(0),  # version 0
                arr(1),
                s("foo"),  # Topics ["foo"]
                by(None),  # UserData null
            ]
        ),
        {"topics": ["foo"], "userData": None},
    ),
    (
        1,
        b"".join(
            [
                i16(1),  # version 1
                arr(1),
                s("foo"),  # Topics
                by(b"ud"),  # UserData
                FOO0,  # OwnedPartitions (v1+)
            ]
        ),
        {
            "topics": ["foo"],
            "userData": b"ud",
            "ownedPartitions": [{"topic": "foo", "partitions": [0]}],
        },
    ),
    (
        2,
        b"".join(
            [
                i16(2),  # version 2
                arr(0),  # Topics []
                by(None),  # UserData
                arr(0),  # OwnedPartitions []
                i32(7),  # GenerationId (v2+)
            ]
        ),
        {"topics": [], "userData": None, "ownedPartitions": [], "generationId": 7},
    ),
    (
        3,
        b"".join(
            [
                i16(3),  # version 3 (worked example)
                arr(1),
                s("foo"),  # Topics
                by(None),  # UserData
                FOO0,  # OwnedPartitions
                i32(0),  # GenerationId
                s("rack"),  # RackId (v3+)
            ]
        ),
        {
            "topics": ["foo"],
            "userData": None,
            "ownedPartitions": [{"topic": "foo", "partitions": [0]}],
            "generationId": 0,
            "rackId": "rack",
        },
    ),
]


@pytest.mark.parametrize(("version", "blob", "data"), SUBSCRIPTIONS)
def test_subscription_versions(version: int, blob: bytes, data: dict) -> None:
    decoded = cp.decode_subscription(blob)
    assert (decoded.version, decoded.data) == (version, data)
    assert cp.encode_subscription(version, data) == blob


@pytest.mark.parametrize("version", range(4))
def test_assignment_versions_share_one_layout(version: int) -> None:
    blob = i16(version) + FOO0 + by(None)  # AssignedPartitions, UserData null
    decoded = cp.decode_assignment(blob)
    assert decoded is not None
    assert decoded.version == version
    assert decoded.data == {
        "assignedPartitions": [{"topic": "foo", "partitions": [0]}],
        "userData": None,
    }
    assert cp.encode_assignment(version, decoded.data) == blob


def test_newer_version_reads_the_known_prefix() -> None:
    blob = SUBSCRIPTIONS[3][1]
    future = i16(9) + blob[2:] + b"\x00\x00\x00\x2a future fields"
    decoded = cp.decode_subscription(future)
    assert decoded.version == 9
    assert decoded.data == SUBSCRIPTIONS[3][2]


def test_zero_length_assignment_is_no_assignment() -> None:
    assert cp.decode_assignment(b"") is None
    assert kafka_blob_json(cp.ASSIGNMENT, b"") is None  # DumpLogSegments keeps "" as Base64


def test_librdkafka_capture_has_an_empty_not_null_user_data() -> None:
    sub = cp.decode_subscription(KONSUMER_GM01_SUB)
    assert sub.version == 1
    assert sub.data == {"topics": ["t01"], "userData": b"", "ownedPartitions": []}
    asg = cp.decode_assignment(KONSUMER_GM01_ASG)
    assert asg is not None
    assert asg.data == {
        "assignedPartitions": [{"topic": "t01", "partitions": [0, 1, 2]}],
        "userData": b"",
    }


def test_sarama_cluster_v1_without_owned_partitions() -> None:
    blob = i16(1) + arr(1) + s("foo") + by(None)  # claims v1, stops after UserData
    with pytest.raises(errors.TruncatedError):
        cp.decode_subscription(blob)  # Kafka's parser rejects it, and so do we by default
    lenient = cp.decode_subscription(blob, lenient=True)
    assert lenient.data == {"topics": ["foo"], "userData": None, "ownedPartitions": []}
    assert kafka_blob_json(cp.SUBSCRIPTION, blob) is None  # DumpLogSegments keeps Base64


def test_negative_version_is_rejected() -> None:
    with pytest.raises(errors.UnsupportedVersionError):
        cp.decode_subscription(i16(-1) + arr(0) + by(None))


@pytest.mark.parametrize("cut", range(len(SUBSCRIPTIONS[3][1])))
def test_truncated_subscription(cut: int) -> None:
    with pytest.raises(errors.DecodeError):
        cp.decode_subscription(SUBSCRIPTIONS[3][1][:cut])
