"""Record-set compression as Kafka writes and reads it (codecs 1 to 4 of the batch attributes).

Compression wraps only the records section of a v2 batch (bytes 61..end) or the value of a
legacy wrapper message (``docs/formats.md`` section 7.3/7.5). Kafka's Java side fixes the exact
bytes, and this module reproduces them:

``gzip``   ``java.util.zip.GZIPOutputStream`` (Kafka ``GzipCompression``): a 10-byte header
           ``1f 8b 08 00 00000000 00 ff`` (no name, mtime 0, OS "unknown" since JDK 16), a raw
           deflate stream from zlib at the configured level (Kafka default -1 = zlib's 6), then
           CRC-32 and input size, little-endian. Readers accept concatenated members like
           ``GZIPInputStream``.
``snappy`` snappy-java's ``SnappyOutputStream``, the "xerial" framing::

               82 53 4e 41 50 50 59 00   magic
               00 00 00 01               int32 version 1
               00 00 00 01               int32 minimum compatible version 1
               [int32 compressedLength, raw snappy block of <= 32 KiB input] ...

           Some non-Java producers wrote one unframed raw snappy block; snappy-java's reader
           falls back to that when the magic is absent, and so do we.
``lz4``    Kafka's own ``Lz4BlockOutputStream``: an LZ4 *frame* (magic ``04 22 4d 18``), FLG
           ``0x60`` (version 1, independent blocks, no checksums, no content size), BD ``0x40``
           (64 KiB blocks), header checksum HC = ``(xxh32(FLG BD) >> 8) & 0xff``; then blocks
           ``[uint32 LE size | 0x80000000 if stored uncompressed, data]`` and an end mark ``0``.
           Level 9 (the default) uses LZ4's fast compressor, any other level LZ4-HC. For magic 0
           Kafka computes HC over the magic *and* the descriptor (the KIP-57 bug kept for old
           clients) and ignores HC when reading magic 0; for magic 1 and 2 HC is verified.
``zstd``   zstd-jni's streaming ``ZstdOutputStream`` at level 3: one frame without content size
           or checksum; Kafka flushes before closing, so the data blocks are followed by an empty
           last block.

Byte-identical to Kafka 4.4 (checked against its ``MemoryRecordsBuilder``): none, gzip at every
level, lz4 at the default level and at levels 3 to 17, zstd at every level. lz4 levels 1 and 2
are HC levels for lz4-java but the frame compressor used here runs LZ4's fast mode for them, so
those bytes differ. snappy is framed identically, but the raw
blocks come from the Rust port of snappy, whose match choices differ from the C++ snappy 1.1.10
inside snappy-java for most inputs; either side decodes the other's bytes.

Decompression is bounded: no codec allocates more than ``limit`` bytes (default 64 MiB per
batch) whatever a length field claims. gzip streams through ``zlib`` with ``max_length``,
snappy checks each block's declared length first, lz4 decompresses block by block into a buffer
of the frame's maximum block size, zstd decompresses into a buffer grown geometrically up to the
limit (a declared frame content size above the limit is rejected before any allocation).
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Final

import cramjam

from offsetscope.protocol.errors import CompressionError

DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024


class Compression(IntEnum):
    """Compression codec id, attribute bits 0-2 of a batch or legacy message."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def codec_name(self) -> str:
        """The name Kafka prints (``compresscodec: gzip``) and accepts in ``compression.type``."""
        return self.name.lower()


# Kafka's default levels (CompressionType.*.defaultLevel): gzip -1 (zlib default), lz4 9, zstd 3.
GZIP_DEFAULT_LEVEL: Final = -1
LZ4_DEFAULT_LEVEL: Final = 9
ZSTD_DEFAULT_LEVEL: Final = 3

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE: Final = 32 * 1024

_GZIP_HEADER: Final = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

LZ4_FRAME_MAGIC: Final = 0x184D2204
_LZ4_MAGIC_BYTES: Final = struct.pack("<I", LZ4_FRAME_MAGIC)
_LZ4_FLG: Final = 0x60  # version 01, block independence, no block/content checksum, no size
_LZ4_BD_64KB: Final = 0x40
_LZ4_BLOCK_SIZE: Final = 64 * 1024
_LZ4_UNCOMPRESSED: Final = 0x80000000

_ZSTD_MAGIC: Final = 0xFD2FB528
_ZSTD_FIRST_GUESS: Final = 64 * 1024

_U32_LE = struct.Struct("<I")
_I32_BE = struct.Struct(">i")


# ------------------------------------------------------------------------------------ xxh32


_P1: Final = 2654435761
_P2: Final = 2246822519
_P3: Final = 3266489917
_P4: Final = 668265263
_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 (the hash of the LZ4 frame format); pure Python, used for headers and rare checksums.

    Args:
        data: bytes to hash.
        seed: XXH32 seed (LZ4 frames use 0).

    Returns:
        The unsigned 32-bit hash.
    """
    buf = bytes(data)
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        lanes = struct.unpack_from(f"<{(n // 16) * 4}I", buf)
        for k in range(0, len(lanes), 4):
            v1 = (_rotl((v1 + lanes[k] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + lanes[k + 1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + lanes[k + 2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + lanes[k + 3] * _P2) & _M32, 13) * _P1) & _M32
        i = (n // 16) * 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = _U32_LE.unpack_from(buf, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + buf[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def lz4_header_checksum(descriptor: bytes, *, broken: bool = False) -> int:
    """The LZ4 frame header checksum byte HC.

    Args:
        descriptor: the frame descriptor bytes FLG, BD (and content size, if present).
        broken: compute it the way Kafka's magic-0 writer does (KIP-57): over the 4 magic bytes
            followed by the descriptor.
    """
    hashed = _LZ4_MAGIC_BYTES + descriptor if broken else descriptor
    return (xxh32(hashed) >> 8) & 0xFF


# ----------------------------------------------------------------------------- compression


def compress(
    codec: Compression,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    level: int | None = None,
) -> bytes:
    """Compress a records section (v2) or an inner message set (v0/v1) as Kafka's producer does.

    Args:
        codec: the codec; ``NONE`` returns the data unchanged.
        data: the uncompressed bytes.
        magic: the message format; only LZ4 differs by magic (magic 0 writes the KIP-57 header).
        level: codec level; ``None`` uses Kafka's default for the codec.

    Returns:
        The compressed bytes.
    """
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return _gzip_compress(data, GZIP_DEFAULT_LEVEL if level is None else level)
    if codec is Compression.SNAPPY:
        return _xerial_compress(data)
    if codec is Compression.LZ4:
        return _lz4_compress(data, LZ4_DEFAULT_LEVEL if level is None else level, magic == 0)
    if codec is Compression.ZSTD:
        if magic < 2:
            raise ValueError("zstd is not supported for magic 0 and 1 (Kafka: magic >= 2 only)")
        compressor = cramjam.zstd.Compressor(level=ZSTD_DEFAULT_LEVEL if level is None else level)
        compressor.compress(bytes(data))
        # Kafka closes a BufferedOutputStream around zstd-jni's stream: close() flushes first
        # (ZSTD_e_flush ends the data blocks), then ends the frame with an empty last block.
        flushed = bytes(compressor.flush())
        return flushed + bytes(compressor.finish())
    raise ValueError(f"unknown compression codec {codec!r}")


def _gzip_compress(data: bytes | bytearray | memoryview, level: int) -> bytes:
    deflater = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & _M32, len(data) & _M32)
    return _GZIP_HEADER + body + trailer


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[start : start + _XERIAL_BLOCK_SIZE])))
        parts.append(_I32_BE.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_compress(data: bytes | bytearray | memoryview, level: int, broken_checksum: bool) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD_64KB))
    parts = [
        _LZ4_MAGIC_BYTES,
        descriptor,
        bytes((lz4_header_checksum(descriptor, broken=broken_checksum),)),
    ]
    if level == LZ4_DEFAULT_LEVEL:
        # Kafka keeps lz4-java's fast compressor for the default level (backward compatibility):
        # LZ4_compress_default on each 64 KiB block, stored raw when it does not shrink.
        view = memoryview(data)
        for start in range(0, len(view), _LZ4_BLOCK_SIZE):
            chunk = bytes(view[start : start + _LZ4_BLOCK_SIZE])
            block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
            if len(block) >= len(chunk):
                parts.append(_U32_LE.pack(len(chunk) | _LZ4_UNCOMPRESSED))
                parts.append(chunk)
            else:
                parts.append(_U32_LE.pack(len(block)))
                parts.append(block)
    else:
        parts.extend(_lz4_hc_blocks(data, level))
    parts.append(_U32_LE.pack(0))
    return b"".join(parts)


def _lz4_hc_blocks(data: bytes | bytearray | memoryview, level: int) -> list[bytes]:
    """Blocks of an LZ4 frame compressed at ``level`` (HC from level 3), frame header removed.

    Kafka uses LZ4-HC for any non-default level; cramjam's block API has no HC mode, so the
    blocks come from its frame compressor (64 KiB independent blocks, stored raw when they do
    not shrink, as Kafka does), re-framed by the caller with Kafka's header.
    """
    compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
    compressor.compress(bytes(data))
    frame = bytes(compressor.finish())
    flg = frame[4]
    pos = 7 + (8 if flg & 0x08 else 0)
    out: list[bytes] = []
    while True:
        (word,) = _U32_LE.unpack_from(frame, pos)
        pos += 4
        if word == 0:
            return out
        size = word & ~_LZ4_UNCOMPRESSED & _M32
        out.append(frame[pos - 4 : pos + size])
        pos += size + (4 if flg & 0x10 else 0)


# --------------------------------------------------------------------------- decompression


def decompress(
    codec: Compression,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    path: str = "records",
    offset: int = 0,
) -> bytes:
    """Decompress a records section, never producing (or allocating) more than ``limit`` bytes.

    Args:
        codec: the codec from the batch attributes.
        data: the compressed bytes.
        magic: the message format (LZ4 header-checksum rules differ for magic 0).
        limit: maximum decompressed size in bytes.
        path: field path used in errors.
        offset: byte offset of ``data`` in the enclosing file/buffer, used in errors.

    Returns:
        The decompressed bytes.

    Raises:
        CompressionError: corrupt or truncated input, an unsupported frame, or output over ``limit``.
    """
    try:
        if codec is Compression.NONE:
            if len(data) > limit:
                raise _over_limit(len(data), limit, path, offset)
            return bytes(data)
        if codec is Compression.GZIP:
            return _gzip_decompress(data, limit, path, offset)
        if codec is Compression.SNAPPY:
            return _snappy_decompress(data, limit, path, offset)
        if codec is Compression.LZ4:
            return _lz4_decompress(data, limit, magic, path, offset)
        if codec is Compression.ZSTD:
            return _zstd_decompress(data, limit, path, offset)
    except CompressionError:
        raise
    except (cramjam.DecompressionError, zlib.error, struct.error, ValueError) as exc:
        raise CompressionError(f"{_name(codec)}: {exc}", path=path, offset=offset) from exc
    raise CompressionError(f"unknown compression codec {int(codec)}", path=path, offset=offset)


def _name(codec: Compression) -> str:
    return codec.codec_name


def _over_limit(size: int, limit: int, path: str, offset: int) -> CompressionError:
    return CompressionError(
        f"decompressed size {size} exceeds the limit of {limit} bytes", path=path, offset=offset
    )


def _gzip_decompress(
    data: bytes | bytearray | memoryview, limit: int, path: str, offset: int
) -> bytes:
    out = bytearray()
    rest = bytes(data)
    member_start = 0
    while True:
        inflater = zlib.decompressobj(31)
        chunk = inflater.decompress(rest, limit - len(out) + 1)
        out += chunk
        if len(out) > limit:
            raise _over_limit(len(out), limit, path, offset)
        if not inflater.eof:
            if inflater.unconsumed_tail:
                # max_length stopped it: more output exists than the limit allows.
                raise _over_limit(len(out) + 1, limit, path, offset)
            raise CompressionError(
                "gzip: unexpected end of stream", path=path, offset=offset + len(data)
            )
        consumed = len(rest) - len(inflater.unused_data)
        member_start += consumed
        rest = inflater.unused_data
        # GZIPInputStream continues with a concatenated member and ignores anything else.
        if len(rest) < 10 or rest[:2] != b"\x1f\x8b":
            return bytes(out)


def _snappy_decompress(
    data: bytes | bytearray | memoryview, limit: int, path: str, offset: int
) -> bytes:
    buf = bytes(data)
    if not buf.startswith(XERIAL_MAGIC):
        return _snappy_raw(buf, limit, path, offset, 0)
    if len(buf) < len(_XERIAL_HEADER):
        raise CompressionError("snappy: truncated xerial header", path=path, offset=offset)
    parts: list[bytes] = []
    total = 0
    pos = len(_XERIAL_HEADER)
    while pos < len(buf):
        # snappy-java accepts streams concatenated with their headers.
        if buf.startswith(XERIAL_MAGIC, pos):
            pos += len(_XERIAL_HEADER)
            continue
        if pos + 4 > len(buf):
            raise CompressionError("snappy: truncated block length", path=path, offset=offset + pos)
        (size,) = _I32_BE.unpack_from(buf, pos)
        pos += 4
        if size < 0 or pos + size > len(buf):
            raise CompressionError(
                f"snappy: block length {size} exceeds the {len(buf) - pos} bytes left",
                path=path,
                offset=offset + pos - 4,
            )
        block = _snappy_raw(buf[pos : pos + size], limit - total, path, offset, pos)
        total += len(block)
        parts.append(block)
        pos += size
    return b"".join(parts)


def _snappy_raw(block: bytes, limit: int, path: str, offset: int, at: int) -> bytes:
    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > limit:
        raise _over_limit(declared, limit, path, offset + at)
    return bytes(cramjam.snappy.decompress_raw(block))


def _lz4_decompress(
    data: bytes | bytearray | memoryview, limit: int, magic: int, path: str, offset: int
) -> bytes:
    buf = bytes(data)
    if len(buf) < 7:
        raise CompressionError("lz4: stream ended prematurely", path=path, offset=offset)
    (frame_magic,) = _U32_LE.unpack_from(buf, 0)
    if frame_magic != LZ4_FRAME_MAGIC:
        raise CompressionError(
            f"lz4: not an LZ4 frame (magic {frame_magic:#010x})", path=path, offset=offset
        )
    flg, bd = buf[4], buf[5]
    if flg & 0x03 or (flg >> 6) != 1 or not flg & 0x20 or bd & 0x8F:
        raise CompressionError(
            f"lz4: unsupported frame descriptor FLG={flg:#04x} BD={bd:#04x}",
            path=path,
            offset=offset + 4,
        )
    block_checksum = bool(flg & 0x10)
    content_checksum = bool(flg & 0x04)
    block_max = 1 << (2 * ((bd >> 4) & 7) + 8)
    if (bd >> 4) & 7 < 4:
        raise CompressionError(f"lz4: invalid block size id in BD={bd:#04x}", path, offset + 5)
    pos = 6
    if flg & 0x08:
        if len(buf) < pos + 8 + 1:
            raise CompressionError("lz4: stream ended prematurely", path=path, offset=offset)
        (declared,) = struct.unpack_from("<Q", buf, pos)
        if declared > limit:
            raise _over_limit(declared, limit, path, offset)
        pos += 8
    hc = buf[pos]
    # Kafka ignores HC for magic 0: pre-KIP-57 writers hashed the magic bytes too.
    if magic != 0 and hc != lz4_header_checksum(buf[4:pos]):
        raise CompressionError("lz4: frame descriptor checksum mismatch", path, offset + pos)
    pos += 1
    out = bytearray()
    scratch = bytearray(block_max)
    while True:
        if pos + 4 > len(buf):
            raise CompressionError("lz4: stream ended prematurely", path=path, offset=offset + pos)
        (word,) = _U32_LE.unpack_from(buf, pos)
        pos += 4
        size = word & ~_LZ4_UNCOMPRESSED & _M32
        if size == 0:
            if content_checksum and pos + 4 > len(buf):
                raise CompressionError("lz4: missing content checksum", path, offset + pos)
            return bytes(out)
        if size > block_max:
            raise CompressionError(
                f"lz4: block size {size} exceeds the maximum {block_max}", path, offset + pos - 4
            )
        if pos + size > len(buf):
            raise CompressionError("lz4: stream ended prematurely", path=path, offset=offset + pos)
        block = buf[pos : pos + size]
        if block_checksum:
            if pos + size + 4 > len(buf):
                raise CompressionError("lz4: stream ended prematurely", path, offset + pos)
            (stored,) = _U32_LE.unpack_from(buf, pos + size)
            if stored != xxh32(block):
                raise CompressionError("lz4: block checksum mismatch", path, offset + pos)
        if word & _LZ4_UNCOMPRESSED:
            piece: bytes | memoryview = block
        else:
            n = cramjam.lz4.decompress_block_into(block, scratch)
            piece = memoryview(scratch)[:n]
        if len(out) + len(piece) > limit:
            raise _over_limit(len(out) + len(piece), limit, path, offset)
        out += piece
        pos += size + (4 if block_checksum else 0)


def _zstd_content_size(buf: bytes) -> int | None:
    """Declared content size of a single zstd frame, or None when the header does not say."""
    if len(buf) < 6 or _U32_LE.unpack_from(buf, 0)[0] != _ZSTD_MAGIC:
        return None
    fhd = buf[4]
    fcs_flag = fhd >> 6
    single_segment = bool(fhd & 0x20)
    dict_size = (0, 1, 2, 4)[fhd & 0x03]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if fcs_size == 0:
        return None
    pos = 5 + (0 if single_segment else 1) + dict_size
    if len(buf) < pos + fcs_size:
        return None
    value = int.from_bytes(buf[pos : pos + fcs_size], "little")
    return value + 256 if fcs_size == 2 else value


def _zstd_decompress(
    data: bytes | bytearray | memoryview, limit: int, path: str, offset: int
) -> bytes:
    buf = bytes(data)
    declared = _zstd_content_size(buf)
    if declared is not None and declared > limit:
        raise _over_limit(declared, limit, path, offset)
    size = declared if declared is not None else min(limit, max(_ZSTD_FIRST_GUESS, 8 * len(buf)))
    while True:
        out = bytearray(size)
        try:
            n = cramjam.zstd.decompress_into(buf, out)
        except cramjam.DecompressionError as exc:
            # Only "the output buffer is full" is worth a retry with a bigger buffer.
            if "failed to write whole buffer" not in str(exc):
                raise
            if size >= limit:
                raise _over_limit(size + 1, limit, path, offset) from exc
            size = min(limit, size * 4)
            continue
        del out[n:]
        return bytes(out)
