"""Write a simulated cluster's partitions as a Kafka log directory.

Every partition of the :class:`~offsetscope.sim.coordinator.log.LogStore` -- data topics,
``__consumer_offsets-N``, ``__transaction_state-N`` -- becomes ``<out>/<topic>-<partition>/`` written
by :class:`~offsetscope.protocol.log.PartitionWriter`, batch for batch: the same base offsets,
producer ids, epochs, sequences, transactional and control flags, CreateTime timestamps and
leader epoch 0, with segments rolled and named as a broker rolls them (``segment.bytes``,
``segment.ms``), ``.index`` / ``.timeindex`` / ``.txnindex`` / ``.snapshot`` files,
``leader-epoch-checkpoint`` and ``partition.metadata`` (a topic id derived from the seed, so
reruns produce the same bytes). Empty partitions get an empty active segment, as a freshly
created topic has.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import shutil
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from offsetscope.protocol.log import LogConfig, PartitionWriter, RecordSpec
from offsetscope.sim.coordinator.log import LogStore, PartitionLog
from offsetscope.sim.scenarios.spec import LogLayout


@dataclass(frozen=True, slots=True)
class WrittenPartition:
    topic: str
    partition: int
    batches: int
    records: int
    segments: int
    log_end_offset: int


def topic_id(seed: int, topic: str) -> uuid.UUID:
    """A deterministic topic id (a version-4 UUID derived from the seed and the name)."""
    digest = uuid.uuid5(uuid.NAMESPACE_URL, f"offsetscope/{seed}/{topic}")
    return uuid.UUID(bytes=digest.bytes, version=4)


def write_log_dir(
    logs: LogStore,
    out: Path,
    layout: LogLayout,
    *,
    seed: int,
    replace: bool = False,
    workers: int = 1,
) -> list[WrittenPartition]:
    """Write every partition of ``logs`` under ``out``.

    Args:
        logs: the simulated partitions.
        out: the log directory (created; it must not hold partition directories unless
            ``replace``).
        layout: segment settings (internal topics use ``internal_segment_bytes``).
        seed: the scenario seed (topic ids).
        replace: delete partition directories already in ``out`` first.
        workers: processes writing partitions in parallel (forked, so they share the logs;
            each partition is written by exactly one of them, so the bytes do not depend on
            this number). 1 writes in this process.

    Returns:
        What was written, per partition, in (topic, partition) order.

    Raises:
        FileExistsError: ``out`` already holds a partition directory and ``replace`` is False.
    """
    out.mkdir(parents=True, exist_ok=True)
    partitions = list(logs)
    for log in partitions:
        directory = out / f"{log.topic}-{log.partition}"
        if directory.exists():
            if not replace:
                raise FileExistsError(f"{directory} exists (pass replace=True to overwrite)")
            shutil.rmtree(directory)
    enabled = gc.isenabled()
    gc.disable()  # see Simulation.run: no cycles here, and a full GC pass per batch is costly
    try:
        if workers > 1 and len(partitions) > 1 and "fork" in mp.get_all_start_methods():
            return _write_parallel(partitions, out, layout, seed, workers)
        return [_write_partition(log, out, layout, seed) for log in partitions]
    finally:
        if enabled:
            gc.enable()


# The partitions a forked writer process reads (set before the fork, inherited by the children).
_SHARED: list[PartitionLog] = []


def _write_shared(index: int, out: Path, layout: LogLayout, seed: int) -> WrittenPartition:
    return _write_partition(_SHARED[index], out, layout, seed)


def _write_parallel(
    partitions: list[PartitionLog], out: Path, layout: LogLayout, seed: int, workers: int
) -> list[WrittenPartition]:
    _SHARED[:] = partitions
    try:
        # Biggest partitions first, so the processes finish together.
        order = sorted(range(len(partitions)), key=lambda i: -len(partitions[i].batches))
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
            futures = {i: pool.submit(_write_shared, i, out, layout, seed) for i in order}
            return [futures[i].result() for i in range(len(partitions))]
    finally:
        _SHARED.clear()


def _write_partition(
    log: PartitionLog, out: Path, layout: LogLayout, seed: int
) -> WrittenPartition:
    directory = out / f"{log.topic}-{log.partition}"
    internal = log.topic.startswith("__")
    config = LogConfig(
        segment_bytes=layout.internal_segment_bytes if internal else layout.segment_bytes,
        segment_ms=layout.segment_ms,
        index_interval_bytes=layout.index_interval_bytes,
    )
    records = 0
    with PartitionWriter(directory, config=config, topic_id=topic_id(seed, log.topic)) as w:
        for batch in log.batches:
            if batch.base_offset != w.next_offset:
                raise ValueError(
                    f"{log.name}: batch at {batch.base_offset}, log end {w.next_offset}"
                )
            w.append(
                [RecordSpec(r.key, r.value, r.timestamp, r.headers) for r in batch.records],
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                is_transactional=batch.is_transactional,
                is_control=batch.is_control,
                partition_leader_epoch=batch.partition_leader_epoch,
            )
            records += len(batch.records)
        segments = len(w.segment_base_offsets)
        end = w.next_offset
    return WrittenPartition(log.topic, log.partition, len(log.batches), records, segments, end)
