"""The byte codec: segment headers and frames. No files here, only bytes in and bytes out.

Segment header (32 bytes, little endian)::

    magic "BRAINJNL" (8) | version u32 | flags u32 | first_seq u64 | reserved u32 | crc u32

Frame (24-byte header, then the payload)::

    length u32 | flags u16 | reserved u16 | seq u64 | payload_crc u32 | header_crc u32 | payload

`payload` is one CBOR-encoded record `{seq, kind, at, ...}`. `header_crc` covers the first 20
header bytes, so a damaged length can never make a committed frame look like a torn write;
`payload_crc` covers the payload. Both are CRC32C. Bit 0 of `flags` marks the last frame of a
batch: a batch is committed only when its last frame is on disk, which is how recovery and
readers decide that a batch is whole.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import cbor2
import google_crc32c

from brain.journal.errors import InvalidRecord

SEGMENT_MAGIC = b"BRAINJNL"
FORMAT_VERSION = 1
SEGMENT_HEADER = struct.Struct("<8sIIQII")
SEGMENT_HEADER_SIZE = SEGMENT_HEADER.size  # 32

FRAME_HEADER = struct.Struct("<IHHQII")
FRAME_HEADER_SIZE = FRAME_HEADER.size  # 24
_HEADER_CRC_SPAN = FRAME_HEADER_SIZE - 4

FLAG_END_OF_BATCH = 0x0001
KNOWN_FLAGS = FLAG_END_OF_BATCH
MAX_PAYLOAD = (1 << 31) - 1

crc32c = google_crc32c.value


def encode_segment_header(first_seq: int) -> bytes:
    body = SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, 0, first_seq, 0, 0)[:-4]
    return body + struct.pack("<I", crc32c(body))


def decode_segment_header(data: bytes) -> tuple[int | None, str | None]:
    """`(first_seq, None)` for a valid header, else `(None, reason)`."""
    if len(data) < SEGMENT_HEADER_SIZE:
        return None, f"segment header incomplete ({len(data)} of {SEGMENT_HEADER_SIZE} bytes)"
    magic, version, flags, first_seq, _reserved, crc = SEGMENT_HEADER.unpack_from(data)
    if crc32c(bytes(data[: SEGMENT_HEADER_SIZE - 4])) != crc:
        return None, "segment header checksum mismatch"
    if magic != SEGMENT_MAGIC:
        return None, "not a journal segment (bad magic)"
    if version != FORMAT_VERSION:
        return None, f"unsupported segment format version {version}"
    if flags != 0 or first_seq < 1:
        return None, "invalid segment header fields"
    return first_seq, None


class FrameHeader(NamedTuple):
    length: int
    flags: int
    seq: int
    payload_crc: int

    @property
    def end_of_batch(self) -> bool:
        return bool(self.flags & FLAG_END_OF_BATCH)


_pack_head = struct.Struct("<IHHQI").pack
_pack_crc = struct.Struct("<I").pack
_dumps = cbor2.dumps


def encode_batch(records: list[dict[str, Any]]) -> tuple[bytearray, list[int], int]:
    """Frame a batch: `(bytes, offset of each frame in them, payload CRC of the last frame)`.

    The last frame carries FLAG_END_OF_BATCH. This is the writer's hot loop, kept flat.
    """
    out = bytearray()
    offsets = []
    last = len(records) - 1
    crc = 0
    for i, record in enumerate(records):
        try:
            payload = _dumps(record)
        except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
            raise InvalidRecord(f"record {record.get('kind')!r} is not encodable: {exc}") from None
        if len(payload) > MAX_PAYLOAD:
            raise InvalidRecord(f"record {record['seq']} is above the frame size limit")
        offsets.append(len(out))
        crc = crc32c(payload)
        flags = FLAG_END_OF_BATCH if i == last else 0
        head = _pack_head(len(payload), flags, 0, record["seq"], crc)
        out += head
        out += _pack_crc(crc32c(head))
        out += payload
    return out, offsets, crc


def encode_frame(seq: int, payload: bytes, end_of_batch: bool) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise InvalidRecord(f"record {seq} is {len(payload)} bytes, above the frame limit")
    flags = FLAG_END_OF_BATCH if end_of_batch else 0
    head = struct.pack("<IHHQI", len(payload), flags, 0, seq, crc32c(payload))
    return head + struct.pack("<I", crc32c(head)) + payload


def decode_frame_header(data: bytes, at: int = 0) -> FrameHeader | None:
    """The header at `data[at:]`, or None when its checksum fails (or flags are unknown)."""
    length, flags, reserved, seq, payload_crc, header_crc = FRAME_HEADER.unpack_from(data, at)
    if crc32c(data[at : at + _HEADER_CRC_SPAN]) != header_crc:
        return None
    if flags & ~KNOWN_FLAGS or reserved or length > MAX_PAYLOAD:
        return None
    return FrameHeader(length, flags, seq, payload_crc)


def encode_record(record: dict[str, Any]) -> bytes:
    try:
        return cbor2.dumps(record)
    except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
        raise InvalidRecord(f"record {record.get('kind')!r} is not encodable: {exc}") from None


def decode_record(payload: bytes) -> dict[str, Any] | None:
    """The record in a checksummed payload, or None if it is not a well-formed record."""
    try:
        record = cbor2.loads(payload)
    except Exception:
        return None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("seq"), int)
        or not isinstance(record.get("kind"), str)
        or not isinstance(record.get("at"), int)
    ):
        return None
    return record
