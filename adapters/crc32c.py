"""CRC-32C (Castagnoli), vectorized over many records with numpy.

TensorBoard's record framing checks every length and payload with a *masked* CRC-32C. Neither
tensorboard nor wandb ships a C implementation, and a pure-Python byte loop costs about a
microsecond per byte, so the check runs on all records at once, four bytes per step:

* The CRC register update is linear: the CRC of ``data`` is ``Z[len(data)] ^ raw(data)``, where
  ``raw`` is the register after ``data`` when starting from 0 and ``Z[n]`` the register after
  ``n`` zero bytes when starting from ``0xFFFFFFFF``; and ``raw`` is unchanged by leading zero
  bytes. So records of about the same length (the same number of 4-byte words) are copied,
  right-aligned behind zero bytes, into one ``(records, words)`` matrix, and each word column is
  folded into the registers with two 65 536-entry tables (slicing by 4, 16 bits per lookup).
* Records longer than 4 096 bytes are cut into 4 096-byte pieces checked the same way, then the
  pieces' registers are chained (``reg = A(reg) ^ raw(piece)``, ``A`` being 4 096 zero bytes,
  applied with four byte tables).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_POLY = 0x82F63B78
_PIECE = 4096  # bytes per row for long records; also the largest length handled in one row


def _table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> 1) ^ np.uint32(_POLY), t >> 1).astype(np.uint32)
    return t


TABLE = _table()


def _zero_steps(x: np.ndarray, n: int) -> np.ndarray:
    """Registers ``x`` after ``n`` zero bytes (``n`` byte steps of the table algorithm)."""
    x = x.astype(np.uint32)
    for _ in range(n):
        x = TABLE[x & 0xFF] ^ (x >> 8)
    return x


def _zeros_from_init(n: int) -> np.ndarray:
    """``Z[k]``: the register after ``k`` zero bytes from ``0xFFFFFFFF``, for ``k <= n``."""
    table = TABLE.tolist()
    out = [0xFFFFFFFF]
    c = 0xFFFFFFFF
    for _ in range(n):
        c = table[c & 0xFF] ^ (c >> 8)
        out.append(c)
    return np.array(out, dtype=np.uint32)


_LO = _zero_steps(np.arange(65536, dtype=np.uint32), 4)  # 4 byte steps of a low 16-bit half
_HI = _zero_steps(np.arange(65536, dtype=np.uint32) << 16, 4)  # ... of a high 16-bit half
_Z = _zeros_from_init(_PIECE)
_SHIFT: list[np.ndarray] = []  # byte tables of A^_PIECE (built when a long record is first seen)


def crc32c(data: bytes) -> int:
    """CRC-32C of one byte string."""
    buf = np.frombuffer(data, dtype=np.uint8)
    return int(crc32c_many(buf, np.array([0]), np.array([len(data)]))[0])


def _rows(buf: np.ndarray, ends: np.ndarray, width: int, pad: np.ndarray) -> np.ndarray:
    """``(len(ends), width)`` bytes: ``buf[end - width : end]`` per row, its first ``pad``
    bytes zeroed (and bytes before the start of ``buf`` zero)."""
    starts = ends - width
    m = ends.size
    rows: np.ndarray
    if buf.size >= width:
        rows = sliding_window_view(buf, width)[np.maximum(starts, 0)]
    else:
        rows = np.zeros((m, width), dtype=np.uint8)
    for i in np.flatnonzero(starts < 0).tolist():
        e = int(ends[i])
        rows[i] = 0
        rows[i, width - e:] = buf[:e]
    if int(pad.max(initial=0)) < 4:
        for k in range(3):
            rows[pad > k, k] = 0
    else:
        rows[np.arange(width)[None, :] < pad[:, None]] = 0
    return rows


def _raw(rows: np.ndarray) -> np.ndarray:
    """Registers (from 0) after each row of a ``(m, 4 * words)`` byte matrix."""
    words = np.ascontiguousarray(rows.view("<u4").T)
    crc = np.zeros(rows.shape[0], dtype=np.uint32)
    for col in words:
        crc ^= col
        crc = _LO[crc & 0xFFFF] ^ _HI[crc >> 16]
    return crc


def _shift(reg: int) -> int:
    """``reg`` after ``_PIECE`` zero bytes."""
    if not _SHIFT:
        for k in range(4):
            _SHIFT.append(_zero_steps(np.arange(256, dtype=np.uint32) << (8 * k), _PIECE))
    return int(_SHIFT[0][reg & 0xFF] ^ _SHIFT[1][(reg >> 8) & 0xFF]
               ^ _SHIFT[2][(reg >> 16) & 0xFF] ^ _SHIFT[3][reg >> 24])


_CHUNK_BYTES = 1 << 24  # bytes per matrix of rows (16 MiB; twice that with its transpose)


def crc32c_many(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of ``buf[starts[i] : starts[i] + lengths[i]]`` for every ``i`` (uint32 array)."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    buf = np.asarray(buf, dtype=np.uint8)
    out = np.empty(starts.size, dtype=np.uint32)
    if starts.size == 0:
        return out
    ends = starts + lengths
    nwords = (lengths + 3) >> 2
    long = lengths > _PIECE
    short = np.flatnonzero(~long)
    if short.size:
        order = short[np.argsort(nwords[short], kind="stable")]
        w_sorted = nwords[order]
        cuts = np.flatnonzero(np.diff(w_sorted)) + 1
        for grp in np.split(order, cuts):
            width = 4 * int(nwords[grp[0]])
            if width == 0:
                out[grp] = 0  # the CRC of no bytes
                continue
            chunk = max(1, _CHUNK_BYTES // width)
            for lo in range(0, grp.size, chunk):
                g = grp[lo:lo + chunk]
                rows = _rows(buf, ends[g], width, width - lengths[g])
                out[g] = _raw(rows) ^ _Z[lengths[g]] ^ np.uint32(0xFFFFFFFF)
    for i in np.flatnonzero(long).tolist():
        out[i] = _long(buf, int(starts[i]), int(lengths[i]))
    return out


def _long(buf: np.ndarray, start: int, length: int) -> int:
    """CRC-32C of one segment longer than ``_PIECE``: pieces of ``_PIECE`` bytes, chained."""
    q = -(-length // _PIECE)
    first = length - (q - 1) * _PIECE
    ends = start + first + _PIECE * np.arange(q, dtype=np.int64)
    pad = np.zeros(q, dtype=np.int64)
    pad[0] = _PIECE - first
    raws: list[int] = np.concatenate([_raw(_rows(buf, ends[lo:lo + 256], _PIECE,
                                                 pad[lo:lo + 256]))
                                      for lo in range(0, q, 256)]).tolist()
    reg = int(_Z[first]) ^ raws[0]
    for r in raws[1:]:
        reg = _shift(reg) ^ r
    return reg ^ 0xFFFFFFFF


def crc32c_words(words: list[np.ndarray]) -> np.ndarray:
    """CRC-32C of equal-length segments given as their little-endian 4-byte words
    (``words[j][i]``: word ``j`` of segment ``i``), e.g. the 8-byte length fields of records."""
    crc = np.zeros(words[0].size, dtype=np.uint32)
    for col in words:
        crc ^= col.astype(np.uint32, copy=False)
        crc = _LO[crc & 0xFFFF] ^ _HI[crc >> 16]
    out: np.ndarray = crc ^ _Z[4 * len(words)] ^ np.uint32(0xFFFFFFFF)
    return out


def masked(crc: np.ndarray) -> np.ndarray:
    """TFRecord's CRC mask: ``((c >> 15) | (c << 17)) + 0xa282ead8`` (uint32 arithmetic)."""
    c = crc.astype(np.uint64)
    out: np.ndarray = ((((c >> np.uint64(15)) | (c << np.uint64(17))) + np.uint64(0xA282EAD8))
                       & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return out
