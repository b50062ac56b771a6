"""Helpers for the report tests: find headless Chromium, dump a page's DOM, parse it.

No extra Python dependency: Chromium is driven with ``--dump-dom`` / ``--screenshot`` through
subprocess and the DOM is read with :mod:`html.parser`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
          "--no-first-run", "--disable-background-networking", "--disable-sync",
          "--hide-scrollbars", "--mute-audio")


def find_chromium() -> str | None:
    """The headless-capable Chromium on PATH (or $CHROMIUM), or None."""
    env = os.environ.get("CHROMIUM")
    if env and shutil.which(env):
        return shutil.which(env)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(chromium: str, args: list[str], profile: Path, timeout: float = 90) -> str:
    cmd = [chromium, *_FLAGS, f"--user-data-dir={profile}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HOME": str(profile)})
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def dump_dom(chromium: str, page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM of ``page`` after Chromium loaded it (serialized as HTML), and every network
    request the page made (from Chromium's net log; see :func:`page_requests`)."""
    netlog = profile.parent / f"{profile.name}-netlog.json"
    text = _run(chromium, [f"--log-net-log={netlog}", "--dump-dom", page.resolve().as_uri()],
                profile)
    return text, page_requests(netlog)


def page_requests(netlog: Path) -> list[str]:
    """URLs the page itself requested, read from a ``--log-net-log`` file.

    Chromium's own background traffic (update checks, time sync) is in the log too; a request
    made by the page is a ``URL_REQUEST_START_JOB`` whose network isolation key is the page's
    ``file://`` origin.
    """
    import json

    d = json.loads(netlog.read_text(encoding="utf-8", errors="replace"))
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    out = []
    for e in d.get("events", []):
        p = e.get("params") or {}
        if e.get("type") == start and "file://" in str(p.get("network_isolation_key", "")):
            url = str(p.get("url", ""))
            if not url.startswith(("file:", "data:")):
                out.append(url)
    return out


def screenshot(chromium: str, page: Path, out: Path, profile: Path,
               size: tuple[int, int] = (1400, 3000)) -> Path:
    """A PNG screenshot of ``page`` (the top ``size`` pixels) written to ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(chromium, [f"--screenshot={out}", f"--window-size={size[0]},{size[1]}",
                    page.resolve().as_uri()], profile)
    return out


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class DomIndex(HTMLParser):
    """Every element with its attributes, plus the text under elements that have an id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: (v or "") for k, v in attrs})
        self.elements.append(el)
        if tag not in ("meta", "br", "link", "img", "input", "hr", "use", "path", "rect",
                       "circle", "line", "polyline", "polygon", "ellipse", "stop"):
            self._open.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {k: (v or "") for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i].tag == tag:
                del self._open[i:]
                break

    def handle_data(self, data: str) -> None:
        for el in self._open:
            el.text.append(data)

    def by_class(self, cls: str, tag: str | None = None) -> list[Element]:
        return [e for e in self.elements if cls in e.classes and (tag is None or e.tag == tag)]

    def by_id(self, id_: str) -> Element | None:
        return next((e for e in self.elements if e.attrs.get("id") == id_), None)


def parse(text: str) -> DomIndex:
    d = DomIndex()
    d.feed(text)
    d.close()
    return d


def external_references(text: str) -> list[str]:
    """Every src/href/xlink:href/action/url(...) target in ``text`` that is not a fragment
    (``#id``) or inline data (``data:``): each would be a network or file request."""
    import re

    d = parse(text)
    out = []
    for e in d.elements:
        for k in ("src", "href", "xlink:href", "action", "poster", "srcset", "data"):
            v = e.attrs.get(k)
            if v is not None and not (v.startswith("#") or v.startswith("data:")):
                out.append(f"<{e.tag} {k}={v!r}>")
    for m in re.finditer(r"url\(\s*['\"]?([^)'\"]+)", text):
        if not (m.group(1).startswith("#") or m.group(1).startswith("data:")):
            out.append(f"url({m.group(1)})")
    if "@import" in text:
        out.append("@import")
    return out
