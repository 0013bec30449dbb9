"""Where the folds' state lives between micro-batches: the ``fold_state`` Delta table against
Spark's state store.

The ingest query keeps each fold's state (a group's, a transactional id's ...) as a JSON text
in ``fold_state`` and appends the states a batch changed as their next versions
(lib/offsetscope/pipelines/state.py); until then it MERGEd them. The alternative is Spark's state store (RocksDB), committed with the query's checkpoint, with the
fold running in a Python stateful operator keyed by the state's key: ``transformWithStateInPandas``
(each key's state read and written through the state API) or ``applyInPandasWithState`` (the
state handed to the function with the key's rows). This measures what each costs per micro-batch
for the same number of changed states, on the same session:

* ``merge``: N states of ``STATE_BYTES`` MERGEd into a ``fold_state`` of ``STORED`` states (N
  keys drawn at random, the MERGE restricted to their folds and keys), as the pipeline did;
* ``append``: the same N states appended to it as their next versions, as the pipeline does
  now (its mirror knows the versions they replace, so nothing is read first);
* ``transform_with_state`` / ``apply_in_pandas_with_state``: a streaming query over Parquet
  files, one file (one row per key, N keys) per micro-batch (``maxFilesPerTrigger`` 1), each
  key's state (a JSON text of ``STATE_BYTES``) read, changed and written back, one output row
  per key to a ``foreachBatch`` that collects them; after a first batch that creates every
  state. Each batch's ``triggerExecution`` minus the median batch of the same query without the
  stateful operator (``plain``: the source, the file read and the ``foreachBatch``), so the
  figure is what the state adds, as ``merge`` is what the save adds.

Figures (N = ``SMALL`` changed states, a small batch's; N = ``STORED``, every state changing, as
in a steady batch of 1,000,000 records of 10,000 groups): ``fold_state_<how>_s_<N>`` and
``fold_state_store_vs_merge_<N>``, the better of the two state-store figures over the MERGE,
and ``fold_state_append_vs_merge_<N>``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import Metric
from bench.pipeline import run_worker

STORED = 10_000
SMALL = 50
STATE_BYTES = 2_100  # a group fold state of the scale scenario, as stored (docs/benchmarks.md)
MERGES = 8
BATCHES = {SMALL: 8, STORED: 4}
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HOW = ("merge", "transform_with_state", "apply_in_pandas_with_state")
WRITES = ("merge", "append")  # the two ways of the fold_state table


def _state(n: int) -> str:
    return json.dumps({"folded": n, "pad": "x" * (STATE_BYTES - 30)})


def _changed(text: str | None, rows: int) -> str:
    """A fold step: the stored state read, changed by the key's rows, written as JSON."""
    found = json.loads(text) if text is not None else {"folded": 0, "pad": "x" * STATE_BYTES}
    found["folded"] += rows
    return json.dumps(found)


def _write_seconds(spark: Any, cfg: Any, n: int, rounds: int, how: str) -> list[float]:
    """``rounds`` writes of ``n`` changed states into a fresh fold_state of ``STORED``."""
    from offsetscope.pipelines import state as st
    from offsetscope.spark import tables as catalogue
    from offsetscope.spark import writes

    # A table of its own per way and size: each starts from the same STORED states.
    table = dataclasses.replace(cfg.tables, fold_state=f"fold_state_{how}_{n}")
    cfg = dataclasses.replace(cfg, tables=table)
    catalogue.ensure_tables(spark, cfg, [st.STATE])
    stored = [st.StateRow("group", f"g{i:05d}", _state(i), i, "bench", 0) for i in range(STORED)]
    for b in range(0, STORED, 1_000):
        frame = writes.table_frame(
            spark, st.STATE, st.records(stored[b : b + 1_000], batch_id=b, now_ms=0)
        )
        writes.append(frame, cfg, st.STATE, query_name="bench", batch_id=b, fresh=True)
    rng = random.Random(n)
    out = []
    for r in range(rounds):
        keys = sorted(rng.sample(range(STORED), n))
        rows = [
            st.StateRow("group", f"g{k:05d}", _changed(_state(k), 1), r, "bench", r + 1)
            for k in keys
        ]
        began = time.perf_counter()
        frame = writes.table_frame(spark, st.STATE, st.records(rows, batch_id=STORED + r, now_ms=0))
        if how == "merge":
            prune = [
                p
                for p in (
                    writes.in_list("fold", ["group"]),
                    writes.in_list("key", [row.key for row in rows]),
                )
                if p is not None
            ]
            writes.merge(frame, cfg, st.STATE, query_name="bench", batch_id=STORED + r,
                         prune=prune, fresh=True)  # fmt: skip
        else:
            writes.append(frame, cfg, st.STATE, query_name="bench", batch_id=STORED + r, fresh=True)
        out.append(time.perf_counter() - began)
    return out


def _stream_seconds(spark: Any, src: Path, checkpoint: Path, how: str) -> list[float]:
    """``triggerExecution`` of every batch after the first of a query over ``src``."""
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.streaming.state import GroupStateTimeout

    out_schema = "key string, size bigint"
    stream = (
        spark.readStream.schema("key string, payload string")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
    )

    class Fold(StatefulProcessor):  # type: ignore[misc]
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("state", "text string")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            n = sum(len(r) for r in rows)
            text = _changed(self.state.get()[0] if self.state.exists() else None, n)
            self.state.update((text,))
            yield pd.DataFrame({"key": [key[0]], "size": [len(text)]})

        def close(self) -> None:
            pass

    def apply(key: Any, frames: Iterator[Any], state: Any) -> Iterator[Any]:
        n = sum(len(f) for f in frames)
        text = _changed(state.get[0] if state.exists else None, n)
        state.update((text,))
        yield pd.DataFrame({"key": [key[0]], "size": [len(text)]})

    grouped = stream.groupBy("key")
    if how == "transform_with_state":
        stream = grouped.transformWithStateInPandas(Fold(), out_schema, "Update", "None")
    elif how == "apply_in_pandas_with_state":
        stream = grouped.applyInPandasWithState(
            apply, out_schema, "text string", "Update", GroupStateTimeout.NoTimeout
        )
    elif how != "plain":
        raise ValueError(f"unknown way {how!r}")
    outputs: list[int] = []
    query = (
        stream.writeStream.outputMode("update")
        .foreachBatch(lambda df, _: outputs.append(df.toArrow().num_rows))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    timed = [p for p in query.recentProgress if p.numInputRows]
    if len(timed) != len(outputs) or any(
        o != p.numInputRows for o, p in zip(outputs, timed, strict=True)
    ):
        raise RuntimeError(
            f"{how}: batches of {[p.numInputRows for p in timed]} rows output {outputs}"
        )
    return [p.durationMs["triggerExecution"] / 1000 for p in timed[1:]]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Every way, for each N of ``spec['sizes']``, in one session."""
    import shutil

    from offsetscope import config
    from offsetscope.spark.session import build_session

    out = Path(spec["out"]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    cfg = config.with_storage(config.load("local"), work_dir=out, schema="offsetscope_bench_state")
    spark = build_session(
        cfg,
        app_name="offsetscope-bench-state",
        extra_conf={"spark.sql.streaming.stateStore.providerClass": ROCKSDB},
    )
    result: dict[str, Any] = {}
    try:
        for n in spec["sizes"]:
            src = out / f"source-{n}"
            rng = random.Random(n)
            batches = [list(range(STORED))]
            batches += [sorted(rng.sample(range(STORED), n)) for _ in range(BATCHES[n])]
            for i, keys in enumerate(batches):
                spark.createDataFrame(
                    [(f"g{k:05d}", "p" * 40) for k in keys], "key string, payload string"
                ).coalesce(1).write.parquet(str(src / f"batch-{i:04d}"))
            files = src / "*"
            plain = _stream_seconds(spark, files, out / f"ck-plain-{n}", "plain")
            base = statistics.median(plain)
            one: dict[str, Any] = {"plain": plain}
            for how in HOW[1:]:
                raw = _stream_seconds(spark, files, out / f"ck-{how}-{n}", how)
                one[f"{how}_raw"] = raw
                one[how] = [s - base for s in raw]
            for how in WRITES:
                one[how] = _write_seconds(spark, cfg, n, MERGES, how)
            result[str(n)] = one
            print(f"{n} states: {one}", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    return result


def run(runs: int = 1, scale: float = 1.0) -> list[Metric]:
    """One worker run; ``runs`` and ``scale`` do not apply (the sizes are the figures)."""
    del runs, scale
    result = run_worker("--state", {"sizes": [SMALL, STORED]}, "state-store", module=__name__)
    metrics: list[Metric] = []
    for n in (SMALL, STORED):
        one = result[str(n)]
        described = (
            f"{n:,} changed fold states of {STATE_BYTES:,} bytes (JSON) a micro-batch, of "
            f"{STORED:,} stored; local[2]"
        )
        notes = {
            "merge": f"Delta MERGE into fold_state, restricted to the states' keys, as the "
            f"pipeline wrote them until it appended them; {MERGES} MERGEs, first two dropped",
            "append": "the same states appended to fold_state as their next versions "
            f"(pipelines/state.py), as the pipeline writes them; {MERGES} appends, first two "
            "dropped",
            "transform_with_state": "transformWithStateInPandas, ValueState, RocksDB: each "
            "batch's triggerExecution minus the plain query's median "
            f"({statistics.median(one['plain']):.2f} s)",
            "apply_in_pandas_with_state": "applyInPandasWithState, RocksDB: each batch's "
            "triggerExecution minus the plain query's median "
            f"({statistics.median(one['plain']):.2f} s)",
        }
        samples = {**{h: one[h][2:] for h in WRITES}, **{h: one[h] for h in HOW[1:]}}
        metrics.extend(
            Metric(f"fold_state_{how}_s_{n}", "s", samples[how], described, notes[how])
            for how in (*WRITES, *HOW[1:])
        )
        metrics.append(
            Metric(
                f"fold_state_append_vs_merge_{n}",
                "x",
                [statistics.median(samples["append"]) / statistics.median(samples["merge"])],
                described,
                "the pipeline's append over the MERGE it replaced, medians of the same run",
            )
        )
        store = min(statistics.median(samples[h]) for h in HOW[1:])
        metrics.append(
            Metric(
                f"fold_state_store_vs_merge_{n}",
                "x",
                [store / statistics.median(samples["merge"])],
                described,
                "the faster state-store way over the MERGE, medians of the same run",
            )
        )
    return metrics


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--state":
        Path(sys.argv[3]).write_text(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        for metric in run():
            print(metric.name, f"{metric.median:,.2f}", metric.unit)
