"""Values of KRaft control records (types 2-6), as DumpLogSegments prints them.

Mirrors ``clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json``. Unlike coordinator values these are
*not* version-prefixed: each is a flexible message encoded at version 0 whose first field is an
int16 ``Version`` (``docs/formats.md`` section 6). They appear in ``__cluster_metadata`` and KRaft
snapshots, not in the internal topics this project reads, but a log-format decoder meets them.
"""

from __future__ import annotations

from offsetscope.protocol.schema import Field as F
from offsetscope.protocol.schema import Message

_VOTER = (F("VoterId", "int32", "0+"), F("VoterDirectoryId", "uuid", "1+"))

LEADER_CHANGE_MESSAGE = Message(
    "LeaderChangeMessage",
    valid="0-1",
    flexible="0+",
    fields=(
        F("Version", "int16", "0+"),
        F("LeaderId", "int32", "0+"),
        F("Voters", "[]Voter", "0+", fields=_VOTER),
        F("GrantingVoters", "[]Voter", "0+", fields=_VOTER),
    ),
)
SNAPSHOT_HEADER_RECORD = Message(
    "SnapshotHeaderRecord",
    valid="0",
    flexible="0+",
    fields=(F("Version", "int16", "0+"), F("LastContainedLogTimestamp", "int64", "0+")),
)
SNAPSHOT_FOOTER_RECORD = Message(
    "SnapshotFooterRecord", valid="0", flexible="0+", fields=(F("Version", "int16", "0+"),)
)
KRAFT_VERSION_RECORD = Message(
    "KRaftVersionRecord",
    valid="0",
    flexible="0+",
    fields=(F("Version", "int16", "0+"), F("KRaftVersion", "int16", "0+")),
)
VOTERS_RECORD = Message(
    "VotersRecord",
    valid="0",
    flexible="0+",
    fields=(
        F("Version", "int16", "0+"),
        F(
            "Voters",
            "[]Voter",
            "0+",
            fields=(
                F("VoterId", "int32", "0+"),
                F("VoterDirectoryId", "uuid", "0+"),
                F(
                    "Endpoints",
                    "[]Endpoint",
                    "0+",
                    fields=(
                        F("Name", "string", "0+"),
                        F("Host", "string", "0+"),
                        F("Port", "uint16", "0+"),
                    ),
                ),
                F(
                    "KRaftVersionFeature",
                    "KRaftVersionFeature",
                    "0+",
                    fields=(
                        F("MinSupportedVersion", "int16", "0+"),
                        F("MaxSupportedVersion", "int16", "0+"),
                    ),
                ),
            ),
        ),
    ),
)

# Control record type -> (label DumpLogSegments prints, message).
KRAFT_CONTROL_MESSAGES: dict[int, tuple[str, Message]] = {
    2: ("LeaderChange:", LEADER_CHANGE_MESSAGE),
    3: ("SnapshotHeader", SNAPSHOT_HEADER_RECORD),
    4: ("SnapshotFooter", SNAPSHOT_FOOTER_RECORD),
    5: ("KRaftVersion", KRAFT_VERSION_RECORD),
    6: ("KRaftVoters", VOTERS_RECORD),
}
