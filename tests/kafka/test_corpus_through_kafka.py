"""The hostile corpus through a real broker and Spark's Kafka source, not only a log directory.

The corpus (:mod:`offsetscope.verify.corpus`) is produced, record by record, to two mirror topics of the
shared broker with the internal topics' partition counts (``corpus.produce``); a query whose
``[sources.kafka]`` names those topics as the offsets and transaction topics reads them in
several available-now batches. Kafka's own path is different from the segment reader's: the
source hands over key and value as Spark binary columns, one row per record, with no batch
framing, producer ids or control records -- the decoders and the quarantine must hold anyway.

What it must show: every record accounted for (events + quarantined + unknown = records in, each
in the table of the kind the reference decoder gives it), every quarantined row names its error
class, field path and byte offset and keeps its raw key and value, and no offset is missing.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import corpus_checks
import pytest
from pyspark.sql import SparkSession

from offsetscope import config
from offsetscope.pipelines import ingest
from offsetscope.spark import tables as catalogue
from offsetscope.verify import corpus
from offsetscope.verify.harness import clients
from offsetscope.verify.harness.broker import BrokerHandle

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.streaming]

RECORDS = 2_000
SEED = 11
BATCH = 1_000  # maxOffsetsPerTrigger: several micro-batches
# The corpus's timestamps are from 2023; time-based retention would delete the mirror's segments.
MIRROR_TOPIC_CONFIG = {"retention.ms": "-1"}


@dataclass(frozen=True)
class Run:
    cfg: config.Config
    manifest: Any  # pyarrow Table
    accounting: corpus.Accounting


@pytest.fixture(scope="module")
def run(
    spark: SparkSession,
    kafka_broker: BrokerHandle,
    offsetscope_config: config.Config,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("corpus-kafka")
    log_dir = root / "logs"
    entries = corpus.generate(RECORDS, seed=SEED)
    assert corpus.check_invariants(entries) == []
    layout = corpus.write_corpus(entries, log_dir, seed=SEED)
    manifest = corpus.load_manifest(log_dir)

    bootstrap = kafka_broker.bootstrap
    tag = uuid.uuid4().hex[:8]
    mirrors = {
        corpus.OFFSETS_TOPIC: f"corpus-offsets-{tag}",
        corpus.TRANSACTION_TOPIC: f"corpus-txn-{tag}",
    }
    for internal, mirror in mirrors.items():
        partitions = layout.partitions[internal]
        clients.create_topic(bootstrap, mirror, partitions, config=MIRROR_TOPIC_CONFIG)
    acked = corpus.produce(
        manifest,
        bootstrap,
        offsets_topic=mirrors[corpus.OFFSETS_TOPIC],
        transaction_topic=mirrors[corpus.TRANSACTION_TOPIC],
    )
    assert acked == layout.records == RECORDS

    cfg = config.with_kafka_source(
        offsetscope_config,
        bootstrap,
        offsets_topic=mirrors[corpus.OFFSETS_TOPIC],
        transaction_topic=mirrors[corpus.TRANSACTION_TOPIC],
        max_offsets_per_trigger=BATCH,
    )
    cfg = config.with_storage(cfg, schema=f"t_kcorpus_{tag}", checkpoint_dir=root / "cp")
    cfg = config.with_pipeline(cfg, trigger="available_now")
    try:
        ingest.run(spark, cfg, query_name=f"kcorpus_{tag}")
        # Fresh mirror topics hold each record at its manifest offset (corpus.produce).
        yield Run(cfg, manifest, corpus.account(spark, cfg, log_dir))
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {cfg.storage.schema} CASCADE")


def test_every_record_read_from_kafka_is_accounted_for(spark: SparkSession, run: Run) -> None:
    acc = run.accounting
    assert acc.misplaced == ()
    assert acc.unnamed == 0
    assert acc.balanced, acc
    expected = Counter(run.manifest.column("expected_kind").to_pylist())
    assert acc.quarantined == expected["error"] > 0
    assert acc.unknown == expected["unknown"] > 0
    assert acc.batches >= RECORDS // BATCH
    audit = spark.table(catalogue.table_name(run.cfg, "batch_audit")).collect()
    assert sum(a["offsets_not_seen"] for a in audit) == 0


def test_quarantined_records_keep_their_bytes_and_name_their_error(
    spark: SparkSession, run: Run
) -> None:
    rows = corpus_checks.quarantine_rows(spark, run.cfg)
    expected = corpus_checks.expected_outcomes(run.manifest.to_pylist())
    assert corpus_checks.found_outcomes(rows) == expected
