"""Two real Kafka clusters read by one ingest query.

The run's broker is cluster ``east``; a second broker started here (and stopped here) is
``west``. Both get the same topic name, the same consumer group id committing other offsets, and
the same transactional id -- committed in ``east``, aborted in ``west``. One query reads both
clusters' internal topics with Spark's Kafka source (``[clusters.east]``, ``[clusters.west]``),
with an end-offset sampler per cluster; every table keeps the clusters apart.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.pipelines import state as st
from offsetscope.spark import tables as catalogue
from offsetscope.verify.harness.broker import Broker, BrokerHandle

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

PARTITIONS = 2
# Records per partition and the offset the shared group commits on each partition, per cluster.
RECORDS = {"east": 12, "west": 20}
COMMITTED = {"east": 5, "west": 9}
OUTCOME = {"east": "committed", "west": "aborted"}


@dataclass(frozen=True)
class Names:
    topic: str
    group: str
    transactional_id: str


@pytest.fixture(scope="module")
def west_broker(offsetscope_config: config.Config) -> Iterator[BrokerHandle]:
    broker = Broker(
        dataclasses.replace(offsetscope_config.broker, name=f"pytest-{os.getpid()}-west")
    )
    handle = broker.start(fresh=True, tie_to_parent=True)
    try:
        yield handle
    finally:
        handle.stop()


def _traffic(bootstrap: str, names: Names, cluster: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(names.topic, PARTITIONS, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(RECORDS[cluster]):
            producer.produce(names.topic, key=str(i).encode(), value=b"x", partition=p)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": names.group,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        offsets = [TopicPartition(names.topic, p, COMMITTED[cluster]) for p in range(PARTITIONS)]
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": names.transactional_id})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(names.topic, value=b"in a transaction", partition=0)
    assert txn.flush(30) == 0
    if OUTCOME[cluster] == "committed":
        txn.commit_transaction(30)
    else:
        txn.abort_transaction(30)


def test_one_query_keeps_two_clusters_with_the_same_ids_apart(
    spark: SparkSession,
    offsetscope_config: config.Config,
    kafka_broker: BrokerHandle,
    west_broker: BrokerHandle,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tag = uuid.uuid4().hex[:8]
    names = Names(f"clusters-orders-{tag}", f"clusters-group-{tag}", f"clusters-txn-{tag}")
    bootstrap = {"east": kafka_broker.bootstrap, "west": west_broker.bootstrap}
    for cluster, servers in bootstrap.items():
        _traffic(servers, names, cluster)

    base = offsetscope_config
    clusters = {
        cluster: config.ClusterConfig(
            kind="kafka",
            kafka=dataclasses.replace(
                base.sources.kafka, bootstrap_servers=servers, starting_offsets="earliest"
            ),
        )
        for cluster, servers in bootstrap.items()
    }
    root = tmp_path_factory.mktemp("two-clusters")
    cfg = config.with_storage(
        dataclasses.replace(base, clusters=clusters),
        schema=f"t_two_clusters_{tag}",
        checkpoint_dir=root / "checkpoints",
    )
    cfg = config.with_pipeline(cfg, trigger="available_now")
    try:
        ingest.run(spark, cfg, query_name=f"two_clusters_{tag}")

        def rows(logical: str, where: str) -> list[dict[str, object]]:
            table = catalogue.current_rows(spark, cfg, logical)
            return [r.asDict() for r in table.where(where).collect()]

        for cluster in bootstrap:
            commits = rows(
                "offset_commits", f"cluster = '{cluster}' AND group_id = '{names.group}'"
            )
            assert {(r["topic"], r["partition"], r["offset"]) for r in commits} == {
                (names.topic, p, COMMITTED[cluster]) for p in range(PARTITIONS)
            }, cluster
            txns = rows(
                "transactions",
                f"cluster = '{cluster}' AND transactional_id = '{names.transactional_id}'",
            )
            assert [r["outcome"] for r in txns] == [OUTCOME[cluster]], cluster
            samples = rows("end_offsets", f"cluster = '{cluster}' AND topic = '{names.topic}'")
            # Each cluster's end offsets come from its own brokers.
            assert samples
            assert {r["high_watermark"] for r in samples if r["partition"] == 1} == {
                RECORDS[cluster]
            }, cluster
            lag = rows("partition_lag", f"cluster = '{cluster}' AND group_id = '{names.group}'")
            assert {r["lag_records_hwm"] for r in lag if r["partition"] == 1} == {
                RECORDS[cluster] - COMMITTED[cluster]
            }, cluster
        current = rows("groups_current", f"group_id = '{names.group}'")
        assert sorted(str(r["cluster"]) for r in current) == ["east", "west"]
        for logical, spec in catalogue.CATALOGUE.items():
            if catalogue.CLUSTER in spec.column_names:
                # The deployment's own states (lease, clusters read) are no cluster's.
                known = "'east', 'west', ''" if logical == st.STATE else "'east', 'west'"
                strays = rows(logical, f"cluster IS NULL OR cluster NOT IN ({known})")
                assert strays == [], logical
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")
