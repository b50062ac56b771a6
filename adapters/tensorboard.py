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
from numpy.lib.stride_tricks import sliding_window_view

from .crc32c import crc32c_many, crc32c_words, masked
from .files import files_under
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

_SCAN = 1 << 22  # words per block when looking for record heads


def _frame_quick(data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Heads and lengths of the records when the whole file is intact records, else None.

    Without walking the records one by one: the candidates are the offsets whose 8-byte length
    is below 2**32 and passes its masked CRC-32C; they are the records when the first is at 0
    and each one ends where the next begins, the last at the end of the file. Anything else
    (a truncated or corrupt file, a record of 4 GiB) returns None, and :func:`frame` walks the
    file to say where it breaks.
    """
    n = len(data)
    if n < 16:
        return None
    views = [np.frombuffer(data, dtype="<u4", count=(n - k) // 4, offset=k) for k in range(4)]
    heads_k, lengths_k = [], []
    for k in range(4):
        size = views[k].size
        for lo in range(0, size, _SCAN):  # in blocks: a file of zeros has a candidate per byte
            # word j of view k is bytes 4j+k..4j+k+3: the high word of a length at p = 4(j-1)+k
            j = np.flatnonzero(views[k][lo:lo + _SCAN] == 0) + lo
            j = j[(j >= 1) & (j + 1 < size)]  # p >= 0, and its CRC word is in the file
            low = views[k][j - 1]
            ok = masked(crc32c_words([low, np.zeros_like(low)])) == views[k][j + 1]
            heads_k.append(4 * (j[ok] - 1) + k)
            lengths_k.append(low[ok])
    heads = np.concatenate(heads_k)
    order = np.argsort(heads, kind="stable")
    heads = heads[order]
    lengths = np.concatenate(lengths_k)[order].astype(np.int64)
    ends = heads + 16 + lengths
    if heads.size == 0 or heads[0] != 0 or ends[-1] != n or np.any(ends[:-1] != heads[1:]):
        return None
    return heads, lengths


def frame(data: bytes, file: str, points: Points) -> tuple[np.ndarray, np.ndarray]:
    """Payload offsets and lengths of every intact record of one event file.

    Checks both CRCs of every record. A short tail, or a record whose length CRC fails (the
    framing after it cannot be trusted), ends the file with a ``SOURCE_TRUNCATED`` finding; a
    record whose payload CRC fails is skipped with a ``SOURCE_TRUNCATED`` finding.
    """
    n = len(data)
    quick = _frame_quick(data)
    if quick is not None:  # every record intact (the usual case): only the data CRCs remain
        return _check_payloads(np.frombuffer(data, dtype=np.uint8), quick[0], quick[1], file,
                               points)
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
    return _check_payloads(buf, h, ln, file, points)


def _check_payloads(buf: np.ndarray, h: np.ndarray, ln: np.ndarray, file: str,
                    points: Points) -> tuple[np.ndarray, np.ndarray]:
    """Payload offsets and lengths of the records at ``h``, those failing their data CRC
    skipped with a ``SOURCE_TRUNCATED`` finding each."""
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


def _varint(bufp: np.ndarray, q: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Protobuf varints at positions ``q``: (value as uint64, bytes used, ended within ``most``
    bytes)."""
    val = np.zeros(q.size, dtype=np.uint64)
    used = np.zeros(q.size, dtype=np.int64)
    done = np.zeros(q.size, dtype=bool)
    for i in range(most):
        byte = bufp[q + i]
        live = ~done
        val |= np.where(live, byte & 0x7F, 0).astype(np.uint64) << np.uint64(7 * i)
        used += live
        done |= byte < 0x80
        if done.all():
            break
    return val, used, done


def _simple(bufp: np.ndarray, p: np.ndarray, end: np.ndarray) -> dict[str, np.ndarray]:
    """Fields of the records laid out exactly as one ``simple_value`` (torch ``add_scalar``):

        Event{[wall_time: 0x09 f64] [step: 0x10 varint] summary: 0x2a len
              Summary{value: 0x0a len Value{tag: 0x0a len bytes, simple_value: 0x15 f32}}}

    ``ok`` marks those records (any other layout is left to protobuf); for them the nested
    lengths all end exactly at the record's end, so every byte was read as protobuf would.
    ``bufp`` holds the file plus 16 zero bytes, so that reads past a record stay in bounds.
    """
    has_wall = bufp[p] == 0x09
    q = p + 9 * has_wall
    has_step = bufp[q] == 0x10
    step, k, ok = _varint(bufp, q + 1, 9)  # 9 bytes: 0 <= step < 2**63 (else protobuf decides)
    ok |= ~has_step
    q = np.minimum(q + has_step * (1 + k), end)
    ok &= bufp[q] == 0x2A
    for _ in range(2):  # summary, then its one value: each must end at the record's end
        n, k, fine = _varint(bufp, q + 1, 3)
        q = np.minimum(q + 1 + k, end)
        ok &= fine & (q.astype(np.uint64) + n == end.astype(np.uint64)) & (bufp[q] == 0x0A)
    n, k, fine = _varint(bufp, q + 1, 3)
    tag = np.minimum(q + 1 + k, end)
    tag_len = np.minimum(n, np.uint64(1 << 40)).astype(np.int64)
    q = np.minimum(tag + tag_len, end)
    ok &= fine & (bufp[q] == 0x15) & (q + 5 == end)
    sel = np.flatnonzero(ok)
    win = sliding_window_view(bufp, 8)
    wall = np.zeros(sel.size, dtype=np.float64)
    w = sel[has_wall[sel]]
    if w.size:
        wall[has_wall[sel]] = win[p[w] + 1].copy().view("<f8").ravel()
    stp = np.where(has_step[sel], step[sel], 0).view(np.int64)
    val = win[q[sel] + 1][:, :4].copy().view("<f4").ravel().astype(np.float64)
    return {"ok": ok, "sel": sel, "tag": tag[sel], "tag_len": tag_len[sel], "step": stp,
            "wall": wall, "value": val}


def _tag_codes(bufp: np.ndarray, start: np.ndarray, length: np.ndarray
               ) -> tuple[np.ndarray, list[bytes]]:
    """Codes of the tag byte strings ``bufp[start : start + length]`` and the distinct ones."""
    codes = np.empty(start.size, dtype=np.int64)
    uniques: list[bytes] = []
    by_len, len_codes = np.unique(length, return_inverse=True)
    for i, tl in enumerate(by_len.tolist()):
        rows = np.flatnonzero(len_codes == i)
        width = -(-tl // 8) * 8
        if width == 0:
            sub = np.zeros(rows.size, dtype=np.int64)
        else:
            mat = sliding_window_view(bufp, width)[start[rows]]
            if width != tl:
                mat[:, tl:] = 0
            words = mat.view("<u8")
            sub = pd.factorize(words[:, 0])[0].astype(np.int64)
            for j in range(1, words.shape[1]):
                col = pd.factorize(words[:, j])[0].astype(np.uint64)
                sub = pd.factorize((sub.astype(np.uint64) << np.uint64(32)) | col)[0]
                sub = sub.astype(np.int64)
        first = np.unique(sub, return_index=True)[1]
        codes[rows] = sub + len(uniques)
        at = start[rows[first]].tolist()
        uniques.extend(bufp[a:a + tl].tobytes() for a in at)
    return codes, uniques


def decode(data: bytes, payload: np.ndarray, lengths: np.ndarray, file: str,
           run: str, points: Points, stats: dict[str, int]) -> None:
    """Decode the Event records of one file and add their scalar values to ``points``.

    Records laid out as one ``simple_value`` (torch ``add_scalar``, by far the most common) are
    read with numpy from the raw bytes (:func:`_simple`); every other record (other scalar
    styles, several values per event, histograms, the file_version event) is parsed by
    TensorBoard's own protobuf class, as all records were before, with the same results.
    """
    bufp = np.frombuffer(data + bytes(16), dtype=np.uint8)
    fast = _simple(bufp, payload, payload + lengths)
    ok = fast["ok"]
    tag_ids: dict[str, int] = {}
    parts_rec: list[np.ndarray] = []
    parts_tag: list[np.ndarray] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if fast["sel"].size:
        codes, uniques = _tag_codes(bufp, fast["tag"], fast["tag_len"])
        bad = np.zeros(len(uniques), dtype=bool)
        ids = np.zeros(len(uniques), dtype=np.int64)
        for u, raw in enumerate(uniques):
            try:
                ids[u] = tag_ids.setdefault(raw.decode("utf-8"), len(tag_ids))
            except UnicodeDecodeError:
                bad[u] = True  # protobuf refuses it: left to protobuf, which raises
        keep = ~bad[codes]
        if not keep.all():
            ok = ok.copy()
            ok[fast["sel"][~keep]] = False
        parts_rec.append(fast["sel"][keep])
        parts_tag.append(ids[codes[keep]])
        parts.append((fast["step"][keep], fast["value"][keep], fast["wall"][keep]))
    slow = np.flatnonzero(~ok)
    if slow.size:
        recs, tags, steps, values, walls = _decode_protobuf(data, payload[slow], lengths[slow],
                                                            file, stats)
        parts_rec.append(slow[np.array(recs, dtype=np.int64)])
        parts_tag.append(np.array([tag_ids.setdefault(t, len(tag_ids)) for t in tags],
                                  dtype=np.int64))
        parts.append((np.array(steps, dtype=np.int64), np.array(values, dtype=np.float64),
                      np.array(walls, dtype=np.float64)))
    if not parts or not sum(r.size for r in parts_rec):
        return
    rec = np.concatenate(parts_rec)
    tag = np.concatenate(parts_tag)
    st = np.concatenate([x[0] for x in parts])
    val = np.concatenate([x[1] for x in parts])
    wt = np.concatenate([x[2] for x in parts])
    if len(parts) > 1:  # back to file order (a record's values are all on one side)
        by_rec = np.argsort(rec, kind="stable")
        tag, st, val, wt = tag[by_rec], st[by_rec], val[by_rec], wt[by_rec]
    codes, first_ids = pd.factorize(tag)
    names = {i: t for t, i in tag_ids.items()}
    order = np.argsort(codes, kind="stable")  # keeps file order within each tag
    bounds = np.searchsorted(codes[order], np.arange(len(first_ids) + 1))
    for i, tid in enumerate(first_ids.tolist()):
        sel = order[bounds[i]:bounds[i + 1]]
        points.add(run, names[tid], st[sel], val[sel], wt[sel])


def _decode_protobuf(data: bytes, payload: np.ndarray, lengths: np.ndarray, file: str,
                     stats: dict[str, int]
                     ) -> tuple[list[int], list[str], list[int], list[float], list[float]]:
    """Scalar values of the given records, parsed with protobuf: (record index among them,
    tag, step, value, wall time) per value, in file order."""
    recs: list[int] = []
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    non_scalar_plugins: set[str] = set()
    for r, ev in enumerate(_events(data, payload, lengths, file)):
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
            recs.append(r)
            tags.append(v.tag)
            steps.append(step)
            values.append(x)
            walls.append(wall)
    return recs, tags, steps, values, walls


#: Folders Keras' TensorBoard callback and TF2 scripts write a run's splits to
#: (``logs/fit/<run>/train``, ``…/validation``): one run, its tags prefixed by the split.
SPLIT_FOLDERS = frozenset({"train", "training", "validation", "valid", "val", "test", "eval",
                           "evaluation"})


def _split_runs(files: list[Path], root: Path) -> dict[Path, tuple[Path, str]]:
    """Event folders that are splits of one run: two or more sibling folders named like
    :data:`SPLIT_FOLDERS` holding event files. Maps each to (the run's folder, the tag
    prefix ``"train/"``)."""
    by_parent: dict[Path, set[Path]] = {}
    for f in files:
        if f.parent.name.lower() in SPLIT_FOLDERS and f.parent != root:
            by_parent.setdefault(f.parent.parent, set()).add(f.parent)
    out: dict[Path, tuple[Path, str]] = {}
    for parent, dirs in by_parent.items():
        if len(dirs) >= 2:
            for d in dirs:
                out[d] = (parent, d.name + "/")
    return out


def _read_configs(points: Points, run_dirs: dict[str, Path], root: Path) -> None:
    """The conditions of each run from the config files in its folder and the folders above
    it up to ``root`` (Lightning's ``TensorBoardLogger`` writes ``hparams.yaml`` beside the
    events), as the table reader takes them: the nearest file wins; a file that does not read
    as a config file is a note, never a refusal."""
    from .records import SIDECAR_NAMES, read_sidecar

    read: dict[Path, Any] = {}
    used: set[Path] = set()
    for run, run_dir in run_dirs.items():
        chain = [run_dir, *run_dir.parents]
        dirs = chain[: chain.index(root) + 1] if root in chain else [run_dir]
        for d in reversed(dirs):  # farthest first: the nearest is set last and wins
            for name in SIDECAR_NAMES:
                q = d / name
                if not q.is_file():
                    continue
                if q not in read:
                    try:
                        read[q] = read_sidecar(q)
                    except LogFormatError as exc:
                        read[q] = None
                        points.warnings.append(f"{safe(q.name)}: not read as a config file "
                                               f"({safe(exc)})")
                sc = read[q]
                if sc is None:
                    continue
                used.add(q)
                for k, v in sc.values.items():
                    points.add_condition(run, k, v)
                    if k in sc.outcomes:
                        points.outcomes.add(k)
    for q in sorted(used):
        points.files.append(str(q))
    if used:
        points.extra["config_files"] = sorted(str(q) for q in used)


def read(path: Path, options: ReadOptions) -> Points:
    """Read every event file under ``path`` (one run per directory; the split folders of one
    run, ``train/`` and ``validation/``, are one run whose tags carry the split)."""
    import_extra("tensorboard", "tensorboard")
    files = event_files(path)
    if not files:
        raise LogFormatError("no TensorBoard event files (events.out.tfevents.*) here; check "
                             "the path or the --format", path=str(path),
                             code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    stats = {"tensor": 0, "non_scalar": 0}
    root = path if path.is_dir() else path.parent
    splits = _split_runs(files, root)
    run_dirs: dict[str, Path] = {}
    for f in files:
        points.files.append(str(f))
        data = f.read_bytes()
        if not data:
            raise LogFormatError("event file is empty; there is nothing to read", path=str(f),
                                 code=ErrorCode.FILE_EMPTY)
        run_dir, prefix = splits.get(f.parent, (f.parent, ""))
        rel = run_dir.relative_to(root).as_posix()
        run = root.name if rel == "." else rel
        run_dirs[run] = run_dir
        payload, lengths = frame(data, str(f), points)
        if payload.size == 0:
            why = points.findings[-1].detail if points.findings else "no records"
            raise LogFormatError(f"not a readable event file: {why}", path=str(f),
                                 code=ErrorCode.FILE_UNREADABLE)
        first = len(points.chunks)
        decode(data, payload, lengths, str(f), run, points, stats)
        for c in points.chunks[first:]:  # train/epoch_accuracy, validation/epoch_accuracy
            c.metric = prefix + c.metric
    _read_configs(points, {r: d for r, d in run_dirs.items()}, root)
    logged = {c.run for c in points.chunks if c.step.size}
    empty = sorted(r for r in run_dirs if r not in logged)
    for r in empty[:20]:  # a run that crashed before its first scalar: named, never dropped
        points.warnings.append(f"{safe(r)}: its event file(s) hold no scalar value: no run read "
                               "from it")
    if len(empty) > 20:
        points.warnings.append(f"and {len(empty) - 20} more run folder(s) with no scalar value")
    if any(p for _, p in splits.values()):
        points.extra["split_folders"] = sorted({p.rstrip("/") for _, p in splits.values()})
    if stats["tensor"]:
        points.extra["tensor_scalars"] = stats["tensor"]
    if stats["non_scalar"]:
        points.warnings.append(f"{stats['non_scalar']} non-scalar summary value(s) (histograms, "
                               "images, text) ignored")
    if path.is_dir():
        _note_unread_logs(points, path)
    return points


#: Files beside event files that may hold a run's log of their own (a Keras ``CSVLogger``'s
#: ``training.log``, a CSV export): never read with the events, so named in the notes.
_OTHER_LOGS = (".log", ".txt", ".dat", ".csv", ".tsv", ".jsonl", ".ndjson")


def _note_unread_logs(points: Points, root: Path) -> None:
    """One note per text or table file under ``root`` that the event files' reading leaves
    out (at most 20, then a count): a log beside the events is never dropped in silence."""
    unread = sorted(q.relative_to(root).as_posix() for q in files_under(root, _OTHER_LOGS))
    for rel in unread[:20]:
        points.warnings.append(f"{safe(rel)}: not read (only the TensorBoard event files of "
                               "this folder are; give the file as its own path to read it)")
    if len(unread) > 20:
        points.warnings.append(f"and {len(unread) - 20} more text or table file(s) not read")


READER = Reader(
    name="tensorboard",
    description="TensorBoard event files (both scalar styles, CRC-checked, every point)",
    read=read, detect=_detect, version="1", extra="tensorboard", extra_module="tensorboard",
    priority=20,
)
