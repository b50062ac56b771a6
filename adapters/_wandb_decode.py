"""The history and summary records of a ``.wandb`` file, read with numpy instead of protobuf.

wandb writes its history and summary records in one layout::

    Record{[num] history{item{nested_key|key, value_json}*, [step{[num]}]}}
    Record{[num] summary{update{(nested_key|key)+, value_json}*}}

Those records are walked with numpy, side by side (:func:`walk_items`); every other record,
or one with any other field, goes to protobuf (:attr:`Fast.slow`), as all records did before.
The walk checks what protobuf would: the wire format, and UTF-8 in every string (a summary
record is only checked: it is ignored once parsed). Strings are checked at once: the bodies
are copied with every byte of the framing that may be 0x80 or more set to zero (the 0x82 of the
value tag, varint continuations), so that a record whose bytes then stay below 0x80 holds ASCII
strings only; the few others are checked string by string.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from grokaudit.errors import LogFormatError
from grokaudit.schema import STEP_MAX

from ._wandb_values import _checked_step, _step_value, _texts, _value, parse_many
from .tensorboard import _varint


class Fast:
    """What the numpy pass read of the history records of one file (see :func:`decode_fast`)."""

    def __init__(self, slow: np.ndarray) -> None:
        self.slow = slow  #: records left to protobuf (indices)
        self.rec = np.zeros(0, dtype=np.int64)  #: per value: its record
        self.key: list[str] = []
        self.key_code = np.zeros(0, dtype=np.int64)  #: per value: index into ``key``
        self.value = np.zeros(0, dtype=np.float64)
        self.step = np.zeros(0, dtype=np.int64)  #: per value
        self.wall = np.zeros(0, dtype=np.float64)  #: per value
        self.skipped = 0
        self.error: tuple[int, LogFormatError] | None = None


def _len12(bufp: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Varints of one or two bytes at ``q`` (lengths below 16 384): (value, bytes, ok)."""
    b0 = bufp[q].astype(np.int64)
    b1 = bufp[q + 1].astype(np.int64)
    two = b0 >= 0x80
    return np.where(two, (b0 & 0x7F) | (b1 << 7), b0), 1 + two, ~two | (b1 < 0x80)


class Items:
    """The items of the history bodies read by :func:`walk_items` (the summary bodies' are
    only checked), and which bodies may hold a string that is not ASCII."""

    def __init__(self, n: int) -> None:
        self.bad = np.zeros(n, dtype=bool)  #: per body: protobuf has to read it
        self.has_step = np.zeros(n, dtype=bool)  #: per body: a ``step`` field
        self.step = np.zeros(n, dtype=np.int64)  #: per body: its ``num``
        self.owner = np.zeros(0, dtype=np.int64)  #: per history item: its body, in order
        self.key_at = self.key_len = self.val_at = self.val_len = self.owner
        self.framing: list[np.ndarray] = []  #: positions of framing bytes (maybe >= 0x80)
        self.odd = np.zeros(n, dtype=bool)  #: per body, not bad: a byte >= 0x80 in a string


def _runs(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Every position ``start[i] + j`` for ``j < length[i]`` (short runs)."""
    out = [start[length > j] + j for j in range(int(length.max(initial=0)))]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _key_fields(bufp: np.ndarray, c: np.ndarray, be: np.ndarray, more: np.ndarray,
                item: np.ndarray) -> None:
    """Step ``c`` over the further key fields (``nested_key`` path parts) of the items
    ``more``, in place; an item whose field overruns it is no longer an ``item``."""
    while more.size:
        at = c[more]
        klen = bufp[at + 1].astype(np.int64)
        fine = (klen < 0x80) & (at + 2 + klen <= be[more])
        item[more[~fine]] = False
        more, at = more[fine], at[fine]
        c[more] = at + 2 + klen[fine]
        nxt = bufp[c[more]]
        more = more[((nxt == 0x12) | (nxt == 0x0A)) & (c[more] < be[more])]


def _windows(bufp: np.ndarray, width: int) -> np.ndarray:
    """``bufp`` seen as one little-endian integer of ``width`` bytes (4 or 8) at every byte."""
    out: np.ndarray = np.ndarray((bufp.size - width + 1,), dtype=f"<u{width}", buffer=bufp,
                                 strides=(1,))
    return out


def _rows(windows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The bytes at each of ``at`` (one row each) out of :func:`_windows`: one gather of whole
    integers, much faster than gathering the rows of a sliding window view."""
    out: np.ndarray = windows[at].view(np.uint8).reshape(at.size, windows.itemsize)
    return out


#: Bodies walked together by :func:`walk_items`: their bytes and the walk's arrays stay in the
#: CPU's cache (one walk over all the bodies at once was half again as slow).
PART = 8192


def walk_items(bufp: np.ndarray, body: np.ndarray, end: np.ndarray, summary: np.ndarray,
               n_main: int) -> Items:
    """:func:`walk_part` and :func:`not_ascii` over the bodies ``PART`` at a time, joined
    (owners in body order; the framing positions are not kept)."""
    out = Items(body.size)
    parts: list[Items] = []
    for a in range(0, body.size, PART):
        z = slice(a, a + PART)
        part = walk_part(bufp, body[z], end[z], summary[z])
        out.bad[z], out.has_step[z], out.step[z] = part.bad, part.has_step, part.step
        out.odd[z] = ~part.bad & not_ascii(bufp, body[z], end[z], part.framing, n_main)
        part.owner = part.owner + a
        parts.append(part)
    if parts:
        out.owner, out.key_at, out.key_len, out.val_at, out.val_len = (
            np.concatenate([getattr(q, k) for q in parts])
            for k in ("owner", "key_at", "key_len", "val_at", "val_len"))
    return out


def walk_part(bufp: np.ndarray, body: np.ndarray, end: np.ndarray,
              summary: np.ndarray) -> Items:
    """Walk the bodies ``bufp[body:end]`` side by side, one field of each per step. A field is
    an item ``0x0a len {0x12|0x0a klen key, 0x82 0x01 vlen value_json}`` (in a summary, one
    or more key fields), or, in a history, one ``step`` ``0x12 len {[0x08 num]}``; anything
    else marks the body bad (protobuf reads it). Each step reads the 8 bytes at each field
    and the 4 at its value in one gather each (``bufp`` ends with 16 zero bytes)."""
    out = Items(body.size)
    cur = body.copy()
    seen_step = np.zeros(body.size, dtype=np.int64)
    count = np.zeros(body.size, dtype=np.int64)
    found: list[tuple[np.ndarray, ...]] = []  # owner, rank, key at, length, value at, length
    win8, win4 = _windows(bufp, 8), _windows(bufp, 4)
    act = np.flatnonzero(cur < end)
    while act.size:
        p = cur[act]
        pe = end[act]
        summ = summary[act]
        w = _rows(win8, p)
        tag = w[:, 0]
        two = w[:, 1] >= 0x80
        n = np.where(two, (w[:, 1] & 0x7F) | (w[:, 2].astype(np.int64) << 7), w[:, 1])
        b = p + 2 + two
        be = b + n
        ok = (~two | (w[:, 2] < 0x80)) & (be <= pe) & (b <= pe)
        # an item: key field(s), then the value
        key_tag = np.where(two, w[:, 3], w[:, 2])
        klen = np.where(two, w[:, 4], w[:, 3]).astype(np.int64)
        ks = np.minimum(b + 2, pe)
        c = np.minimum(ks + klen, pe)
        item = (ok & (tag == 0x0A) & ((key_tag == 0x12) | (key_tag == 0x0A)) & (klen < 0x80)
                & (ks + klen <= be))
        v = _rows(win4, c)
        more = np.flatnonzero(item & summ & ((v[:, 0] == 0x12) | (v[:, 0] == 0x0A)) & (c < be))
        ke = c.copy()
        if more.size:
            _key_fields(bufp, c, be, more, item)  # their tags and lengths: below 0x80
            v[more] = _rows(win4, c[more])
        vtwo = v[:, 2] >= 0x80
        vl = np.where(vtwo, (v[:, 2] & 0x7F) | (v[:, 3].astype(np.int64) << 7), v[:, 2])
        vs = c + 3 + vtwo
        item &= ((v[:, 0] == 0x82) & (v[:, 1] == 0x01) & (~vtwo | (v[:, 3] < 0x80))
                 & (vs + vl == be))
        step = _step_fields(bufp, p, b, be, n, ok & (tag == 0x12) & ~summ, act, out,
                            seen_step)
        good = item | step
        out.bad[act[~good]] = True
        i = np.flatnonzero(item)
        out.framing += [c[i], p[i[two[i]]] + 1, c[i[vtwo[i]]] + 2]
        h = i[~summ[i]]
        owners = act[h]
        found.append((owners, count[owners], ks[h], ke[h] - ks[h], vs[h], vl[h]))
        count[owners] += 1
        cur[act] = be
        act = act[good & (be < pe)]
    out.bad |= seen_step > 1
    out.has_step = seen_step == 1
    if found:
        _in_order(out, found, count)
    return out


def _step_fields(bufp: np.ndarray, p: np.ndarray, b: np.ndarray, be: np.ndarray,
                 n: np.ndarray, cand: np.ndarray, act: np.ndarray, out: Items,
                 seen_step: np.ndarray) -> np.ndarray:
    """Which of the fields at ``p`` (bodies ``act``) are a history's ``step {[num]}``
    (``cand``: tag 0x12, length within the body); their ``num`` goes to ``out``."""
    step = np.zeros(p.size, dtype=bool)
    st = np.flatnonzero(cand)
    if not st.size:
        return step
    num, kn, okn = _varint(bufp, b[st] + 1, 9)
    step[st] = (n[st] == 0) | ((bufp[b[st]] == 0x08) & okn & (b[st] + 1 + kn == be[st]))
    sel = st[step[st]]
    seen_step[act[sel]] += 1
    out.step[act[sel]] = np.where(n[sel] == 0, 0, num[step[st]].astype(np.int64))
    # the bytes that may be >= 0x80: a two-byte length's first, the num's continuations
    out.framing += [p[sel[n[sel] >= 0x80]] + 1, _runs(b[sel] + 1, kn[step[st]] - 1)]
    return step


def _in_order(out: Items, found: list[tuple[np.ndarray, ...]], count: np.ndarray) -> None:
    """The history items found step by step, put in body order (then item order)."""
    owner = np.concatenate([f[0] for f in found])
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    order = np.empty(owner.size, dtype=np.int64)
    order[first[owner] + np.concatenate([f[1] for f in found])] = np.arange(owner.size)
    out.owner = owner[order]
    out.key_at, out.key_len, out.val_at, out.val_len = (
        np.concatenate([f[k] for f in found])[order] for k in range(2, 6))


def _segment_max(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The largest byte of each ``buf[start:end]`` (non-empty, in order, not overlapping)."""
    if not start.size:
        return np.zeros(0, dtype=np.uint8)
    bounds = np.empty(2 * start.size, dtype=np.int64)
    bounds[0::2], bounds[1::2] = start, end
    if np.all(np.diff(bounds) >= 0) and int(bounds[-1]) < buf.size:
        out: np.ndarray = np.maximum.reduceat(buf, bounds)[0::2]
        return out
    return np.array([int(buf[a:b].max(initial=0)) for a, b in zip(start.tolist(),
                                                                  end.tolist())], dtype=np.uint8)


def not_ascii(bufp: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              framing: list[np.ndarray], n_main: int) -> np.ndarray:
    """Per body ``bufp[starts:ends]`` (in file order; the reassembled ones, from ``n_main``
    on, after the others): True when a byte of 0x80 or more is left once the framing bytes
    (positions inside the bodies) are hidden, that is, when one of its strings may not be
    ASCII. Only the span of the bodies is copied (one byte more: see :func:`_segment_max`)."""
    out = np.zeros(starts.size, dtype=bool)
    pos = np.concatenate(framing) if framing else np.zeros(0, dtype=np.int64)
    for part in (np.flatnonzero(starts < n_main), np.flatnonzero(starts >= n_main)):
        if not part.size:
            continue
        lo, hi = int(starts[part].min()), int(ends[part].max()) + 1
        hidden = bufp[lo:hi].copy()
        hidden[pos[(pos >= lo) & (pos < hi)] - lo] = 0
        out[part] = _segment_max(hidden, starts[part] - lo, ends[part] - lo) >= 0x80
    return out


def _head_framing(bufp: np.ndarray, starts: np.ndarray, ends: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each record's ``[num]`` and body tag: (tag, body start, ok), ``PART`` records at a
    time (their bytes stay in cache)."""
    if starts.size <= PART:
        return _head_part(bufp, starts, ends)
    parts = [_head_part(bufp, starts[a:a + PART], ends[a:a + PART])
             for a in range(0, starts.size, PART)]
    tag, body, ok = (np.concatenate([q[k] for q in parts]) for k in range(3))
    return tag, body, ok


def _head_part(bufp: np.ndarray, starts: np.ndarray, ends: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    has_num = bufp[starts] == 0x08
    _, kn, ok = _varint(bufp, starts + 1, 9)
    q = np.where(has_num, np.minimum(starts + 1 + kn, ends), starts)
    ok |= ~has_num
    tag = bufp[q]
    n, kl, okl = _varint(bufp, q + 1, 3)
    body = np.minimum(q + 1 + kl, ends)
    ok &= okl & ((tag == 0x12) | (tag == 0x1A)) & (body + n.astype(np.int64) == ends)
    ok &= starts < ends
    return tag, body, ok


def _utf8_items(bufx: bytes, bufp: np.ndarray, items: Items, odd: np.ndarray,
                n_main: int) -> None:
    """Mark bad the history bodies among ``odd`` (per body) holding a string that is not
    UTF-8: each string with a byte of 0x80 or more is decoded."""
    sel = np.flatnonzero(odd[items.owner])
    if not sel.size:
        return
    ks, ke = items.key_at[sel], items.key_at[sel] + items.key_len[sel]
    vs, ve = items.val_at[sel], items.val_at[sel] + items.val_len[sel]
    top = [np.zeros(sel.size, dtype=np.uint8), np.zeros(sel.size, dtype=np.uint8)]
    for part in (np.flatnonzero(ks < n_main), np.flatnonzero(ks >= n_main)):
        for t, a, b in zip(top, (ks, vs), (ke, ve)):
            nz = part[b[part] > a[part]]
            t[nz] = _segment_max(bufp, a[nz], b[nz])
    for h in np.flatnonzero(np.maximum(top[0], top[1]) >= 0x80).tolist():
        try:
            bufx[ks[h]:ke[h]].decode("utf-8")
            bufx[vs[h]:ve[h]].decode("utf-8")
        except UnicodeDecodeError:
            items.bad[items.owner[sel[h]]] = True


def _last_per_record(item_rec: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """Of the items ``sel`` (in record order), the last one of each record."""
    if not sel.size:
        return sel
    rec = item_rec[sel]
    return sel[np.concatenate((rec[1:] != rec[:-1], [True]))]


#: Texts read together by :func:`_read_texts`.
TEXTS = 65536


def _read_texts(bufx: bytes, bufp: np.ndarray, at: np.ndarray, length: np.ndarray,
                integers: bool, python: Any) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """The texts read at once (values, ok) and ``python`` of each other one (as bytes); read
    ``TEXTS`` at a time (their bytes stay in cache)."""
    if at.size <= TEXTS:
        values, ok = parse_many(bufp, at, length, integers)
    else:
        parts = [parse_many(bufp, at[a:a + TEXTS], length[a:a + TEXTS], integers)
                 for a in range(0, at.size, TEXTS)]
        values, ok = (np.concatenate([q[k] for q in parts]) for k in range(2))
    odd = np.flatnonzero(~ok)
    return values, ok, [python(t.decode("utf-8")) for t in _texts(bufx, at[odd], length[odd])]


#: The low ``k`` bytes of a little-endian 8-byte word, for k = 0..8.
_LOW = np.array([(1 << 8 * k) - 1 for k in range(9)], dtype=np.uint64)


def key_codes(bufp: np.ndarray, start: np.ndarray, length: np.ndarray
              ) -> tuple[np.ndarray, list[bytes]]:
    """Codes of the keys ``bufp[start : start + length]``, numbered in order of first
    appearance, and the distinct keys (``bufp`` ends with 16 zero bytes); ``TEXTS`` keys at a
    time (:func:`_key_part`), their distinct keys then numbered across the parts."""
    codes = np.zeros(start.size, dtype=np.int64)
    index: dict[bytes, int] = {}
    for a in range(0, start.size, TEXTS):
        z = slice(a, a + TEXTS)
        part, keys = _key_part(bufp, start[z], length[z])
        codes[z] = np.array([index.setdefault(k, len(index)) for k in keys],
                            dtype=np.int64)[part]
    return codes, list(index)


def _key_part(bufp: np.ndarray, start: np.ndarray, length: np.ndarray
              ) -> tuple[np.ndarray, list[bytes]]:
    """:func:`key_codes` of some keys.

    A key's code starts as its length; then, 8 bytes at a time, the keys still that long
    take a new code for each distinct (code, next 8 bytes), above every code given so far,
    so that equal keys end with equal codes and different keys with different ones."""
    if not start.size:
        return np.zeros(0, dtype=np.int64), []
    words = _windows(bufp, 8)
    code = length.astype(np.int64)
    for j in range(-(-int(length.max()) // 8)):
        left = np.flatnonzero(length > 8 * j)
        word = words[start[left] + 8 * j] & _LOW[np.minimum(length[left] - 8 * j, 8)]
        pair = (code[left].astype(np.uint64) << np.uint64(32)) | pd.factorize(word)[0].astype(
            np.uint64)
        code[left] = pd.factorize(pair)[0] + int(code.max()) + 1
    codes = pd.factorize(code)[0].astype(np.int64)
    first = np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
    at = start[first].tolist()
    return codes, [bufp[a:a + n].tobytes() for a, n in zip(at, length[first].tolist())]


class _Hist:
    """The history items read by numpy, in record order (per item: record, key, value text)."""

    def __init__(self, bufx: bytes, sel: np.ndarray, items: Items, keep: np.ndarray) -> None:
        self.bufx = bufx
        self.bufp = np.frombuffer(bufx, dtype=np.uint8)
        self.rec = sel[items.owner[keep]]
        self.val_at, self.val_len = items.val_at[keep], items.val_len[keep]
        self.codes, uniques = key_codes(self.bufp, items.key_at[keep], items.key_len[keep])
        self.names = [u.decode("utf-8") for u in uniques]
        self.kind = np.array([0 if k == "_step" else 1 if k == "_timestamp" else
                              2 if k.startswith("_") else 3 for k in self.names],
                             dtype=np.int64)[self.codes]


def _walls(h: _Hist, nrec: int) -> np.ndarray:
    """Per record: its last ``_timestamp`` as a number (NaN where none, or not a number)."""
    wall_of = np.full(nrec, np.nan)
    ts = _last_per_record(h.rec, np.flatnonzero(h.kind == 1))
    vals, ok, odd = _read_texts(h.bufx, h.bufp, h.val_at[ts], h.val_len[ts], False, _value)
    wall_of[h.rec[ts[ok]]] = vals[ok]
    wall_of[h.rec[ts[~ok]]] = [float(w) if isinstance(w, (int, float)) else math.nan
                               for w in odd]
    return wall_of


def _metric_values(h: _Hist, fast: Fast) -> tuple[np.ndarray, np.ndarray]:
    """The numeric metric values (items not ``_``-named): (their items, values); the others
    (media, tables, text) are counted in ``fast.skipped``."""
    met = np.flatnonzero(h.kind == 3)
    vals, ok, odd = _read_texts(h.bufx, h.bufp, h.val_at[met], h.val_len[met], False, _value)
    numeric = ok.copy()
    odd_numeric = np.array([isinstance(v, (int, float)) and not isinstance(v, bool)
                            for v in odd], dtype=bool)
    numeric[~ok] = odd_numeric
    vals[np.flatnonzero(~ok)[odd_numeric]] = [float(v) for v, n in zip(odd, odd_numeric) if n]
    fast.skipped = int(np.count_nonzero(~numeric))
    return met[numeric], vals[numeric]


def _record_steps(h: _Hist, nrec: int, fast: Fast, has_field: np.ndarray, field: np.ndarray,
                  firsts: np.ndarray, file: str) -> np.ndarray:
    """Per record: its step (its last ``_step`` item, else its ``step`` field), checked for
    the records ``firsts`` (their first metric items) in record order; the first one without
    a valid step sets ``fast.error`` (later records are then left at 0)."""
    step = np.zeros(nrec, dtype=np.int64)
    known = np.zeros(nrec, dtype=bool)  # an int step in range, read at once
    python: dict[int, Any] = {}  # the other steps given by a _step item, as Python reads them
    si = _last_per_record(h.rec, np.flatnonzero(h.kind == 0))
    vals, ok, odd = _read_texts(h.bufx, h.bufp, h.val_at[si], h.val_len[si], True,
                                _step_value)
    python.update(zip(h.rec[si[~ok]].tolist(), odd))
    step[h.rec[si[ok]]] = vals[ok]
    known[h.rec[si[ok]]] = True
    has_item = np.zeros(nrec, dtype=bool)
    has_item[h.rec[si]] = True
    from_field = has_field & ~has_item
    step[from_field] = field[from_field]
    known |= from_field
    for r in [r for r, s in python.items() if s is None and has_field[r]]:
        del python[r]  # a null _step: the step field
        step[r], known[r] = field[r], True
    recs = h.rec[firsts]
    fine = known[recs] & (step[recs] >= 0) & (step[recs] <= STEP_MAX)
    for i in np.flatnonzero(~fine).tolist():
        r = int(recs[i])
        s = python.get(r, int(step[r]) if known[r] else None)
        try:
            step[r] = _checked_step(r, s, h.names[h.codes[firsts[i]]], file)
        except LogFormatError as exc:
            fast.error = (r, exc)
            step[recs[i:]] = 0
            break
    return step


def decode_fast(bufx: bytes, starts: np.ndarray, ends: np.ndarray, file: str,
                n_main: int) -> Fast:
    """Read the history records laid out as wandb writes them with numpy, and check the summary
    records (see the module's docstring); ``bufx``: the records, those at or after ``n_main``
    reassembled from fragments."""
    bufp = np.frombuffer(bufx, dtype=np.uint8)
    nrec = starts.size
    tag, body, ok = _head_framing(bufp, starts, ends)
    sel = np.flatnonzero(ok)
    summ = tag[sel] == 0x1A
    items = walk_items(bufp, body[sel], ends[sel], summ, n_main)
    odd = items.odd
    items.bad |= odd & summ  # a summary with a string that is not ASCII: protobuf checks it
    _utf8_items(bufx, bufp, items, odd & ~summ, n_main)
    ok[sel[items.bad]] = False
    fast = Fast(np.flatnonzero(~ok))
    keep = np.flatnonzero((~items.bad & ~summ)[items.owner])
    if not keep.size:
        return fast
    h = _Hist(bufx, sel, items, keep)
    has_field = np.zeros(nrec, dtype=bool)
    field = np.zeros(nrec, dtype=np.int64)
    has_field[sel[items.has_step & ~items.bad]] = True
    field[sel] = items.step
    met, fast.value = _metric_values(h, fast)
    fast.rec = h.rec[met]
    fast.key, fast.key_code = h.names, h.codes[met]
    firsts = met[np.flatnonzero(np.concatenate(([True], fast.rec[1:] != fast.rec[:-1])))]
    fast.step = _record_steps(h, nrec, fast, has_field, field, firsts, file)[fast.rec]
    fast.wall = _walls(h, nrec)[fast.rec]
    return fast
