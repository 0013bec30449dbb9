"""Decode throughput: offsetscope vs Kafka's DumpLogSegments on the same segment files.

Input (generated once, cached under ``.work/bench/decode-input``): a Kafka log directory with
``__consumer_offsets-0`` holding 1,000,000 offset commits (value v3, and v4 with a tagged topic
id, as 4.0 and 4.1+ brokers write them) in batches of 1-8 records like OffsetCommit requests,
interleaved with 10,000 classic GroupMetadata records (3 consumer-protocol members each), and
``__transaction_state-0`` with 20,000 transaction-log records. Segments roll at 100 MiB as on a
broker.

Figures:

* ``decode_records_per_s``: the library path the pipeline runs -- segment framing
  (``logdir.read_range``) and the batch decoder (``decode_batch``) -- on one pinned core, timed
  inside the process (median of 3).
* ``cli_decode_records_per_s`` and ``dumplog_records_per_s``: ``offsetscope decode segment
  --format dump-log`` and ``kafka-dump-log.sh --offsets-decoder`` (``--transaction-log-decoder``
  for the transaction log) as whole processes on one pinned core writing to /dev/null, JVM and
  interpreter start-up included (median of 3). ``cli_vs_dumplog_ratio`` divides the two.

Before anything is timed, both tools dump the whole input once and their outputs are compared
line by line (the ``Dumping <path>`` lines aside, whose path spelling differs): a speed-up that
changed what is printed would not be a speed-up. ``transactionStatus`` is printed the way the
DumpLogSegments release in ``build/jvm/kafka-tools`` prints it (a number before 4.4, the state
name from 4.4: ``--status-format``).

``scale`` (``make bench BENCH_SCALE=0.01``) shrinks every count for a quick run of the harness.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import WORK, Metric, run_process
from offsetscope.protocol import consumer_protocol as cp
from offsetscope.protocol.codec import encode_record, make_record
from offsetscope.protocol.log import LogConfig, PartitionWriter, RecordSpec

COMMITS = 1_000_000
GROUP_RECORDS = 10_000
TXN_RECORDS = 20_000
T0 = 1_700_000_000_000
INPUT = WORK / "decode-input"


@dataclass(frozen=True, slots=True)
class Sizes:
    """How many records of each kind the input holds."""

    commits: int = COMMITS
    group_records: int = GROUP_RECORDS
    txn_records: int = TXN_RECORDS

    @classmethod
    def scaled(cls, scale: float) -> Sizes:
        return cls(
            max(1, int(COMMITS * scale)),
            max(1, int(GROUP_RECORDS * scale)),
            max(3, int(TXN_RECORDS * scale)),
        )

    @property
    def total(self) -> int:
        return self.commits + self.group_records + self.txn_records

    def input_dir(self) -> Path:
        # the full-size input keeps its historical path so an existing cache is reused
        return INPUT if self == Sizes() else WORK / f"decode-input-{self.commits}"


def _member(i: int, topics: list[str]) -> dict[str, object]:
    sub = cp.encode_subscription(
        3,
        {
            "topics": topics,
            "userData": None,
            "ownedPartitions": [],
            "generationId": 1,
            "rackId": None,
        },
    )
    asg = cp.encode_assignment(
        3, {"assignedPartitions": [{"topic": topics[0], "partitions": [i % 12]}], "userData": None}
    )
    return {
        "memberId": f"consumer-{i}-{uuid.UUID(int=i)}",
        "groupInstanceId": None,
        "clientId": f"consumer-{i}",
        "clientHost": f"/10.0.{i % 250}.{i % 200}",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": sub,
        "assignment": asg,
    }


def generate(sizes: Sizes | None = None, root: Path | None = None) -> dict[str, int]:
    """Write the input directory (idempotent: reused when its manifest matches)."""
    sizes = sizes or Sizes()
    root = root or sizes.input_dir()
    commits, group_records, txn_records = sizes.commits, sizes.group_records, sizes.txn_records
    manifest = root / "manifest.json"
    want = {
        "commits": commits,
        "group_records": group_records,
        "txn_records": txn_records,
        "version": 2,
    }
    if manifest.exists() and json.loads(manifest.read_text()) == want:
        return want
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    rng = random.Random(7)
    config = LogConfig()
    topic_ids = {f"orders-{t}": uuid.UUID(int=rng.getrandbits(128)) for t in range(50)}
    with PartitionWriter(root / "__consumer_offsets-0", config=config) as log:
        written = groups = 0
        ts = T0
        while written < commits:
            ts += rng.randint(0, 3)
            g = rng.randrange(10_000)
            topic = f"orders-{g % 50}"
            batch = []
            v4 = g % 2 == 0
            for _ in range(min(rng.randint(1, 8), commits - written)):
                value = {
                    "offset": rng.randrange(10**9),
                    "leaderEpoch": rng.randrange(5),
                    "metadata": "",
                    "commitTimestamp": ts,
                }
                if v4:
                    value["topicId"] = topic_ids[topic]
                rec = make_record(
                    "__consumer_offsets",
                    1,
                    {"group": f"group-{g}", "topic": topic, "partition": rng.randrange(12)},
                    value,
                    4 if v4 else 3,
                )
                key, val = encode_record(rec)
                batch.append(RecordSpec(key, val, ts))
                written += 1
            log.append(batch)
            if groups < group_records and written * group_records >= groups * commits:
                members = [_member(g * 3 + m, [topic]) for m in range(3)]
                value = {
                    "protocolType": "consumer",
                    "generation": rng.randrange(1, 100),
                    "protocol": "range",
                    "leader": members[0]["memberId"],
                    "currentStateTimestamp": ts,
                    "members": members,
                }
                key, val = encode_record(
                    make_record("__consumer_offsets", 2, {"group": f"group-{g}"}, value, 3)
                )
                log.append([RecordSpec(key, val, ts)])
                groups += 1
    with PartitionWriter(root / "__transaction_state-0", config=config) as log:
        for i in range(txn_records):
            status = (1, 2, 4)[i % 3]
            value = {
                "producerId": 1000 + i // 3,
                "producerEpoch": 0,
                "transactionTimeoutMs": 60000,
                "transactionStatus": status,
                "transactionPartitions": []
                if status == 4
                else [{"topic": "orders-1", "partitionIds": [0, 1]}],
                "transactionLastUpdateTimestampMs": T0 + i,
                "transactionStartTimestampMs": T0 + i - i % 3,
            }
            key, val = encode_record(
                make_record(
                    "__transaction_state", 0, {"transactionalId": f"txn-{i // 3}"}, value, 1
                )
            )
            log.append([RecordSpec(key, val, T0 + i)])
    manifest.write_text(json.dumps(want))
    return want


def segments(topic: str, root: Path) -> list[Path]:
    return sorted((root / f"{topic}-0").glob("*.log"))


def library_worker(root: Path) -> None:
    """Decode every partition directory of ``root``; print records and seconds as JSON."""
    import time

    import pyarrow as pa
    import pyarrow.compute as pc

    from offsetscope.protocol.arrow_decode import RAW_SCHEMA, decode_batch
    from offsetscope.spark.logdir import LogEndCache, RangeRequest, partition_dirs, read_range

    schema = pa.schema(
        [
            *RAW_SCHEMA,
            pa.field("source_topic", pa.string()),
            pa.field(
                "source_error",
                pa.struct([pa.field("error_class", pa.string()), pa.field("message", pa.string())]),
            ),
        ]
    )
    # pyarrow imports pandas at its first conversion of Python or numpy values (about 0.5 s
    # here): an import like the ones above, paid before the clock starts.
    pa.array([0])
    start = time.perf_counter()
    rows = errors = 0
    cache = LogEndCache()
    for pdir in partition_dirs(root):
        request = RangeRequest(pdir, pdir.topic, 0, cache.log_end_offset(pdir))
        for raw in read_range(request, schema):
            for out in decode_batch(raw.select(RAW_SCHEMA.names)):
                rows += out.num_rows
                errors += pc.sum(pc.equal(out.column("kind"), "error")).as_py() or 0
    print(json.dumps({"records": rows, "errors": errors, "seconds": time.perf_counter() - start}))


def _lines(cmd: Sequence[str], stderr: Path) -> Iterator[str]:
    """The stdout lines of ``cmd`` without ``Dumping <path>`` lines; fails if ``cmd`` fails."""
    with stderr.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1 << 20)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                if not line.startswith("Dumping "):
                    yield line
        finally:
            proc.stdout.close()
            code = proc.wait()
    if code != 0:
        raise RuntimeError(f"{cmd[0]} exited {code}: {stderr.read_text()[-2000:]}")


def check_identical(ours: Sequence[str], theirs: Sequence[str]) -> int:
    """Run both dumpers once and compare their outputs line by line; returns the line count.

    Both run at the same time and are read in lock-step, so neither output is stored whole.

    Raises:
        RuntimeError: the first differing line (with its number), or a tool that failed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        pairs = itertools.zip_longest(
            _lines(ours, Path(tmp) / "ours.err"), _lines(theirs, Path(tmp) / "theirs.err")
        )
        count = 0
        for count, (a, b) in enumerate(pairs, start=1):
            if a != b:
                raise RuntimeError(
                    f"dump-log output differs from DumpLogSegments at line {count}:\n"
                    f"  offsetscope:     {a!r}\n  DumpLogSegments: {b!r}"
                )
    return count


def run(runs: int = 3, scale: float = 1.0) -> list[Metric]:
    sizes = Sizes.scaled(scale)
    root = sizes.input_dir()
    counts = generate(sizes)
    total = sizes.total
    size_mb = sum(p.stat().st_size for p in root.rglob("*.log")) / 2**20
    described = (
        f"{counts['commits']:,} offset commits + {counts['group_records']:,} group metadata "
        f"+ {counts['txn_records']:,} txn records, {size_mb:.0f} MiB of segments"
    )
    from offsetscope.verify.harness.broker import dump_log_command, tools_version

    tools = tools_version()
    status_format = "name" if tuple(int(p) for p in tools.split(".")[:2]) >= (4, 4) else "number"
    cli = [
        sys.executable,
        "-m",
        "offsetscope.cli",
        "decode",
        "segment",
        "--format",
        "dump-log",
        "--status-format",
        status_format,
    ]
    offsets_files = [str(p) for p in segments("__consumer_offsets", root)]
    txn_files = [str(p) for p in segments("__transaction_state", root)]
    lines = check_identical(
        [*cli, *offsets_files], dump_log_command(offsets_files, "offsets")
    ) + check_identical([*cli, *txn_files], dump_log_command(txn_files, "transaction"))
    print(f"  dump-log output identical to DumpLogSegments {tools}: {lines:,} lines", flush=True)

    lib = []
    for _ in range(runs):
        out = subprocess.run(
            ["taskset", "-c", "0", sys.executable, "-m", "bench.decode", "--worker", str(root)],
            check=True,
            capture_output=True,
            text=True,
        )
        res = json.loads(out.stdout)
        if res["records"] != total or res["errors"]:
            raise RuntimeError(f"decoder produced {res} for {total} records")
        lib.append(res["records"] / res["seconds"])

    def ours() -> float:
        return run_process([*cli, *offsets_files]) + run_process([*cli, *txn_files])

    def theirs() -> float:
        return run_process(dump_log_command(offsets_files, "offsets")) + run_process(
            dump_log_command(txn_files, "transaction")
        )

    ours_s = [ours() for _ in range(runs)]
    theirs_s = [theirs() for _ in range(runs)]
    identical = f"outputs identical line for line to DumpLogSegments {tools} ({lines:,} lines)"
    cli_rate = Metric(
        "cli_decode_records_per_s",
        "records/s",
        [total / s for s in ours_s],
        described,
        f"whole process, 1 core, dump-log text to /dev/null; {identical}",
    )
    dump_rate = Metric(
        "dumplog_records_per_s",
        "records/s",
        [total / s for s in theirs_s],
        described,
        f"Kafka {tools} DumpLogSegments, whole process, 1 core, to /dev/null",
    )
    ratio = Metric(
        "cli_vs_dumplog_ratio",
        "x",
        [a / b for a, b in zip(theirs_s, ours_s, strict=True)],
        described,
        "DumpLogSegments time / offsetscope time, paired runs",
    )
    return [
        Metric(
            "decode_records_per_s",
            "records/s",
            lib,
            described,
            "library: framing + batch decode, 1 pinned core, in-process timing",
        ),
        cli_rate,
        dump_rate,
        ratio,
    ]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        library_worker(Path(sys.argv[2]))
    else:
        for metric in run():
            print(metric.name, f"{metric.median:,.0f}", metric.unit)
