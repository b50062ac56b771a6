"""The fast paths of the TensorBoard reader give exactly what the slow ones give.

* CRC-32C of many segments at once (4 bytes per step, long records in chained pieces) equals a
  byte-by-byte reference;
* the vectorized framing of an intact file finds the records the record-by-record walk finds,
  and gives up (to the walk) on a damaged file;
* records decoded with numpy from the raw bytes (the ``simple_value`` layout) equal the same
  records decoded by TensorBoard's protobuf classes, mixed with records only protobuf reads.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard", reason="tensorboard is not installed")

from grokaudit.adapters import crc32c as crc  # noqa: E402
from grokaudit.adapters import read_log  # noqa: E402
from grokaudit.adapters import tensorboard as tb  # noqa: E402
from grokaudit.adapters.merge import ReadOptions  # noqa: E402
from grokaudit.errors import ErrorCode, LogFormatError  # noqa: E402


def _reference(data: bytes) -> int:
    table = crc.TABLE.tolist()
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def test_crc32c_known_value_and_many_segments() -> None:
    assert crc.crc32c(b"123456789") == 0xE3069283
    assert crc.crc32c(b"") == 0
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 40_000, dtype=np.uint8)
    lengths = np.concatenate([np.arange(0, 40), rng.integers(0, 300, 40),
                              [4095, 4096, 4097, 8192, 9001, 20_000]])
    starts = rng.integers(0, buf.size - lengths.max(), lengths.size)
    starts[:4] = 0  # windows reaching before the start of the buffer
    got = crc.crc32c_many(buf, starts, lengths)
    want = [_reference(buf[s:s + n].tobytes()) for s, n in zip(starts.tolist(), lengths.tolist())]
    assert got.tolist() == want
    words = buf[:8 * 50].view("<u4").reshape(50, 2)
    assert crc.crc32c_words([words[:, 0], words[:, 1]]).tolist() == \
        [_reference(buf[8 * i:8 * i + 8].tobytes()) for i in range(50)]


def _torch_events(logdir: Path) -> Path:
    torch_tb = pytest.importorskip("torch.utils.tensorboard", reason="torch is not installed")
    w = torch_tb.SummaryWriter(str(logdir))
    for s in range(0, 400, 3):
        w.add_scalar("test/acc", s / 400, s)
        w.add_scalar("ünï/tag", float(s) * 1e30, s)
        w.add_scalar("new", s / 7, s, new_style=True)
        if s % 60 == 0:
            w.add_histogram("h", np.linspace(0, 1, 50), s)
    w.add_scalar("nan", float("nan"), 0)
    w.add_scalar("x" * 300, -float("inf"), 2**50)
    w.close()
    return next(logdir.glob("events.out.tfevents.*"))


def _walk(data: bytes) -> list[int]:
    pos, heads = 0, []
    while pos < len(data):
        heads.append(pos)
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return heads


def test_vectorized_framing_finds_the_records(tmp_path: Path) -> None:
    data = _torch_events(tmp_path).read_bytes()
    quick = tb._frame_quick(data)
    assert quick is not None
    assert quick[0].tolist() == _walk(data)
    assert tb._frame_quick(data[:-3]) is None  # truncated: the walk reports where
    damaged = bytearray(data)
    damaged[_walk(data)[3] + 1] ^= 0x08  # a length byte: its CRC fails
    assert tb._frame_quick(bytes(damaged)) is None


def _decoded(data: bytes, *, fast: bool) -> tuple[list[tuple], dict[str, int]]:
    points = tb.Points()
    payload, lengths = tb.frame(data, "f", points)
    stats = {"tensor": 0, "non_scalar": 0}
    if fast:
        tb.decode(data, payload, lengths, "f", "r", points, stats)
    else:
        real = tb._simple
        try:
            tb._simple = lambda b, p, e: {**real(b, p, e), "ok": np.zeros(p.size, dtype=bool),
                                          "sel": np.zeros(0, dtype=np.int64)}
            tb.decode(data, payload, lengths, "f", "r", points, stats)
        finally:
            tb._simple = real
    chunks = [(c.metric, c.step.tolist(), c.value.tobytes(), c.wall_time.tobytes())
              for c in points.chunks]
    return chunks, stats


def test_numpy_decoding_equals_protobuf_decoding(tmp_path: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    data = _torch_events(tmp_path).read_bytes()
    # records only protobuf reads, between fast ones: two values, no step, an extra field
    value = Summary.Value
    extra = [Event(wall_time=1.0, step=5, summary=Summary(value=[
                 value(tag="test/acc", simple_value=0.5), value(tag="b", simple_value=1.0)])),
             Event(wall_time=2.0, summary=Summary(value=[value(tag="b", simple_value=2.0)]))]
    payloads = [e.SerializeToString() for e in extra]
    payloads.append(payloads[1] + b"\x18\x07")
    data += b"".join(_record(p) for p in payloads)
    fast = _decoded(data, fast=True)
    assert fast == _decoded(data, fast=False)
    assert sum(len(c[1]) for c in fast[0]) > 400 and fast[1]["tensor"] > 100


def _record(payload: bytes) -> bytes:
    def m(b: bytes) -> bytes:
        return struct.pack("<I", int(crc.masked(np.array([crc.crc32c(b)]))[0]))

    head = struct.pack("<Q", len(payload))
    return head + m(head) + payload + m(payload)


def test_a_tag_that_is_not_utf8_is_refused_as_before(tmp_path: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    good = Event(wall_time=1.0, step=1, summary=Summary(value=[
        Summary.Value(tag="test/acc", simple_value=1.0)])).SerializeToString()
    f = tmp_path / "events.out.tfevents.1.h"
    f.write_bytes(_record(good) + _record(good.replace(b"test/acc", b"test/\xff\xfec")))
    with pytest.raises(LogFormatError) as err:
        tb.read(tmp_path, ReadOptions())
    assert err.value.code is ErrorCode.FILE_UNREADABLE
    f.write_bytes(_record(good) * 3)
    assert read_log(tmp_path).num_rows == 1
