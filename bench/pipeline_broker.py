"""The pipeline fed by a real broker: the ``bench.pipeline`` input through Spark's Kafka source.

Input: the same ``simulate scale`` scenario as :mod:`bench.pipeline` (same groups, duration and
seed, so the same records), mirrored record by record to a fresh harness broker
(``offsetscope.sim.scenarios.mirror.mirror_to_broker``: internal topics cannot be produced to, so
``__consumer_offsets`` goes to a compacted mirror topic with the same partitions, keys, values and
order; data topics under their own names, so the end-offset sampler finds them and lag is
computed as on the log-directory run; timestamps shifted to now so retention keeps them).
Producing is setup, not timed.

Measured: the ingest query (``offsetscope.pipelines.ingest.run``) with ``[sources.kafka]``
pointed at the mirror topics, ``trigger = available_now``, ``max_offsets_per_trigger`` as the
log-directory run's ``max_records_per_trigger``, on ``local[2]``, tables created beforehand,
in a process of its own whose memory is sampled (:func:`bench.pipeline.run_worker`). Figure:
``pipeline_from_broker_records_per_s`` = records read / wall time of the query.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import Metric, harness_broker
from bench.pipeline import (
    DURATION_S,
    GROUPS,
    PARTITIONS,
    run_worker,
    throughput_metrics,
    timed_ingest,
)

OFFSETS_MIRROR = "mirror.consumer_offsets"
TRANSACTION_MIRROR = "mirror.transaction_state"


def mirror_scale(bootstrap: str, groups: int, duration_s: int) -> int:
    """Simulate ``scale`` (``groups`` x :data:`PARTITIONS` partitions, ``duration_s``) and
    mirror it to the broker at ``bootstrap`` (module docstring); returns how many
    internal-topic records the query will read."""
    from offsetscope.sim.scenarios.engine import simulate
    from offsetscope.sim.scenarios.mirror import MirrorNames, mirror_to_broker
    from offsetscope.sim.scenarios.spec import load_scenario

    scenario = load_scenario(
        "scale",
        params={
            "groups": str(groups),
            "duration": f"{duration_s}s",
            "partitions": str(PARTITIONS),
        },
    )
    began = time.perf_counter()
    logs = simulate(scenario).cluster.logs
    # Data topics keep their names: the commits name them, and the end-offset sampler (lag,
    # partition_lag) looks them up on the broker, as on the log-directory run.
    names = MirrorNames(
        offsets_topic=OFFSETS_MIRROR, transaction_topic=TRANSACTION_MIRROR, prefix=""
    )
    mirrored = mirror_to_broker(
        logs, bootstrap, names=names, start_ms=scenario.start_ms, timeout_s=600.0
    )
    print(
        f"simulated and mirrored {mirrored.produced:,} records in "
        f"{time.perf_counter() - began:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    # The scenario's data topics are mirrored too; the query reads the internal ones.
    return sum(
        len(batch.records)
        for log in logs
        if log.topic in ("__consumer_offsets", "__transaction_state")
        for batch in log.batches
        if not batch.is_control
    )


def broker_config(bootstrap: str, per_trigger: int) -> Any:
    """``conf/local`` reading the mirror topics at ``bootstrap``, ``per_trigger`` records a
    micro-batch at most."""
    from offsetscope import config

    return config.with_kafka_source(
        config.load("local"),
        bootstrap,
        offsets_topic=OFFSETS_MIRROR,
        transaction_topic=TRANSACTION_MIRROR,
        max_offsets_per_trigger=per_trigger,
    )


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Broker, mirror and query in this process; returns records, seconds and batch reports."""
    from offsetscope import config
    from offsetscope.spark.session import build_session
    from offsetscope.spark.tables import ensure_tables

    out = Path(spec["out"]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with harness_broker("bench-pipeline-broker") as handle:
        internal = mirror_scale(handle.bootstrap, int(spec["groups"]), int(spec["duration_s"]))
        cfg = broker_config(handle.bootstrap, int(spec["max_records_per_trigger"]))
        cfg = config.with_storage(cfg, work_dir=out, schema="offsetscope_bench_broker")
        cfg = config.with_pipeline(cfg, trigger="available_now")
        spark = build_session(cfg, app_name="offsetscope-bench-pipeline-broker")
        try:
            ensure_tables(spark, cfg)
            result = timed_ingest(spark, cfg)
        finally:
            spark.stop()
    if result["records"] != internal:
        raise RuntimeError(f"the query read {result['records']} records of {internal} mirrored")
    return result


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    groups = max(10, int(GROUPS * scale))
    per_trigger = int(os.environ.get("BENCH_PIPELINE_PER_TRIGGER", "1000000"))
    spec = {
        "groups": groups,
        "duration_s": DURATION_S,
        "max_records_per_trigger": per_trigger,
    }
    results = []
    for i in range(runs):
        res = run_worker("--worker", spec, f"broker-{i}", module="bench.pipeline_broker")
        print(
            f"  pipeline from broker run {i}: {res['records']:,} records in "
            f"{res['seconds']:.1f} s, {len(res['batches'])} batches",
            flush=True,
        )
        results.append(res)
    described = (
        f"`simulate scale` {groups:,} groups x {PARTITIONS} partitions, {DURATION_S} s, "
        f"mirrored to a harness broker: {results[-1]['records']:,} records"
    )
    metrics = throughput_metrics(results, described, per_trigger)
    throughput = metrics[0]
    return [
        dataclasses.replace(
            throughput,
            name="pipeline_from_broker_records_per_s",
            notes=throughput.notes.replace("log directory", "Kafka source (mirror topics)"),
        ),
        *(
            dataclasses.replace(m, name=m.name.replace("pipeline_", "pipeline_from_broker_"))
            for m in metrics[1:]
        ),
    ]


if __name__ == "__main__":
    Path(sys.argv[3]).write_text(json.dumps(worker(json.loads(sys.argv[2]))))
