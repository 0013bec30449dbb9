"""Hand-built golden records: one line per field, so each byte says what it is.

Shared by the golden, truncation and JSON tests. Builders spell Kafka's primitive encodings
(``docs/formats.md`` section 1) by hand rather than calling the library under test.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"
SHARE = "__share_group_state"


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uv(v: int) -> bytes:
    """Unsigned LEB128."""
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def s(v: str | None) -> bytes:
    """Classic string: int16 length (-1 null) + UTF-8."""
    if v is None:
        return i16(-1)
    b = v.encode()
    return i16(len(b)) + b


def cs(v: str | None) -> bytes:
    """Compact string: uvarint length+1 (0 null) + UTF-8."""
    if v is None:
        return uv(0)
    b = v.encode()
    return uv(len(b) + 1) + b


def by(v: bytes | None) -> bytes:
    return i32(-1) if v is None else i32(len(v)) + v


def cby(v: bytes | None) -> bytes:
    return uv(0) if v is None else uv(len(v) + 1) + v


def arr(n: int) -> bytes:
    return i32(n)


def carr(n: int | None) -> bytes:
    return uv(0) if n is None else uv(n + 1)


NO_TAGS = uv(0)
U1 = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")
U2 = uuid.UUID("f0e0d0c0-b0a0-9080-7060-504030201000")
T0 = 1_700_000_000_000  # 0x0000018bcfe56800


@dataclass(frozen=True)
class Golden:
    name: str
    topic: str
    key: bytes
    value: bytes | None
    record_type: int
    key_data: dict[str, Any]
    value_version: int | None
    value_data: dict[str, Any] | None


GOLDEN: list[Golden] = []


def golden(*args: Any) -> None:
    GOLDEN.append(Golden(*args))


# ---------------------------------------------------------------- offset commits (types 0, 1)

OC_KEY = b"".join(
    [
        i16(1),  # record type 1: OffsetCommitKey
        s("g1"),  # group
        s("t"),  # topic
        i32(0),  # partition
    ]
)
OC_KEY_DATA = {"group": "g1", "topic": "t", "partition": 0}

golden(
    "legacy type 0 value v0",
    OFFSETS,
    b"".join(
        [
            i16(0),  # record type 0: LegacyOffsetCommitKey (Kafka 0.8.2)
            s("g1"),  # group
            s("t"),  # topic
            i32(7),  # partition
        ]
    ),
    b"".join(
        [
            i16(0),  # version 0
            i64(42),  # offset
            s("meta"),  # metadata
            i64(T0),  # commitTimestamp
        ]
    ),
    0,
    {"group": "g1", "topic": "t", "partition": 7},
    0,
    {"offset": 42, "metadata": "meta", "commitTimestamp": T0},
)

golden(
    "offset commit v0",
    OFFSETS,
    OC_KEY,
    b"".join(
        [
            i16(0),  # version 0
            i64(42),  # offset
            s(""),  # metadata
            i64(T0),  # commitTimestamp
        ]
    ),
    1,
    OC_KEY_DATA,
    0,
    {"offset": 42, "metadata": "", "commitTimestamp": T0},
)

golden(
    "offset commit v1 (explicit expiry)",
    OFFSETS,
    OC_KEY,
    b"".join(
        [
            i16(1),  # version 1
            i64(100),  # offset
            s("metadata"),  # metadata
            i64(1234),  # commitTimestamp
            i64(5678),  # expireTimestamp (v1 only)
        ]
    ),
    1,
    OC_KEY_DATA,
    1,
    {"offset": 100, "metadata": "metadata", "commitTimestamp": 1234, "expireTimestamp": 5678},
)

golden(
    "offset commit v2",
    OFFSETS,
    OC_KEY,
    b"".join(
        [
            i16(2),  # version 2: v0 layout again
            i64(7),  # offset
            s("x"),  # metadata
            i64(T0),  # commitTimestamp
        ]
    ),
    1,
    OC_KEY_DATA,
    2,
    {"offset": 7, "metadata": "x", "commitTimestamp": T0},
)

golden(
    "offset commit v3 (worked example)",
    OFFSETS,
    OC_KEY,
    b"".join(
        [
            i16(3),  # version 3
            i64(42),  # offset
            i32(5),  # leaderEpoch (v3+)
            s(""),  # metadata
            i64(T0),  # commitTimestamp
        ]
    ),
    1,
    OC_KEY_DATA,
    3,
    {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": T0},
)

golden(
    "offset commit v4 with topicId",
    OFFSETS,
    OC_KEY,
    b"".join(
        [
            i16(4),  # version 4 (flexible)
            i64(42),  # offset
            i32(5),  # leaderEpoch
            cs(""),  # metadata, compact
            i64(T0),  # commitTimestamp
            uv(1),  # 1 tagged field
            uv(0),  # tag 0: topicId
            uv(16),  # 16 bytes
            U1.bytes,  # the uuid
        ]
    ),
    1,
    OC_KEY_DATA,
    4,
    {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": T0, "topicId": U1},
)

golden(
    "offset commit v4 without topicId (franz-go #1105 capture)",
    OFFSETS,
    OC_KEY,
    bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600"),
    1,
    OC_KEY_DATA,
    4,
    {
        "offset": 2217128,
        "leaderEpoch": -1,
        "metadata": "",
        "commitTimestamp": 1758335260726,
        "topicId": uuid.UUID(int=0),
    },
)

golden("offset commit tombstone", OFFSETS, OC_KEY, None, 1, OC_KEY_DATA, None, None)

# Real broker capture (kafkesc/konsumer_offsets fixtures/tests/offset_commit/01): value v3,
# leaderEpoch -1, empty metadata.
golden(
    "konsumer_offsets offset_commit/01",
    OFFSETS,
    bytes.fromhex(
        "0001001a6976616e2d6578706572696d656e74616c2d636f6e73756d6572"
        "00125f5f636f6e73756d65725f6f6666736574730000002e"
    ),
    bytes.fromhex("00030000000000017ce3ffffffff0000000001857ee1dbd0"),
    1,
    {"group": "ivan-experimental-consumer", "topic": "__consumer_offsets", "partition": 46},
    3,
    {"offset": 97507, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1672871009232},
)

# ---------------------------------------------------------------- classic group metadata (type 2)

GM_KEY = i16(2) + s("g1")  # record type 2 | group "g1"
SUB = b"\x00\x01"
ASG = b"\x01\x02"

golden(
    "group metadata v0",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(0),  # version 0
            s("consumer"),  # protocolType
            i32(1),  # generation
            s("range"),  # protocol
            s("m1"),  # leader
            arr(1),  # members: 1
            s("m1"),  #   memberId
            s("c1"),  #   clientId
            s("/10.0.0.1"),  #   clientHost
            i32(10000),  #   sessionTimeout
            by(SUB),  #   subscription
            by(ASG),  #   assignment
        ]
    ),
    2,
    {"group": "g1"},
    0,
    {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "m1",
        "members": [
            {
                "memberId": "m1",
                "clientId": "c1",
                "clientHost": "/10.0.0.1",
                "sessionTimeout": 10000,
                "subscription": SUB,
                "assignment": ASG,
            }
        ],
    },
)

golden(
    "group metadata v1",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(1),  # version 1
            s("consumer"),  # protocolType
            i32(2),  # generation
            s("roundrobin"),  # protocol
            s("m1"),  # leader
            arr(1),  # members: 1
            s("m1"),  #   memberId
            s("c1"),  #   clientId
            s("/h"),  #   clientHost
            i32(300000),  #   rebalanceTimeout (v1+)
            i32(10000),  #   sessionTimeout
            by(SUB),  #   subscription
            by(b""),  #   assignment: zero-length (not assigned)
        ]
    ),
    2,
    {"group": "g1"},
    1,
    {
        "protocolType": "consumer",
        "generation": 2,
        "protocol": "roundrobin",
        "leader": "m1",
        "members": [
            {
                "memberId": "m1",
                "clientId": "c1",
                "clientHost": "/h",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 10000,
                "subscription": SUB,
                "assignment": b"",
            }
        ],
    },
)

golden(
    "group metadata v2",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(2),  # version 2
            s("connect"),  # protocolType
            i32(3),  # generation
            s("sessioned"),  # protocol
            s("w1"),  # leader
            i64(T0),  # currentStateTimestamp (v2+)
            arr(0),  # members: none
        ]
    ),
    2,
    {"group": "g1"},
    2,
    {
        "protocolType": "connect",
        "generation": 3,
        "protocol": "sessioned",
        "leader": "w1",
        "currentStateTimestamp": T0,
        "members": [],
    },
)

golden(
    "group metadata v3",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(3),  # version 3
            s("consumer"),  # protocolType
            i32(1),  # generation
            s("range"),  # protocol
            s("leader"),  # leader
            i64(1234),  # currentStateTimestamp
            arr(1),  # members: 1
            s("member-1"),  #   memberId
            s("group-instance-1"),  # groupInstanceId (v3+)
            s("client-1"),  #   clientId
            s("host-1"),  #   clientHost
            i32(1000),  #   rebalanceTimeout
            i32(1500),  #   sessionTimeout
            by(SUB),  #   subscription "AAE="
            by(ASG),  #   assignment "AQI="
        ]
    ),
    2,
    {"group": "g1"},
    3,
    {
        "protocolType": "consumer",
        "generation": 1,
        "protocol": "range",
        "leader": "leader",
        "currentStateTimestamp": 1234,
        "members": [
            {
                "memberId": "member-1",
                "groupInstanceId": "group-instance-1",
                "clientId": "client-1",
                "clientHost": "host-1",
                "rebalanceTimeout": 1000,
                "sessionTimeout": 1500,
                "subscription": SUB,
                "assignment": ASG,
            }
        ],
    },
)

golden(
    "group metadata v3 empty group (worked example)",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(3),  # version 3
            s("consumer"),  # protocolType
            i32(3),  # generation
            s(None),  # protocol: null
            s(None),  # leader: null
            i64(T0),  # currentStateTimestamp
            arr(0),  # members: none
        ]
    ),
    2,
    {"group": "g1"},
    3,
    {
        "protocolType": "consumer",
        "generation": 3,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": T0,
        "members": [],
    },
)

golden(
    "group metadata v4 (flexible)",
    OFFSETS,
    GM_KEY,
    b"".join(
        [
            i16(4),  # version 4
            cs("consumer"),  # protocolType, compact
            i32(3),  # generation
            cs("range"),  # protocol
            cs(None),  # leader: null
            i64(T0),  # currentStateTimestamp
            carr(1),  # members: 1
            cs("m"),  #   memberId
            cs(None),  #   groupInstanceId: null
            cs("c"),  #   clientId
            cs("/h"),  #   clientHost
            i32(-1),  #   rebalanceTimeout
            i32(45000),  #   sessionTimeout
            cby(SUB),  #   subscription
            cby(ASG),  #   assignment
            NO_TAGS,  #   member's tagged section
            NO_TAGS,  # top-level tagged section
        ]
    ),
    2,
    {"group": "g1"},
    4,
    {
        "protocolType": "consumer",
        "generation": 3,
        "protocol": "range",
        "leader": None,
        "currentStateTimestamp": T0,
        "members": [
            {
                "memberId": "m",
                "groupInstanceId": None,
                "clientId": "c",
                "clientHost": "/h",
                "rebalanceTimeout": -1,
                "sessionTimeout": 45000,
                "subscription": SUB,
                "assignment": ASG,
            }
        ],
    },
)

golden("group metadata tombstone", OFFSETS, GM_KEY, None, 2, {"group": "g1"}, None, None)

# Real broker capture (kafkesc/konsumer_offsets fixtures/tests/group_metadata/01 and 05):
# a librdkafka member (subscription v1 with empty userData, assignment v0) and an Empty group.
_RDK = "rdkafka-9f4fc1b0-1d7d-4471-90e8-e0f64f3c9d9f"
KONSUMER_GM01_SUB = bytes.fromhex("00010000000100037430310000000000000000")
KONSUMER_GM01_ASG = bytes.fromhex("00000000000100037430310000000300000000000000010000000200000000")
golden(
    "konsumer_offsets group_metadata/01",
    OFFSETS,
    bytes.fromhex("0002001b6b61666b6573632d646576636c75737465722d67726f75702d6964"),
    bytes.fromhex(
        "00030008636f6e73756d657200000007000572616e6765002c72646b61666b612d39663466633162302d3164"
        "37642d343437312d393065382d653066363466336339643966000001857ee10d9500000001002c72646b6166"
        "6b612d39663466633162302d316437642d343437312d393065382d653066363466336339643966ffff000772"
        "646b61666b61000b2f3137322e31382e302e31000493e00000afc80000001300010000000100037430310000"
        "0000000000000000001f00000000000100037430310000000300000000000000010000000200000000"
    ),
    2,
    {"group": "kafkesc-devcluster-group-id"},
    3,
    {
        "protocolType": "consumer",
        "generation": 7,
        "protocol": "range",
        "leader": _RDK,
        "currentStateTimestamp": 1672870956437,
        "members": [
            {
                "memberId": _RDK,
                "groupInstanceId": None,
                "clientId": "rdkafka",
                "clientHost": "/172.18.0.1",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 45000,
                "subscription": KONSUMER_GM01_SUB,
                "assignment": KONSUMER_GM01_ASG,
            }
        ],
    },
)
golden(
    "konsumer_offsets group_metadata/05 (Empty)",
    OFFSETS,
    bytes.fromhex("0002001b6b61666b6573632d646576636c75737465722d67726f75702d6964"),
    bytes.fromhex("00030008636f6e73756d657200000008ffffffff000001857ee12e3800000000"),
    2,
    {"group": "kafkesc-devcluster-group-id"},
    3,
    {
        "protocolType": "consumer",
        "generation": 8,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": 1672870964792,
        "members": [],
    },
)

# ---------------------------------------------------------------- KIP-848 consumer groups (3-8, 16)

CG_KEY = lambda t: i16(t) + s("cg")  # noqa: E731 -- record type | GroupId "cg"
CGM_KEY = lambda t: i16(t) + s("cg") + s("m1")  # noqa: E731 -- record type | GroupId | MemberId

golden(
    "consumer group metadata (3)",
    OFFSETS,
    CG_KEY(3),
    b"".join(
        [
            i16(0),  # version 0 (flexible)
            i32(10),  # Epoch
            uv(1),  # 1 tagged field
            uv(0),  # tag 0: MetadataHash
            uv(8),  # 8 bytes
            i64(99),  # MetadataHash
        ]
    ),
    3,
    {"groupId": "cg"},
    0,
    {"epoch": 10, "metadataHash": 99},
)

golden(
    "consumer group partition metadata (4)",
    OFFSETS,
    CG_KEY(4),
    b"".join(
        [
            i16(0),  # version 0
            carr(1),  # Topics: 1
            U1.bytes,  #   TopicId
            cs("t"),  #   TopicName
            i32(2),  #   NumPartitions
            carr(1),  #   PartitionMetadata: 1
            i32(0),  #     Partition
            carr(1),  #     Racks: 1
            cs("r1"),  #       rack
            NO_TAGS,  #     PartitionMetadata tags
            NO_TAGS,  #   Topics tags
            NO_TAGS,  # top-level tags
        ]
    ),
    4,
    {"groupId": "cg"},
    0,
    {
        "topics": [
            {
                "topicId": U1,
                "topicName": "t",
                "numPartitions": 2,
                "partitionMetadata": [{"partition": 0, "racks": ["r1"]}],
            }
        ]
    },
)

golden(
    "consumer group member metadata (5), worked example",
    OFFSETS,
    CGM_KEY(5),
    b"".join(
        [
            i16(0),  # version 0
            cs(None),  # InstanceId: null
            cs(None),  # RackId: null
            cs("c"),  # ClientId
            cs("/h"),  # ClientHost
            carr(1),  # SubscribedTopicNames: 1
            cs("t"),  #   "t"
            cs(None),  # SubscribedTopicRegex: null
            i32(300000),  # RebalanceTimeoutMs
            cs(None),  # ServerAssignor: null
            uv(1),  # 1 tagged field
            uv(0),  # tag 0: ClassicMemberMetadata
            uv(17),  # 17 bytes
            i8(1),  #   presence marker
            i32(45000),  #   SessionTimeoutMs
            carr(1),  #   SupportedProtocols: 1
            cs("range"),  #     Name
            cby(b"\x00\x03"),  # Metadata
            NO_TAGS,  #     element tags
            NO_TAGS,  #   struct tags
        ]
    ),
    5,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "instanceId": None,
        "rackId": None,
        "clientId": "c",
        "clientHost": "/h",
        "subscribedTopicNames": ["t"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 300000,
        "serverAssignor": None,
        "classicMemberMetadata": {
            "sessionTimeoutMs": 45000,
            "supportedProtocols": [{"name": "range", "metadata": b"\x00\x03"}],
        },
    },
)

golden(
    "consumer group target assignment metadata (6)",
    OFFSETS,
    CG_KEY(6),
    b"".join(
        [
            i16(0),  # version 0
            i32(11),  # AssignmentEpoch
            NO_TAGS,  # AssignmentTimestamp (tag 0) is at its default 0: not written
        ]
    ),
    6,
    {"groupId": "cg"},
    0,
    {"assignmentEpoch": 11, "assignmentTimestamp": 0},
)

golden(
    "consumer group target assignment member (7)",
    OFFSETS,
    CGM_KEY(7),
    b"".join(
        [
            i16(0),  # version 0
            carr(1),  # TopicPartitions: 1
            U1.bytes,  #   TopicId
            carr(2),  #   Partitions: 2
            i32(0),  #     0
            i32(1),  #     1
            NO_TAGS,  #   element tags
            NO_TAGS,  # top-level tags
        ]
    ),
    7,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {"topicPartitions": [{"topicId": U1, "partitions": [0, 1]}]},
)

golden(
    "consumer group current member assignment (8)",
    OFFSETS,
    CGM_KEY(8),
    b"".join(
        [
            i16(0),  # version 0
            i32(12),  # MemberEpoch
            i32(11),  # PreviousMemberEpoch
            i8(1),  # State: UNREVOKED_PARTITIONS
            carr(1),  # AssignedPartitions: 1
            U1.bytes,  #   TopicId
            carr(1),  #   Partitions: 1
            i32(0),  #     0
            uv(1),  #   1 tagged field in the element
            uv(0),  #   tag 0: AssignmentEpochs
            uv(5),  #   5 bytes
            carr(1),  #     1 epoch
            i32(12),  #     12
            carr(1),  # PartitionsPendingRevocation: 1
            U2.bytes,  #   TopicId
            carr(0),  #   Partitions: none
            NO_TAGS,  #   element tags: AssignmentEpochs absent = its default, [] (JSON
            #             "default": null means no default, not a null default)
            NO_TAGS,  # top-level tags
        ]
    ),
    8,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "memberEpoch": 12,
        "previousMemberEpoch": 11,
        "state": 1,
        "assignedPartitions": [{"topicId": U1, "partitions": [0], "assignmentEpochs": [12]}],
        "partitionsPendingRevocation": [{"topicId": U2, "partitions": [], "assignmentEpochs": []}],
    },
)

golden(
    "consumer group regular expression (16)",
    OFFSETS,
    i16(16) + s("cg") + s("t.*"),
    b"".join(
        [
            i16(0),  # version 0
            carr(2),  # Topics: 2
            cs("t1"),  #   "t1"
            cs("t2"),  #   "t2"
            i64(5),  # Version
            i64(T0),  # Timestamp
            NO_TAGS,  # tags
        ]
    ),
    16,
    {"groupId": "cg", "regularExpression": "t.*"},
    0,
    {"topics": ["t1", "t2"], "version": 5, "timestamp": T0},
)

golden(
    "consumer group member tombstone (5)",
    OFFSETS,
    CGM_KEY(5),
    None,
    5,
    {"groupId": "cg", "memberId": "m1"},
    None,
    None,
)

# ---------------------------------------------------------------- share groups (9-15)

golden(
    "share group partition metadata (9, 4.0 EA)",
    OFFSETS,
    CG_KEY(9),
    b"".join(
        [
            i16(0),  # version 0
            carr(0),  # Topics: none
            NO_TAGS,  # tags
        ]
    ),
    9,
    {"groupId": "cg"},
    0,
    {"topics": []},
)

golden(
    "share group member metadata (10)",
    OFFSETS,
    CGM_KEY(10),
    b"".join(
        [
            i16(0),  # version 0
            cs("r"),  # RackId
            cs("c"),  # ClientId
            cs("/h"),  # ClientHost
            carr(1),  # SubscribedTopicNames: 1
            cs("t"),  #   "t"
            NO_TAGS,  # tags
        ]
    ),
    10,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {"rackId": "r", "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"]},
)

golden(
    "share group metadata (11)",
    OFFSETS,
    CG_KEY(11),
    b"".join(
        [
            i16(0),  # version 0
            i32(3),  # Epoch
            i64(-7),  # MetadataHash (a regular field here)
            NO_TAGS,  # tags
        ]
    ),
    11,
    {"groupId": "cg"},
    0,
    {"epoch": 3, "metadataHash": -7},
)

golden(
    "share group target assignment metadata (12)",
    OFFSETS,
    CG_KEY(12),
    b"".join(
        [
            i16(0),  # version 0
            i32(4),  # AssignmentEpoch
            uv(1),  # 1 tagged field
            uv(0),  # tag 0: AssignmentTimestamp
            uv(8),  # 8 bytes
            i64(T0),  # value
        ]
    ),
    12,
    {"groupId": "cg"},
    0,
    {"assignmentEpoch": 4, "assignmentTimestamp": T0},
)

golden(
    "share group target assignment member (13)",
    OFFSETS,
    CGM_KEY(13),
    b"".join(
        [
            i16(0),  # version 0
            carr(1),  # TopicPartitions: 1
            U1.bytes,  #   TopicId
            carr(1),  #   Partitions: 1
            i32(3),  #     3
            NO_TAGS,  #   element tags
            NO_TAGS,  # tags
        ]
    ),
    13,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {"topicPartitions": [{"topicId": U1, "partitions": [3]}]},
)

golden(
    "share group current member assignment (14)",
    OFFSETS,
    CGM_KEY(14),
    b"".join(
        [
            i16(0),  # version 0
            i32(5),  # MemberEpoch
            i32(4),  # PreviousMemberEpoch
            i8(0),  # State: STABLE
            carr(0),  # AssignedPartitions: none
            NO_TAGS,  # tags
        ]
    ),
    14,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 0, "assignedPartitions": []},
)

golden(
    "share group state partition metadata (15)",
    OFFSETS,
    CG_KEY(15),
    b"".join(
        [
            i16(0),  # version 0
            carr(1),  # InitializingTopics: 1
            U1.bytes,  #   TopicId
            cs("t"),  #   TopicName
            carr(1),  #   Partitions: 1
            i32(0),  #     0
            NO_TAGS,  #   element tags
            carr(0),  # InitializedTopics: none
            carr(1),  # DeletingTopics: 1
            U2.bytes,  #   TopicId
            cs("old"),  #   TopicName
            NO_TAGS,  #   element tags
            NO_TAGS,  # tags
        ]
    ),
    15,
    {"groupId": "cg"},
    0,
    {
        "initializingTopics": [{"topicId": U1, "topicName": "t", "partitions": [0]}],
        "initializedTopics": [],
        "deletingTopics": [{"topicId": U2, "topicName": "old"}],
    },
)

# ---------------------------------------------------------------- streams groups (17-24)

golden(
    "streams group metadata (17)",
    OFFSETS,
    CG_KEY(17),
    b"".join(
        [
            i16(0),  # version 0
            i32(2),  # Epoch
            i64(77),  # MetadataHash
            uv(2),  # 2 tagged fields
            uv(0),  # tag 0: ValidatedTopologyEpoch
            uv(4),  # 4 bytes
            i32(1),  #   1
            uv(1),  # tag 1: LastAssignmentConfigs
            uv(6),  # 6 bytes
            carr(1),  #   1 config
            cs("k"),  #     Key
            cs("v"),  #     Value
            NO_TAGS,  #     element tags
        ]
    ),
    17,
    {"groupId": "cg"},
    0,
    {
        "epoch": 2,
        "metadataHash": 77,
        "validatedTopologyEpoch": 1,
        "lastAssignmentConfigs": [{"key": "k", "value": "v"}],
        "storedDescriptionTopologyEpoch": -1,
        "failedDescriptionTopologyEpoch": -1,
    },
)

golden(
    "streams group partition metadata (18, trunk only)",
    OFFSETS,
    CG_KEY(18),
    b"".join(
        [
            i16(0),  # version 0
            carr(0),  # Topics: none
            NO_TAGS,  # tags
        ]
    ),
    18,
    {"groupId": "cg"},
    0,
    {"topics": []},
)

golden(
    "streams group member metadata (19)",
    OFFSETS,
    CGM_KEY(19),
    b"".join(
        [
            i16(0),  # version 0
            cs("i1"),  # InstanceId
            cs(None),  # RackId: null
            cs("c"),  # ClientId
            cs("/h"),  # ClientHost
            i32(-1),  # RebalanceTimeoutMs
            i32(1),  # TopologyEpoch
            cs("p"),  # ProcessId
            i8(1),  # UserEndpoint present (non-tagged nullable struct marker)
            cs("host"),  #   Host
            u16(8080),  #   Port
            NO_TAGS,  #   struct tags
            carr(1),  # ClientTags: 1
            cs("a"),  #   Key
            cs("b"),  #   Value
            NO_TAGS,  #   element tags
            NO_TAGS,  # tags
        ]
    ),
    19,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "instanceId": "i1",
        "rackId": None,
        "clientId": "c",
        "clientHost": "/h",
        "rebalanceTimeoutMs": -1,
        "topologyEpoch": 1,
        "processId": "p",
        "userEndpoint": {"host": "host", "port": 8080},
        "clientTags": [{"key": "a", "value": "b"}],
    },
)

golden(
    "streams group member metadata, null endpoint (19)",
    OFFSETS,
    CGM_KEY(19),
    b"".join(
        [
            i16(0),  # version 0
            cs(None),  # InstanceId
            cs(None),  # RackId
            cs("c"),  # ClientId
            cs("/h"),  # ClientHost
            i32(1000),  # RebalanceTimeoutMs
            i32(0),  # TopologyEpoch
            cs("p"),  # ProcessId
            i8(-1),  # UserEndpoint: null
            carr(0),  # ClientTags: none
            NO_TAGS,  # tags
        ]
    ),
    19,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "instanceId": None,
        "rackId": None,
        "clientId": "c",
        "clientHost": "/h",
        "rebalanceTimeoutMs": 1000,
        "topologyEpoch": 0,
        "processId": "p",
        "userEndpoint": None,
        "clientTags": [],
    },
)

golden(
    "streams group target assignment metadata (20)",
    OFFSETS,
    CG_KEY(20),
    b"".join(
        [
            i16(0),  # version 0
            i32(9),  # AssignmentEpoch
            NO_TAGS,  # tags
        ]
    ),
    20,
    {"groupId": "cg"},
    0,
    {"assignmentEpoch": 9, "assignmentTimestamp": 0},
)

golden(
    "streams group target assignment member (21)",
    OFFSETS,
    CGM_KEY(21),
    b"".join(
        [
            i16(0),  # version 0
            carr(1),  # ActiveTasks: 1
            cs("0"),  #   SubtopologyId
            carr(1),  #   Partitions: 1
            i32(2),  #     2
            NO_TAGS,  #   element tags
            carr(0),  # StandbyTasks
            carr(0),  # WarmupTasks
            NO_TAGS,  # tags
        ]
    ),
    21,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "activeTasks": [{"subtopologyId": "0", "partitions": [2]}],
        "standbyTasks": [],
        "warmupTasks": [],
    },
)

golden(
    "streams group current member assignment (22)",
    OFFSETS,
    CGM_KEY(22),
    b"".join(
        [
            i16(0),  # version 0
            i32(3),  # MemberEpoch
            i32(2),  # PreviousMemberEpoch
            i8(1),  # State: STABLE (streams numbering)
            carr(1),  # ActiveTasks: 1
            cs("0"),  #   SubtopologyId
            carr(0),  #   Partitions: none
            NO_TAGS,  #   element tags
            carr(0),  # StandbyTasks
            carr(0),  # WarmupTasks
            carr(0),  # ActiveTasksPendingRevocation
            carr(0),  # StandbyTasksPendingRevocation
            carr(0),  # WarmupTasksPendingRevocation
            NO_TAGS,  # tags
        ]
    ),
    22,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "memberEpoch": 3,
        "previousMemberEpoch": 2,
        "state": 1,
        "activeTasks": [{"subtopologyId": "0", "partitions": [], "assignmentEpochs": []}],
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    },
)

golden(
    "streams group topology (23)",
    OFFSETS,
    CG_KEY(23),
    b"".join(
        [
            i16(0),  # version 0
            i32(1),  # Epoch
            carr(1),  # Subtopologies: 1
            cs("0"),  #   SubtopologyId
            carr(1),  #   SourceTopics: 1
            cs("in"),  #     "in"
            carr(0),  #   SourceTopicRegex
            carr(1),  #   StateChangelogTopics: 1
            cs("cl"),  #     Name
            i32(0),  #     Partitions
            i16(0),  #     ReplicationFactor
            carr(1),  #     TopicConfigs: 1
            cs("cleanup.policy"),  # key
            cs("compact"),  #   value
            NO_TAGS,  #       config tags
            NO_TAGS,  #     TopicInfo tags
            carr(0),  #   RepartitionSinkTopics
            carr(0),  #   RepartitionSourceTopics
            carr(1),  #   CopartitionGroups: 1
            carr(1),  #     SourceTopics: 1
            i16(0),  #       index 0
            carr(0),  #     SourceTopicRegex
            carr(0),  #     RepartitionSourceTopics
            NO_TAGS,  #     group tags
            NO_TAGS,  #   subtopology tags
            NO_TAGS,  # tags
        ]
    ),
    23,
    {"groupId": "cg"},
    0,
    {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": ["in"],
                "sourceTopicRegex": [],
                "stateChangelogTopics": [
                    {
                        "name": "cl",
                        "partitions": 0,
                        "replicationFactor": 0,
                        "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}],
                    }
                ],
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [
                    {"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": []}
                ],
            }
        ],
    },
)

golden(
    "streams target assignment resolved topic ids (24, unreleased)",
    OFFSETS,
    CG_KEY(24),
    b"".join(
        [
            i16(0),  # version 0
            i32(4),  # AssignmentEpoch
            carr(1),  # ResolvedTopicIdsBySubtopology: 1
            cs("0"),  #   SubtopologyId
            carr(1),  #   TopicIds: 1
            U2.bytes,  #     uuid
            NO_TAGS,  #   element tags
            NO_TAGS,  # tags
        ]
    ),
    24,
    {"groupId": "cg"},
    0,
    {
        "assignmentEpoch": 4,
        "resolvedTopicIdsBySubtopology": [{"subtopologyId": "0", "topicIds": [U2]}],
    },
)

# ---------------------------------------------------------------- __transaction_state

TX_KEY = i16(0) + s("tx")  # record type 0 | TransactionalId "tx"

golden(
    "transaction log v0, Empty (worked example)",
    TXN,
    TX_KEY,
    b"".join(
        [
            i16(0),  # version 0
            i64(1000),  # ProducerId
            i16(0),  # ProducerEpoch
            i32(60000),  # TransactionTimeoutMs
            i8(0),  # TransactionStatus: Empty
            arr(-1),  # TransactionPartitions: null
            i64(T0),  # TransactionLastUpdateTimestampMs
            i64(-1),  # TransactionStartTimestampMs
        ]
    ),
    0,
    {"transactionalId": "tx"},
    0,
    {
        "producerId": 1000,
        "producerEpoch": 0,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 0,
        "transactionPartitions": None,
        "transactionLastUpdateTimestampMs": T0,
        "transactionStartTimestampMs": -1,
    },
)

golden(
    "transaction log v0, Ongoing",
    TXN,
    TX_KEY,
    b"".join(
        [
            i16(0),  # version 0
            i64(1000),  # ProducerId
            i16(3),  # ProducerEpoch
            i32(60000),  # TransactionTimeoutMs
            i8(1),  # TransactionStatus: Ongoing
            arr(1),  # TransactionPartitions: 1
            s("t"),  #   Topic
            arr(2),  #   PartitionIds: 2
            i32(0),  #     0
            i32(1),  #     1
            i64(T0 + 5),  # TransactionLastUpdateTimestampMs
            i64(T0),  # TransactionStartTimestampMs
        ]
    ),
    0,
    {"transactionalId": "tx"},
    0,
    {
        "producerId": 1000,
        "producerEpoch": 3,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": T0 + 5,
        "transactionStartTimestampMs": T0,
    },
)

golden(
    "transaction log v1, Ongoing with tags (worked example)",
    TXN,
    TX_KEY,
    b"".join(
        [
            i16(1),  # version 1 (flexible)
            i64(1000),  # ProducerId
            i16(2),  # ProducerEpoch
            i32(60000),  # TransactionTimeoutMs
            i8(1),  # TransactionStatus: Ongoing
            carr(1),  # TransactionPartitions: 1
            cs("t"),  #   Topic
            carr(2),  #   PartitionIds: 2
            i32(0),  #     0
            i32(1),  #     1
            NO_TAGS,  #   element tags
            i64(T0 + 100),  # TransactionLastUpdateTimestampMs
            i64(T0),  # TransactionStartTimestampMs
            uv(2),  # 2 tagged fields
            uv(0),  # tag 0: PreviousProducerId
            uv(8),  # 8 bytes
            i64(1000),  #   1000
            uv(2),  # tag 2: ClientTransactionVersion
            uv(2),  # 2 bytes
            i16(2),  #   TV2
        ]
    ),
    0,
    {"transactionalId": "tx"},
    1,
    {
        "producerId": 1000,
        "previousProducerId": 1000,
        "nextProducerId": -1,
        "producerEpoch": 2,
        "nextProducerEpoch": -1,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": T0 + 100,
        "transactionStartTimestampMs": T0,
        "clientTransactionVersion": 2,
    },
)

golden(
    "transaction log tombstone (expired id)",
    TXN,
    TX_KEY,
    None,
    0,
    {"transactionalId": "tx"},
    None,
    None,
)

# ---------------------------------------------------------------- __share_group_state

SS_KEY = lambda t: i16(t) + s("sg") + U1.bytes + i32(3)  # noqa: E731 -- type | GroupId | TopicId | Partition

golden(
    "share snapshot (share state 0)",
    SHARE,
    SS_KEY(0),
    b"".join(
        [
            i16(0),  # version 0
            i32(1),  # SnapshotEpoch
            i32(2),  # StateEpoch
            i32(3),  # LeaderEpoch
            i64(10),  # StartOffset
            i64(T0),  # CreateTimestamp
            i64(T0 + 1),  # WriteTimestamp
            carr(1),  # StateBatches: 1
            i64(10),  #   FirstOffset
            i64(14),  #   LastOffset
            i8(2),  #   DeliveryState: Acknowledged
            i16(1),  #   DeliveryCount
            NO_TAGS,  #   element tags
            NO_TAGS,  # tags (DeliveryCompleteCount at default -1)
        ]
    ),
    0,
    {"groupId": "sg", "topicId": U1, "partition": 3},
    0,
    {
        "snapshotEpoch": 1,
        "stateEpoch": 2,
        "leaderEpoch": 3,
        "startOffset": 10,
        "deliveryCompleteCount": -1,
        "createTimestamp": T0,
        "writeTimestamp": T0 + 1,
        "stateBatches": [
            {"firstOffset": 10, "lastOffset": 14, "deliveryState": 2, "deliveryCount": 1}
        ],
    },
)

golden(
    "share update (share state 1)",
    SHARE,
    SS_KEY(1),
    b"".join(
        [
            i16(0),  # version 0
            i32(1),  # SnapshotEpoch
            i32(3),  # LeaderEpoch
            i64(-1),  # StartOffset: unchanged
            carr(0),  # StateBatches: none
            uv(1),  # 1 tagged field
            uv(0),  # tag 0: DeliveryCompleteCount
            uv(4),  # 4 bytes
            i32(5),  #   5
        ]
    ),
    1,
    {"groupId": "sg", "topicId": U1, "partition": 3},
    0,
    {
        "snapshotEpoch": 1,
        "leaderEpoch": 3,
        "startOffset": -1,
        "deliveryCompleteCount": 5,
        "stateBatches": [],
    },
)

golden(
    "consumer group current member assignment (8), explicit null epochs",
    OFFSETS,
    CGM_KEY(8),
    b"".join(
        [
            i16(0),  # version 0
            i32(3),  # MemberEpoch
            i32(3),  # PreviousMemberEpoch
            i8(0),  # State: STABLE
            carr(1),  # AssignedPartitions: 1
            U1.bytes,  #   TopicId
            carr(0),  #   Partitions: none
            uv(1),  #   1 tagged field
            uv(0),  #   tag 0: AssignmentEpochs
            uv(1),  #   1 byte
            carr(None),  #   null, written explicitly since the default is []
            carr(0),  # PartitionsPendingRevocation: none
            NO_TAGS,  # tags
        ]
    ),
    8,
    {"groupId": "cg", "memberId": "m1"},
    0,
    {
        "memberEpoch": 3,
        "previousMemberEpoch": 3,
        "state": 0,
        "assignedPartitions": [{"topicId": U1, "partitions": [], "assignmentEpochs": None}],
        "partitionsPendingRevocation": [],
    },
)
