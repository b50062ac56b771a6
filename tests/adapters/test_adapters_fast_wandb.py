"""The fast paths of the W&B offline reader give exactly what the record-by-record path gives.

One run is written by ``wandb`` itself; variants of it (re-framed with LevelDB's framing) hold
odd steps, odd values, broken UTF-8, records that pass their CRC but are not protobufs, and
damaged framing. Each is read twice: with the fast paths (blocks walked side by side, history
records decoded by numpy) and with every record framed and decoded one by one by protobuf, as
before; the points, warnings, findings and errors must be identical.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("wandb", reason="wandb is not installed")

from grokaudit.adapters import _wandb_decode  # noqa: E402
from grokaudit.adapters import wandb as wb  # noqa: E402
from grokaudit.adapters._wandb_values import numbers  # noqa: E402
from grokaudit.adapters.merge import ReadOptions  # noqa: E402
from grokaudit.adapters.points import Points  # noqa: E402
from grokaudit.errors import LogFormatError  # noqa: E402
from helpers.wire import varint  # noqa: E402

from .test_adapters_wandb import log_offline  # noqa: E402


def _frame(header: bytes, payloads: list[bytes]) -> bytes:
    """LevelDB log framing, as wandb writes it (32 KiB blocks, fragments across blocks)."""
    out = bytearray(header)
    for p in payloads:
        first = True
        while True:
            room = wb.BLOCK - len(out) % wb.BLOCK
            if room < wb.REC.size:
                out += bytes(room)
                continue
            take = min(room - wb.REC.size, len(p))
            last = take == len(p)
            kind = (wb.FULL if last else wb.FIRST) if first else (wb.LAST if last else wb.MIDDLE)
            body = p[:take]
            out += wb.REC.pack(zlib.crc32(body, zlib.crc32(bytes((kind,)))), take, kind) + body
            p, first = p[take:], False
            if last:
                break
    return bytes(out)


def _snapshot(path: Path) -> Any:
    try:
        pts = wb.read_offline(path, ReadOptions())
    except LogFormatError as exc:
        return ("error", exc.code, str(exc))
    return ([(c.run, c.metric, c.step.tolist(), c.value.tobytes(), c.wall_time.tobytes())
             for c in pts.chunks], pts.conditions, pts.warnings,
            [f.to_dict() for f in pts.findings])


def _slow_snapshot(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setattr(wb, "_records_fast", lambda data: None)
        m.setattr(wb, "_decode_fast",
                  lambda bufx, starts, ends, file, n_main: wb._Fast(np.arange(starts.size)))
        return _snapshot(path)


@pytest.fixture(params=[None, 5], ids=["one part", "parts of 5 records"])
def walk_part(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy pass over all the records (and texts) at once, and in parts of 5 records
    (and 5 texts): a part's end falls inside each variant's edits."""
    if request.param is not None:
        monkeypatch.setattr(_wandb_decode, "PART", request.param)
        monkeypatch.setattr(_wandb_decode, "TEXTS", request.param)


@pytest.mark.usefixtures("walk_part")
def test_fast_paths_equal_record_by_record(wandb_env: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    rng = np.random.default_rng(0)
    rows = [{"test/acc": float(rng.random()), "train/loss": float(rng.random()) * 5,
             "ü/ñ": s * 0.5, "_private": 1, "_step": s} for s in range(0, 1500, 3)]
    rows[3]["text"] = "hello"
    rows[4]["flag"] = True
    rows[5]["nan"] = float("nan")
    src = log_offline(wandb_env, "fast1", rows, name="wd1.5_s0", config={"wd": 1.5})
    data = src.read_bytes()
    payloads = wb.records(data, str(src), Points())
    kinds = [pb.Record.FromString(p).WhichOneof("record_type") for p in payloads]
    hist = [i for i, k in enumerate(kinds) if k == "history"]
    summ = [i for i, k in enumerate(kinds) if k == "summary"]
    assert len(hist) > 100 and summ

    def history_with(i: int, edit: Any) -> bytes:
        rec = pb.Record.FromString(payloads[i])
        edit(rec.history)
        return rec.SerializeToString()

    def set_item(key: str, text: str) -> Any:
        def edit(h: Any) -> None:
            for it in h.item:
                if (it.key or ".".join(it.nested_key)) == key:
                    it.value_json = text
        return edit

    def drop_step(h: Any) -> None:
        keep = [it for it in h.item if ".".join(it.nested_key) != "_step"]
        del h.item[:]
        h.item.extend(keep)
        h.ClearField("step")

    h = hist[40]
    variants: dict[str, dict[int, bytes]] = {
        "as written": {},
        "step 2.0": {h: history_with(h, set_item("_step", "2.0"))},
        "step 2.5": {h: history_with(h, set_item("_step", "2.5"))},
        "step null": {h: history_with(h, set_item("_step", "null"))},
        "step text": {h: history_with(h, set_item("_step", '"x"'))},
        "step -3": {h: history_with(h, set_item("_step", "-3"))},
        "step 2**53+1": {h: history_with(h, set_item("_step", "9007199254740993"))},
        "step ' 7 '": {h: history_with(h, set_item("_step", " 7 "))},
        "no step": {h: history_with(h, drop_step)},
        "odd values": {h: history_with(h, set_item("test/acc", "1_0")),
                       h + 3: history_with(h + 3, set_item("test/acc", "-NaN")),
                       hist[50]: history_with(hist[50], set_item("test/acc", "nan(1)")),
                       hist[51]: history_with(hist[51], set_item("test/acc", "١٢")),
                       hist[52]: history_with(hist[52], set_item("test/acc", '"Infinity"')),
                       hist[53]: history_with(hist[53], set_item("_timestamp", "true"))},
        "broken utf-8 key": {h: payloads[h].replace(b"test/acc", b"test/\xff\xfec")},
        "utf-8 key": {h: payloads[h].replace(b"test/acc", "tést/ä".encode())},
        "garbage history": {h: payloads[h][:10] + b"\xff" * 4 + payloads[h][14:]},
        "garbage summary": {summ[-1]: payloads[summ[-1]][:8] + b"\xff" * 5
                            + payloads[summ[-1]][13:]},
        "two errors": {hist[10]: history_with(hist[10], set_item("_step", "1.5")),
                       hist[5]: payloads[hist[5]][:10] + b"\xff" * 4 + payloads[hist[5]][14:]},
    }
    header = data[:wb.HEADER.size]
    for name, edits in variants.items():
        framed = _frame(header, [edits.get(i, p) for i, p in enumerate(payloads)])
        for damage, content in (("", framed), (" truncated", framed[:-50]),
                                (" flipped", framed[:9000] + bytes([framed[9000] ^ 4])
                                 + framed[9001:])):
            d = wandb_env / "variants" / f"{name}{damage}".replace(" ", "_")
            d.mkdir(parents=True)
            (d / "run-fast1.wandb").write_bytes(content)
            fast = _snapshot(d)
            assert fast == _slow_snapshot(d, monkeypatch), f"{name}{damage}"
    assert _snapshot(wandb_env / "variants" / "as_written")[0]  # points were read


def test_numbers_read_at_once_equal_python() -> None:
    texts = [b"0.1", b"-2.5e-07", b"1e400", b"NaN", b"Infinity", b"-Infinity", b"7",
             b"2.4703282292062328e-324", b"123456789012345678901234567890"]
    buf = np.frombuffer(b"".join(texts) + bytes(16), dtype=np.uint8)
    length = np.array([len(t) for t in texts])
    at = np.cumsum(length) - length
    got = numbers(buf, at, length)
    assert got is not None
    assert got.tobytes() == np.array([float(t) for t in texts]).tobytes()
    for odd in (b"1_0", b" 1", b"nan(1)", b"-nan", b"0x10", b"1e", b""):
        buf = np.frombuffer(b"1" + odd + bytes(16), dtype=np.uint8)
        assert numbers(buf, np.array([0, 1]), np.array([1, len(odd)])) is None
    assert numbers(np.frombuffer(b"12" + bytes(16), dtype=np.uint8), np.array([0]),
                       np.array([2]), integers=True).tolist() == [12]


def test_framing_of_many_blocks(tmp_path: Path) -> None:
    payloads = [bytes([i % 251]) * (i * 37 % 70000) for i in range(200)]
    data = _frame(struct.pack("<4sHB", b":W&B", 0xBEE1, 0), payloads)
    bufx, starts, ends = wb._records_fast(data)
    assert [bufx[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == payloads
    assert wb._records_fast(data[:-10]) is None
    # a byte flipped in the middle fragment of a record crossing blocks: left to the walk,
    # which drops that record and reports it
    payloads = [b"a" * 100, bytes(range(256)) * 300, b"b" * 10]  # FULL, FIRST MIDDLE LAST, FULL
    data = _frame(struct.pack("<4sHB", b":W&B", 0xBEE1, 0), payloads)
    assert data[wb.BLOCK + 6] == wb.MIDDLE
    bufx, starts, ends = wb._records_fast(data)
    assert [bufx[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == payloads
    at = wb.BLOCK + wb.REC.size + 100
    damaged = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    assert wb._records_fast(damaged) is None
    points = Points()
    assert len(wb.records(damaged, "f", points)) < len(payloads)
    assert [f.code for f in points.findings] == ["SOURCE_TRUNCATED"]



def _record(num: int, field: int, body: bytes) -> bytes:
    """``Record{num, <field> {body}}`` as raw protobuf bytes (a body protobuf may refuse)."""
    return (b"\x08" + varint(num) + bytes([field << 3 | 2]) + varint(len(body))
            + body)


@pytest.mark.usefixtures("walk_part")
def test_summary_and_string_checks_equal_protobuf(wandb_env: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Summary records are no longer parsed by protobuf when numpy can walk them; strings are
    checked for UTF-8 at once. Each variant (non-ASCII strings, valid or not, in summaries and
    histories, in a summary long enough to be cut into fragments across blocks; summary
    layouts numpy leaves to protobuf; a history whose last field is torn at the very end of the
    file) must read exactly as record by record with protobuf."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    rows = [{"test/acc": s / 100, "_step": s} for s in range(0, 60, 3)]
    src = log_offline(wandb_env, "fast2", rows)
    data = src.read_bytes()
    payloads = wb.records(data, str(src), Points())
    kinds = [pb.Record.FromString(p).WhichOneof("record_type") for p in payloads]
    hist = [i for i, k in enumerate(kinds) if k == "history"]
    summ = [i for i, k in enumerate(kinds) if k == "summary"]

    def summary(*items: tuple[list[str], str], remove: bool = False) -> bytes:
        rec = pb.Record(num=7)
        for path, value in items:
            it = rec.summary.update.add(value_json=value)
            it.nested_key.extend(path)
        if remove:
            rec.summary.remove.add(key="gone")
        return rec.SerializeToString()

    ascii_sum = summary((["acc"], "0.5"), (["_wandb", "runtime"], "3"))
    wide = summary((["ü/ñ"], '"é"'), (["x" * 40000], "1"))  # fragments: reassembled
    torn = _record(999, 2, pb.HistoryRecord(item=[pb.HistoryItem(
        nested_key=["test/acc"], value_json="0.5")]).SerializeToString() + b"\x12")
    h = hist[4]
    variants: dict[str, tuple[dict[int, bytes], list[bytes], Any]] = {
        "summary ascii": ({summ[2]: ascii_sum}, [], None),
        "summary utf-8": ({summ[2]: summary((["ü"], '"é"'))}, [], None),
        "summary broken utf-8": ({summ[2]: summary((["u"], '"e"')).replace(b'"e"', b'"\xff"')},
                                 [], "CORRUPT_RECORD"),
        "summary broken key": ({summ[2]: summary((["u"], "1")).replace(b"u", b"\xc3")}, [],
                               "CORRUPT_RECORD"),
        "summary remove": ({summ[2]: summary((["acc"], "1"), remove=True)}, [], None),
        "summary key overruns": ({summ[2]: ascii_sum.replace(b"\x12\x07runtime",
                                                             b"\x12\x09runtime")}, [],
                                 "CORRUPT_RECORD"),
        "summary in fragments": ({summ[2]: wide}, [], None),
        "summary in fragments broken": ({summ[2]: wide.replace("é".encode(), b"\xe9\x00")},
                                        [], "CORRUPT_RECORD"),
        "history utf-8 value": ({h: pb.Record(num=5, history=pb.HistoryRecord(item=[
            pb.HistoryItem(nested_key=["test/acc"], value_json='"ü"'),
            pb.HistoryItem(nested_key=["_step"], value_json="12")])).SerializeToString()},
            [], None),
        "history torn last field": ({}, [torn], "CORRUPT_RECORD"),
    }
    header = data[:wb.HEADER.size]
    for name, (edits, tail, code) in variants.items():
        framed = _frame(header, [edits.get(i, p) for i, p in enumerate(payloads)] + tail)
        d = wandb_env / "variants2" / name.replace(" ", "_")
        d.mkdir(parents=True)
        (d / "run-fast2.wandb").write_bytes(framed)
        fast = _snapshot(d)
        assert fast == _slow_snapshot(d, monkeypatch), name
        if code is None:
            steps = fast[0][0][2]
            written = _snapshot(wandb_env / "variants2" / "summary_ascii")[0][0][2]
            # a history value that is text is skipped: its step has no test/acc
            assert steps == [s for s in written if s != 12 or "history" not in name], name
        else:
            assert fast[0] == "error" and fast[1].name == code, name


@pytest.mark.usefixtures("walk_part")
def test_key_codes_equal_python() -> None:
    """Keys told apart 8 bytes at a time: lengths around a word, trailing zero bytes, long
    keys differing in their last byte, the empty key; numbered in order of first appearance
    (also when read in parts)."""
    keys = [b"", b"a", b"a\x00", b"abcdefgh", b"abcdefgh\x00", b"abcdefghi", b"x" * 100,
            b"x" * 99 + b"y", b"_step", "ü/ñ".encode()]
    rng = np.random.default_rng(1)
    pick = rng.integers(0, len(keys), 2000).tolist()
    buf, at = bytearray(), []
    for i in pick:
        buf += rng.integers(0, 256, int(rng.integers(0, 9)), dtype=np.uint8).tobytes()
        at.append(len(buf))
        buf += keys[i]
    bufp = np.frombuffer(bytes(buf) + bytes(16), dtype=np.uint8)
    codes, uniques = _wandb_decode.key_codes(bufp, np.array(at),
                                             np.array([len(keys[i]) for i in pick]))
    assert uniques == list(dict.fromkeys(keys[i] for i in pick))
    assert [uniques[c] for c in codes.tolist()] == [keys[i] for i in pick]


@pytest.mark.usefixtures("walk_part")
def test_deeply_nested_json_values_are_not_numbers(wandb_env: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A value_json nested deeper than Python's recursion limit (a damaged or hand-made file)
    is read as what it is, a value that is not a number, as a shallow list is: by both paths,
    not a RecursionError with a traceback (the depth json gives up at depends on the stack)."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    rows = [{"test/acc": s / 100, "_step": s} for s in range(0, 30, 3)]
    src = log_offline(wandb_env, "deep", rows, config={"wd": 1.5})
    data = src.read_bytes()
    payloads = wb.records(data, str(src), Points())
    recs = [pb.Record.FromString(p) for p in payloads]
    hist = [i for i, r in enumerate(recs) if r.WhichOneof("record_type") == "history"]
    run = [i for i, r in enumerate(recs) if r.WhichOneof("record_type") == "run"]
    header = data[:wb.HEADER.size]
    for depth in (5, 3000):
        deep = "[" * depth + "]" * depth
        for target in ("test/acc", "_timestamp", "config"):
            i = run[0] if target == "config" else hist[4]
            rec = pb.Record.FromString(payloads[i])
            if target == "config":
                rec.run.config.update.add(key="deep", value_json=deep)
            for it in rec.history.item:
                if ".".join(it.nested_key) == target:
                    it.value_json = deep
            edited = [rec.SerializeToString() if k == i else p for k, p in enumerate(payloads)]
            d = wandb_env / "deep" / f"{target.replace('/', '_')}_{depth}"
            d.mkdir(parents=True)
            (d / "run-deep.wandb").write_bytes(_frame(header, edited))
            fast = _snapshot(d)
            assert fast == _slow_snapshot(d, monkeypatch), (target, depth)
            assert fast[0] != "error", (target, depth)
            ((_, metric, steps, _, walls),) = fast[0]
            assert metric == "test/acc"
            if target == "test/acc":  # skipped, as a list is
                assert steps == [s for s in range(0, 30, 3) if s != 12]
            else:
                assert steps == list(range(0, 30, 3))
            if target == "_timestamp":  # no wall time, as for a list
                assert np.isnan(np.frombuffer(walls)[4])
