"""Protobuf wire-format pieces the reader tests build records with."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """``n`` (≥ 0) as a protobuf varint."""
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)
