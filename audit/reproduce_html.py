"""The HTML page of ``grokaudit reproduce --html``: per seed, one figure per headline with the
paper's number (its interval, or its point) beside ours (point and interval, an unknown end
drawn as an open arrow), the null value as a dotted line, and the verdict in the title.
Self-contained: inline SVG, no network, no JavaScript. Needs matplotlib (``grokaudit[report]``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .figures import OKABE_ITO, figure_svg, require_matplotlib, svg_for_html
from .outputs import Output
from .reproduce import ReproduceResult, Row
from .reproduce_text import ours_text


def _limits(r: Row) -> tuple[float, float]:
    vals = [v for v in (r.paper.value, r.paper.low, r.paper.high, r.ours.value, r.ours.low,
                        r.ours.high, r.null) if v is not None]
    if not vals:
        return (0.0, 1.0)
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * 0.15 or max(abs(hi), 1.0) * 0.15
    return lo - pad, hi + pad


def headline_figure(r: Row) -> Any:
    """One headline: the paper (top row) and ours (bottom row) on one value axis."""
    mpl = require_matplotlib()
    import matplotlib.pyplot as plt

    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "grokaudit"}):
        fig, ax = plt.subplots(figsize=(6.0, 1.5))
        lo, hi = _limits(r)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.6, 1.6)
        ax.set_yticks([0, 1], ["ours", "paper"])
        if r.null is not None:
            ax.axvline(r.null, color=OKABE_ITO["black"], ls=":", lw=0.8)
        p = r.paper
        if p.low is not None and p.high is not None:
            ax.plot([p.low, p.high], [1, 1], color=OKABE_ITO["black"], lw=2.5)
        if p.value is not None:
            ax.plot([p.value], [1], "o", color=OKABE_ITO["black"])
        o = r.ours
        colour = OKABE_ITO["blue"]
        if o.low is not None or o.high is not None:
            a = o.low if o.low is not None else lo
            b = o.high if o.high is not None else hi
            ax.plot([a, b], [0, 0], color=colour, lw=2.5)
            if o.low is None:
                ax.annotate("", (lo, 0), (lo + (hi - lo) * 0.08, 0),
                            arrowprops={"arrowstyle": "->", "color": colour})
            if o.high is None:
                ax.annotate("", (hi, 0), (hi - (hi - lo) * 0.08, 0),
                            arrowprops={"arrowstyle": "->", "color": colour})
        if o.value is not None:
            ax.plot([o.value], [0], "o", color=colour)
        if not o.defined:
            ax.text((lo + hi) / 2, 0, "no value: " + ", ".join(o.codes), ha="center",
                    va="center", fontsize=8, color=OKABE_ITO["vermillion"])
        ax.set_title(f"{r.key}: {r.verdict}", fontsize=9, loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        fig.tight_layout()
        return fig


def reproduce_html(result: ReproduceResult) -> str:
    import matplotlib.pyplot as plt

    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<title>grokaudit reproduce</title><style>body{font-family:sans-serif;"
             "max-width:60em;margin:auto}code{font-size:85%}.v{font-weight:bold}</style>"
             "</head><body><h1>The seed papers' headlines, regenerated and audited</h1>"]
    counts = ", ".join(f"{n} {v}" for v, n in result.counts().items() if n)
    parts.append(f"<p>{html.escape(counts)} · grokaudit {html.escape(result.version)}</p>")
    for s in result.seeds:
        parts.append(f"<h2>Seed {html.escape(s.seed)}: {html.escape(s.title)}</h2>"
                     f"<p>{html.escape(s.scale)} scale, {html.escape(s.source)} logs. "
                     f"{html.escape(s.scale_note)}</p>")
        for i, r in enumerate(x for x in result.rows if x.seed == s.seed):
            fig = headline_figure(r)
            svg = svg_for_html(figure_svg(fig), f"s{s.seed}-{i}")
            plt.close(fig)
            parts.append(
                f"<h3>{html.escape(r.key)}</h3><p>{html.escape(r.claim)}</p>{svg}"
                f"<p>paper {html.escape(r.paper.text)} · ours {html.escape(ours_text(r.ours))}"
                f" → <span class='v'>{html.escape(r.verdict)}</span>"
                + (f" ({html.escape(', '.join(r.reasons))})" if r.reasons else "")
                + f"<br>{html.escape(r.ours.how)}<br><code>{html.escape(r.command)}</code></p>")
        for cmd in s.train_commands:
            parts.append(f"<p>train: <code>{html.escape(cmd)}</code></p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_reproduce_html(result: ReproduceResult, out: Output | str | Path) -> None:
    """Write the page to a checked output (or a path), atomically."""
    text = reproduce_html(result)
    if isinstance(out, Output):
        out.write_text(text)
    else:
        Path(out).write_text(text, encoding="utf-8")
