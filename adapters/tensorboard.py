"""TensorBoard event files (``events.out.tfevents.*``), every point, every CRC checked.

Layout read (searched recursively; one run per directory, named by its path under the root)::

    runs/
      wd1.5_s0/events.out.tfevents.1700000000.host.1.0   <- run "wd1.5_s0"
      wd1.5_s0/events.out.tfevents.1700000500.host.1.0   <- same run, resumed: merged
      wd1.0_s0/events.out.tfevents.1700000000.host.2.0   <- run "wd1.0_s0"

Record framing: ``uint64 length``, ``uint32 masked_crc32c(length)``, ``data``,
``uint32 masked_crc32c(data)``. The framing is walked with ``struct`` and both CRCs of all
records are checked at once (:mod:`grokaudit.adapters.crc32c`); payloads are decoded with
TensorBoard's own ``Event`` protobuf class, concatenated into one repeated field so that a whole
file is parsed by one C call. Both scalar styles are read: ``simple_value`` (torch
``add_scalar``) and scalar ``tensor`` values (TF2 ``tf.summary.scalar``, torch
``new_style=True``). A truncated tail or a corrupt record is reported as ``SOURCE_TRUNCATED``
with the file, byte offset and records read — never silently cut short.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.text import safe

from .crc32c import crc32c_many, masked
from .merge import ReadOptions
from .points import Points
from .registry import Reader, import_extra

EVENT_FILE = re.compile(r"events\.out\.tfevents\.")
_U64 = struct.Struct("<Q")
# TensorFlow DataType enum values -> numpy dtypes, for scalar tensors
_DTYPES: dict[int, Any] = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64,
                           19: np.float16, 4: np.uint8, 5: np.int16, 6: np.int8,
                           10: np.bool_, 17: np.uint16, 22: np.uint32, 23: np.uint64}


def event_files(path: Path) -> list[Path]:
    """Event files at ``path`` (a file, or every one under a directory), in run/file order."""
    if path.is_file():
        return [path]
    found = [q for q in path.rglob("*") if q.is_file() and EVENT_FILE.search(q.name)]
    return sorted(found, key=lambda q: (q.parent.as_posix(), _file_time(q), q.name))


def _file_time(q: Path) -> int:
    m = re.search(r"tfevents\.(\d+)", q.name)
    return int(m.group(1)) if m else 0


def _detect(path: Path) -> bool:
    if path.is_file():
        return bool(EVENT_FILE.search(path.name))
    return any(True for q in path.rglob("events.out.tfevents.*"))


# ------------------------------------------------------------------------------------------
# framing
# ------------------------------------------------------------------------------------------

def frame(data: bytes, file: str, points: Points) -> tuple[np.ndarray, np.ndarray]:
    """Payload offsets and lengths of every intact record of one event file.

    Checks both CRCs of every record. A short tail, or a record whose length CRC fails (the
    framing after it cannot be trusted), ends the file with a ``SOURCE_TRUNCATED`` finding; a
    record whose payload CRC fails is skipped with a ``SOURCE_TRUNCATED`` finding.
    """
    n = len(data)
    heads: list[int] = []
    lengths: list[int] = []
    pos = 0
    unpack = _U64.unpack_from
    stop: tuple[int, str] | None = None
    while pos < n:
        if n - pos < 12:
            stop = (pos, f"file ends inside a record header ({n - pos} trailing bytes)")
            break
        (length,) = unpack(data, pos)
        if pos + 16 + length > n:
            stop = (pos, "file ends inside a record (truncated write)")
            break
        heads.append(pos)
        lengths.append(length)
        pos += 16 + length
    buf = np.frombuffer(data, dtype=np.uint8)
    h = np.array(heads, dtype=np.int64)
    ln = np.array(lengths, dtype=np.int64)
    if stop is not None and n - stop[0] >= 12:
        # a huge length may be a corrupt length field rather than a short file
        got = masked(crc32c_many(buf, np.array([stop[0]]), np.array([8])))[0]
        want = np.frombuffer(data, dtype="<u4", count=1, offset=stop[0] + 8)[0]
        if got != want:
            stop = (stop[0], "record length fails its CRC (corrupt byte)")
    if h.size:
        want_len = np.frombuffer(data, dtype=np.uint8)[(h + 8)[:, None] + np.arange(4)]
        want_len = want_len.copy().view("<u4").ravel()
        got_len = masked(crc32c_many(buf, h, np.full(h.size, 8)))
        bad = np.flatnonzero(got_len != want_len)
        if bad.size:
            k = int(bad[0].item())
            stop = (int(h[k]), "record length fails its CRC (corrupt byte)")
            h, ln = h[:k], ln[:k]
    records_ok = int(h.size)
    if stop is not None:
        points.finding("SOURCE_TRUNCATED",
                       f"{stop[1]}; {records_ok} records read before byte {stop[0]}, "
                       f"{n - stop[0]} bytes after it unread", file=file, offset=stop[0],
                       count=n - stop[0])
    payload = h + 12
    if h.size:
        want = buf[(payload + ln)[:, None] + np.arange(4)].copy().view("<u4").ravel()
        got = masked(crc32c_many(buf, payload, ln))
        bad = np.flatnonzero(got != want)
        for b in bad.tolist():
            points.finding("SOURCE_TRUNCATED",
                           f"record at byte {int(h[b])} fails its data CRC (corrupt byte); "
                           "the record was skipped", file=file, offset=int(h[b]), count=1)
        if bad.size:
            keep = np.ones(h.size, dtype=bool)
            keep[bad] = False
            payload, ln = payload[keep], ln[keep]
    return payload, ln


# ------------------------------------------------------------------------------------------
# decoding
# ------------------------------------------------------------------------------------------

def _tensor_scalar(t: Any) -> float | None:
    """The value of a scalar numeric TensorProto, or None when it is not one."""
    if any(d.size != 1 for d in t.tensor_shape.dim):
        return None
    dt = _DTYPES.get(t.dtype)
    if dt is None:
        return None
    if t.tensor_content:
        arr = np.frombuffer(t.tensor_content, dtype=dt)
        return float(arr[0]) if arr.size == 1 else None
    for field in ("float_val", "double_val", "int_val", "int64_val", "uint32_val",
                  "uint64_val", "bool_val"):
        vals = getattr(t, field)
        if len(vals) == 1:
            return float(vals[0])
    if len(t.half_val) == 1:
        return float(np.array([t.half_val[0]], dtype=np.uint16).view(np.float16)[0])
    return None


class _Batch:
    """A message ``{repeated Event events = 1}`` built at run time from TensorBoard's Event."""

    cls: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls.cls is None:
            event_pb2 = import_extra("tensorboard.compat.proto.event_pb2", "tensorboard")
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

            fdp = descriptor_pb2.FileDescriptorProto(
                name="grokaudit_tb_batch.proto", package="grokaudit_tb",
                dependency=[event_pb2.DESCRIPTOR.name], syntax="proto3")
            msg = fdp.message_type.add(name="EventBatch")
            msg.field.add(name="events", number=1, type=11, label=3,
                          type_name=".tensorboard.Event")
            pool = descriptor_pool.Default()
            try:
                desc = pool.FindMessageTypeByName("grokaudit_tb.EventBatch")
            except KeyError:
                pool.Add(fdp)
                desc = pool.FindMessageTypeByName("grokaudit_tb.EventBatch")
            if hasattr(message_factory, "GetMessageClass"):
                cls.cls = message_factory.GetMessageClass(desc)
            else:  # protobuf < 4.21
                cls.cls = message_factory.MessageFactory(pool).GetPrototype(desc)
        return cls.cls


def _wrap(buf: np.ndarray, payload: np.ndarray, lengths: np.ndarray) -> bytes:
    """The records as one ``repeated Event events = 1`` field: ``0x0a, varint(len), payload``.

    Built with numpy (one gather for the payload bytes) instead of a Python loop per record.
    """
    n = lengths.astype(np.int64)
    vlen = np.ones(n.size, dtype=np.int64)
    for shift in (7, 14, 21, 28, 35, 42):
        vlen += n >= (1 << shift)
    size = 1 + vlen + n
    out_off = np.zeros(n.size, dtype=np.int64)
    np.cumsum(size[:-1], out=out_off[1:])
    out = np.empty(int(size.sum()), dtype=np.uint8)
    out[out_off] = 0x0A
    for k in range(int(vlen.max())):
        sel = vlen > k
        byte = (n[sel] >> (7 * k)) & 0x7F
        byte |= np.where(vlen[sel] > k + 1, 0x80, 0)
        out[out_off[sel] + 1 + k] = byte.astype(np.uint8)
    starts_in_flat = np.zeros(n.size, dtype=np.int64)
    np.cumsum(n[:-1], out=starts_in_flat[1:])
    shift_src = np.repeat(payload.astype(np.int64) - starts_in_flat, n)
    shift_dst = np.repeat(out_off + 1 + vlen - starts_in_flat, n)
    flat = np.arange(int(n.sum()), dtype=np.int64)
    out[flat + shift_dst] = buf[flat + shift_src]
    return out.tobytes()


_BATCH = 65536  # records per parse: keeps each batch message far below protobuf's 2 GiB cap


def _events(data: bytes, payload: np.ndarray, lengths: np.ndarray, file: str) -> Any:
    """Yield the decoded Event of every record, parsing ``_BATCH`` records per C call."""
    batch_cls = _Batch.get()
    buf = np.frombuffer(data, dtype=np.uint8)
    for lo in range(0, payload.size, _BATCH):
        wrapped = _wrap(buf, payload[lo:lo + _BATCH], lengths[lo:lo + _BATCH])
        try:
            batch = batch_cls.FromString(wrapped)
        except Exception as exc:  # noqa: BLE001 - protobuf raises its own DecodeError
            raise LogFormatError(f"an event record is not a TensorBoard Event "
                                 f"({safe(exc)[:200]}); the file is not an event file, or is "
                                 "damaged", path=file, code=ErrorCode.FILE_UNREADABLE) from None
        yield from batch.events


def decode(data: bytes, payload: np.ndarray, lengths: np.ndarray, file: str,
           run: str, points: Points, stats: dict[str, int]) -> None:
    """Decode the Event records of one file and add their scalar values to ``points``."""
    # flat lists, one entry per scalar value, grouped by tag once at the end
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    non_scalar_plugins: set[str] = set()
    for ev in _events(data, payload, lengths, file):
        vals = ev.summary.value
        if not vals:
            continue
        step = ev.step
        wall = ev.wall_time
        for v in vals:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                x = v.simple_value
            elif kind == "tensor":
                if v.HasField("metadata"):
                    plugin = v.metadata.plugin_data.plugin_name
                    if plugin and plugin != "scalars":
                        non_scalar_plugins.add(v.tag)
                if v.tag in non_scalar_plugins:
                    stats["non_scalar"] += 1
                    continue
                t = _tensor_scalar(v.tensor)
                if t is None:
                    stats["non_scalar"] += 1
                    continue
                x = t
                stats["tensor"] += 1
            else:
                stats["non_scalar"] += 1
                continue
            tags.append(v.tag)
            steps.append(step)
            values.append(x)
            walls.append(wall)
    if not tags:
        return
    codes, names = pd.factorize(pd.Series(tags, dtype=object))
    st = np.array(steps, dtype=np.int64)
    val = np.array(values, dtype=np.float64)
    wt = np.array(walls, dtype=np.float64)
    order = np.argsort(codes, kind="stable")  # keeps file order within each tag
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    for i, tag in enumerate(names):
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run, str(tag), st[sel], val[sel], wt[sel])


def read(path: Path, options: ReadOptions) -> Points:
    """Read every event file under ``path`` (one run per directory)."""
    import_extra("tensorboard", "tensorboard")
    files = event_files(path)
    if not files:
        raise LogFormatError("no TensorBoard event files (events.out.tfevents.*) here; check "
                             "the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    stats = {"tensor": 0, "non_scalar": 0}
    root = path if path.is_dir() else path.parent
    for f in files:
        points.files.append(str(f))
        data = f.read_bytes()
        if not data:
            raise LogFormatError("event file is empty; there is nothing to read", path=str(f),
                                 code=ErrorCode.FILE_EMPTY)
        rel = f.parent.relative_to(root).as_posix()
        run = root.name if rel == "." else rel
        payload, lengths = frame(data, str(f), points)
        if payload.size == 0:
            why = points.findings[-1].detail if points.findings else "no records"
            raise LogFormatError(f"not a readable event file: {why}", path=str(f),
                                 code=ErrorCode.FILE_UNREADABLE)
        decode(data, payload, lengths, str(f), run, points, stats)
    if stats["tensor"]:
        points.extra["tensor_scalars"] = stats["tensor"]
    if stats["non_scalar"]:
        points.warnings.append(f"{stats['non_scalar']} non-scalar summary value(s) (histograms, "
                               "images, text) ignored")
    return points


READER = Reader(
    name="tensorboard",
    description="TensorBoard event files (both scalar styles, CRC-checked, every point)",
    read=read, detect=_detect, version="1", extra="tensorboard", extra_module="tensorboard",
    priority=20,
)
