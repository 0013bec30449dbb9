"""The ``offsetscope`` command line.

Sub-commands::

    offsetscope decode record --topic __consumer_offsets --key HEX [--value HEX]
    offsetscope decode segment FILE.log [--format json|dump-log] [--topic T]
    offsetscope partition-for ID [--partitions 50]
    offsetscope init [DIR] [--force]

Exit codes: 0 success, 1 the input could not be decoded (one line on stderr naming the field path
and byte offset), 2 bad usage. Heavier sub-commands (``simulate``, ``sql``, the jobs) register
themselves from their own modules so that this file stays import-light.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from offsetscope.protocol import codec, errors
from offsetscope.protocol.json_format import console_json, dumps
from offsetscope.protocol.partitioner import partition_for
from offsetscope.protocol.records import CoordinatorRecord, UnknownRecord
from offsetscope.protocol.registry import INTERNAL_TOPICS

Handler = Callable[[argparse.Namespace], int]


def _hex(text: str) -> bytes:
    cleaned = "".join(text.split())
    if cleaned.startswith(("0x", "0X")):
        cleaned = cleaned[2:]
    try:
        return binascii.unhexlify(cleaned)
    except (binascii.Error, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not hexadecimal: {exc}") from None


def unknown_json(record: UnknownRecord) -> dict[str, Any]:
    """JSON for a record whose type or version is unknown (Kafka 3.9's ``"data":"unknown"``)."""
    key: dict[str, Any] = {"type": record.record_type, "data": "unknown"}
    key["bytes"] = base64.b64encode(record.key_bytes).decode("ascii")
    value: dict[str, Any] | None = None
    if record.value_bytes is not None:
        value = {
            "version": record.value_version,
            "data": "unknown",
            "bytes": base64.b64encode(record.value_bytes).decode("ascii"),
        }
    return {"key": key, "value": value, "unknown": record.reason}


def record_json(record: CoordinatorRecord | UnknownRecord) -> dict[str, Any]:
    if isinstance(record, UnknownRecord):
        return unknown_json(record)
    return console_json(record)


def _decode_record(args: argparse.Namespace) -> int:
    try:
        record = codec.decode_record(args.topic, args.key, args.value)
    except errors.DecodeError as exc:
        print(
            f"error: {type(exc).__name__}: {exc.reason} at {exc.path} (byte offset {exc.offset})",
            file=sys.stderr,
        )
        return 1
    print(dumps(record_json(record)))
    return 0


def _partition_for(args: argparse.Namespace) -> int:
    print(partition_for(args.id, args.partitions))
    return 0


def _init(args: argparse.Namespace) -> int:
    from offsetscope import config

    try:
        written = config.write_templates(args.dir, overwrite=args.force)
    except FileExistsError as exc:
        print(f"error: {exc} (--force overwrites)", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offsetscope",
        description="Decode Kafka's internal topics and query their history.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    decode = sub.add_parser("decode", help="decode records or segment files")
    decode_sub = decode.add_subparsers(dest="what", required=True)
    rec = decode_sub.add_parser("record", help="decode one key/value pair given as hex")
    rec.add_argument("--topic", required=True, choices=INTERNAL_TOPICS)
    rec.add_argument("--key", required=True, type=_hex, help="key bytes as hex")
    rec.add_argument(
        "--value", type=_hex, default=None, help="value bytes as hex (omit: tombstone)"
    )
    rec.set_defaults(handler=_decode_record)

    from offsetscope.segment_cli import add_segment_parser

    add_segment_parser(decode_sub)

    pf = sub.add_parser("partition-for", help="the internal-topic partition of a group or txn id")
    pf.add_argument("id")
    pf.add_argument("--partitions", type=int, default=50)
    pf.set_defaults(handler=_partition_for)

    init = sub.add_parser("init", help="write the configuration templates (conf/*.toml, schema)")
    init.add_argument("dir", nargs="?", type=Path, default=Path("conf"), help="default: ./conf")
    init.add_argument("--force", action="store_true", help="overwrite files already there")
    init.set_defaults(handler=_init)

    for register in _extensions():
        register(sub)
    return parser


# Modules that add sub-commands through ``register(subparsers)`` (simulate, sql, jobs); imported
# lazily so that ``decode`` never pays for Spark.
EXTENSIONS: tuple[str, ...] = ("offsetscope.scenarios.cli", "offsetscope.spark.cli")


def _extensions() -> list[Callable[[Any], None]]:
    import importlib

    return [importlib.import_module(name).register for name in EXTENSIONS]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
