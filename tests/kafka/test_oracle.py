"""Kafka's DumpLogSegments and offsetscope agree on every record of the session broker's log.

The same comparison as ``make oracle`` (:mod:`offsetscope.verify.oracle`), on a smaller workload: real
clients drive the session broker through every classic-group and transaction scenario with a
little commit traffic, the internal topics' segments are copied (the broker keeps running), and
Kafka's tool and offsetscope decode the copy. Whatever earlier tests of the run wrote is
compared too, KIP-848 consumer groups and share groups included.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from offsetscope.verify.harness.broker import BrokerHandle
from offsetscope.verify.oracle import (
    DECODERS,
    compare_log_dir,
    internal_segments,
    offsetscope_segment,
    run_workload,
    snapshot_log_dir,
)

pytestmark = pytest.mark.kafka

OFFSETS = "__consumer_offsets"
TXN = "__transaction_state"


def _kinds(snapshot: Path) -> Counter[str]:
    """What the compared records were, from offsetscope's side of the comparison."""
    kinds: Counter[str] = Counter()
    for topic in DECODERS:
        for segment in internal_segments(snapshot, topic):
            for batch, record in offsetscope_segment(segment, topic).records():
                f = record.fields
                if batch.fields.get("isTransactional") and not batch.fields.get("isControl"):
                    kinds["transactional data"] += 1
                if "endTxnMarker" in f:
                    kinds[f"marker {f['endTxnMarker']}"] += 1
                elif f.get("payload") == "<DELETE>":
                    kinds[f"tombstone type {f['key']['type']}"] += 1
                elif isinstance(f.get("payload"), dict):
                    data = f["payload"]["data"]
                    kinds[f"type {f['key']['type']}"] += 1
                    if "transactionStatus" in data:
                        kinds[f"status {data['transactionStatus']}"] += 1
                    for member in data.get("members", ()):
                        if isinstance(member["subscription"], dict):
                            kinds["decoded subscription"] += 1
                        if isinstance(member["assignment"], dict):
                            kinds["decoded assignment"] += 1
    return kinds


def test_dump_log_segments_agrees_with_offsetscope_on_the_broker_log(
    kafka_broker: BrokerHandle, tmp_path: Path
) -> None:
    summary = run_workload(
        kafka_broker.bootstrap, kafka_broker.log_dir, scale=30, kip848=True, share=True
    )
    snapshot = snapshot_log_dir(kafka_broker.log_dir, tmp_path / "snapshot")

    report = compare_log_dir(snapshot, config=kafka_broker.config)

    assert report.differences == (), "\n".join(str(d) for d in report.differences[:40])
    assert report.summary_line() == f"oracle: {report.records} records compared, 0 differ"
    assert report.files == sum(len(internal_segments(snapshot, t)) for t in DECODERS)
    assert report.records_by_topic[OFFSETS] >= 250
    assert report.records_by_topic[TXN] >= 20
    kinds = _kinds(snapshot)
    wanted = {
        "type 1",
        "type 2",
        "type 0",
        "tombstone type 1",
        "tombstone type 2",
        "marker COMMIT",
        "marker ABORT",
        "transactional data",
        "decoded subscription",
        "decoded assignment",
        *(
            f"status {s}"
            for s in (
                "Empty",
                "Ongoing",
                "PrepareCommit",
                "CompleteCommit",
                "PrepareAbort",
                "CompleteAbort",
            )
        ),
    }
    assert wanted <= set(kinds), sorted(wanted - set(kinds))
    # The workload's groups and transactional ids are all in what was compared.
    text = "".join(
        str(r.fields.get("key"))
        for topic in DECODERS
        for segment in internal_segments(snapshot, topic)
        for _, r in offsetscope_segment(segment, topic).records()
    )
    for name in (*summary.groups, *summary.transactional_ids):
        assert name in text, name
