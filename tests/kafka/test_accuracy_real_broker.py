"""Accuracy on real traffic: real confluent-kafka clients drive the harness broker (rebalances,
manual commits, transactions committed and aborted with offsets), Spark's Kafka source ingests
the internal topics, and the gold tables must agree with what the clients themselves observed
(``offsetscope.verify.accuracy.real_broker_accuracy``; ``make accuracy ACCURACY_ARGS=--real-broker``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.verify import accuracy
from offsetscope.verify.harness.broker import BrokerHandle

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]


def test_gold_tables_agree_with_what_the_real_clients_observed(
    spark: SparkSession,
    offsetscope_config: config.Config,
    kafka_broker: BrokerHandle,
    tmp_path: Path,
) -> None:
    result = accuracy.real_broker_accuracy(
        spark, offsetscope_config, kafka_broker, tmp_path, progress=lambda _: None
    )
    assert result.wrong == 0, [m.line() for m in result.mismatches]
    # Generations with members and assignments, commits and transactions were all checked.
    assert result.checked.get("generation", 0) >= 4
    assert result.checked.get("commit", 0) >= 1
    assert result.checked.get("transaction", 0) >= 3
