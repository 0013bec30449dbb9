"""Share groups (KIP-932) and Kafka Streams groups (KIP-1071) from real clients on the real broker.

A Kafka Streams application (compiled with javac against the Kafka Streams jars of the broker's
version, ``group.protocol = streams``) runs as one instance, then two, then one again; a share
consumer receives and acknowledges records. Spark's Kafka source ingests ``__consumer_offsets``
and ``__share_group_state``, and the gold tables must agree with what the clients observed
(:mod:`offsetscope.verify.share_streams`; the bundled coordinator simulates neither group type,
so the clients are the ground truth).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.verify import share_streams
from offsetscope.verify.harness.broker import BrokerHandle

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]


def test_share_and_streams_groups_agree_with_what_their_clients_observed(
    spark: SparkSession,
    offsetscope_config: config.Config,
    kafka_broker: BrokerHandle,
    tmp_path: Path,
) -> None:
    checker = share_streams.accuracy(
        spark, offsetscope_config, kafka_broker.bootstrap, tmp_path, "share-streams"
    )
    result = checker.result()
    assert result.wrong == 0, [m.line() for m in result.mismatches]
    # Three settled splits of the Streams group, each matched to an assignment epoch with its
    # endpoints, the epochs and the leaving member; the share-partition's state.
    assert result.checked["streams"] >= 3 + 4 + 4
    assert result.checked["share"] >= 4
