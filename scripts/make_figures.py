"""Make the figures in docs/ and the README from the bundled reference runs.

    python scripts/make_figures.py            # every reference_runs/data/*.parquet
    python scripts/make_figures.py --bench    # also time report generation (docs/performance.md)

For each bundled log ``reference_runs/data/NAME.parquet`` this runs the real command,

    grokaudit report reference_runs/data/NAME.parquet -o docs/figures/NAME/report.html \\
        --png docs/figures/NAME [--cell COL]

so ``docs/figures/NAME/`` holds the self-contained report and one PNG per study and metric
(``METRIC.png``, or ``COL-VALUE-METRIC.png`` per study), and, when headless Chromium is
installed, ``report-screenshot.png`` (the top of the page). Studies are split by every text
condition that varies across runs (``arch``, ``task``…), as ``docs/report.md`` suggests.

``--bench`` times each stage for each bundled log (median of ``--repeat`` runs, in one process,
matplotlib already imported) and prints them as a Markdown table (to see where a report's time
goes); ``benchmarks/bench_report.py`` times the whole ``report`` command against ``check``
(the table of ``docs/performance.md``'s ``## Report`` section). Needs the extra: ``pip install 'grokaudit[report]'``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grokaudit.config import AuditConfig
    from grokaudit.schema import LogTable

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "reference_runs" / "data"
OUT = ROOT / "docs" / "figures"


def audit_args(log: Path) -> list[str]:
    """The audit options a bundled log is meant to be read with.

    Taken from the ``Audit: grokaudit check PATH OPTIONS`` line of its sweep's description (in
    ``NAME.MANIFEST.toml`` beside the log, else ``reference_runs/configs/NAME.toml``); without
    one, ``--cell`` for every text condition that varies across runs (the axis is inferred).
    """
    for desc in _descriptions(log):
        for line in desc.splitlines():
            line = line.strip()
            if line.startswith("Audit:") and " check " in line:
                words = shlex.split(line.split(" check ", 1)[1])
                return words[1:]  # drop the log path
    return cell_args(log)


def _descriptions(log: Path) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    out = []
    manifest = log.with_name(log.stem + ".MANIFEST.toml")
    config = ROOT / "reference_runs" / "configs" / f"{log.stem}.toml"
    for path, key in ((manifest, ("sweep", "description")), (config, ("description",))):
        if not path.exists():
            continue
        try:
            data: object = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for k in key:
            data = data.get(k) if isinstance(data, dict) else None
        if isinstance(data, str):
            out.append(data)
    return out


def cell_args(log: Path) -> list[str]:
    """``--cell`` for every text condition that varies across the log's runs."""
    from grokaudit.schema import read_arrow

    runs = read_arrow(log).to_pandas().groupby("run").first()
    cols = [c for c in runs.columns if c != "step" and runs[c].dtype == object
            and runs[c].nunique() > 1]
    return ["--cell", ",".join(cols)] if cols else []


def make(log: Path, out: Path) -> Path:
    """Run ``grokaudit report`` on ``log``; returns the HTML path. Exit 0 or 1 both count as
    written (1 = the audit has critical findings, which the report shows)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        if old.name != "report-screenshot.png":
            old.unlink()
    page = out / "report.html"
    cmd = [sys.executable, "-c", "from grokaudit.cli import main; main()", "report",
           str(log.relative_to(ROOT)), "-o", str(page.relative_to(ROOT)),
           "--png", str(out.relative_to(ROOT)), *audit_args(log)]
    print("$ grokaudit " + " ".join(cmd[3:]))
    proc = subprocess.run(cmd, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"grokaudit report failed on {log} (exit {proc.returncode})")
    return page


def screenshot(page: Path, out: Path) -> Path | None:
    """The top of the page as a PNG, with headless Chromium when it is installed."""
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                     if shutil.which(n)), None)
    if chromium is None:
        print("  (no chromium: screenshot skipped)")
        return None
    profile = out.parent / ".chromium-profile"
    try:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={profile}",
                        "--window-size=1400,1800", f"--screenshot={out}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return out


def config_for(args: list[str]) -> AuditConfig:
    """The AuditConfig that ``grokaudit report LOG ARGS`` builds: ``ARGS`` parsed by the shared
    audit options (:func:`grokaudit.options.audit_options`, as ``report`` and ``check`` stack
    them) and assembled by the one config path (:func:`grokaudit.config.build_config`)."""
    import click
    from grokaudit.config import build_config
    from grokaudit.options import audit_options, audit_overrides

    @click.command()
    @audit_options
    def parse(**_: object) -> None:
        """Only parses."""

    params = dict(parse.make_context("report", list(args)).params)
    return build_config(params.pop("profile"), params.pop("config_file"),
                        audit_overrides(params))


def read_log(log: Path, cfg: AuditConfig) -> LogTable:
    """The validated log, read the way ``grokaudit report`` reads it."""
    from grokaudit.api import validated_log
    from grokaudit.loader import read_any

    return validated_log(read_any(log), cfg, str(log))


def bench(logs: list[Path], repeat: int) -> str:
    """Time each stage of the report per bundled log, in this process; the Markdown table.

    Stages: read + audit; the figures drawn and serialized to page-ready SVG in one process
    (``--jobs 1``) and in worker processes (the default: one per CPU, the pool started and
    stopped inside the timing); the HTML page from those SVGs; what ``--png`` adds (the PNG
    of each figure, from the same drawing, one process). The whole command, process start
    included, against ``check``: ``benchmarks/bench_report.py``.
    """
    import matplotlib
    from grokaudit import figures
    from grokaudit.api import audit_log
    from grokaudit.figures import warm_up
    from grokaudit.html_report import default_jobs, figure_outputs, render_html

    warm_up()  # matplotlib imported and its fonts loaded: not part of any stage
    rows = []
    for log in logs:
        cfg = config_for(audit_args(log))
        times: dict[str, list[float]] = {k: [] for k in ("audit", "one", "many", "html", "png")}
        for _ in range(repeat):
            t0 = time.perf_counter()
            lt = read_log(log, cfg)
            result = audit_log(lt, cfg)
            figures._REUSED.clear()  # each stage starts like a command: no figure to reuse
            t1 = time.perf_counter()
            drawn = figure_outputs(result, lt, jobs=1)
            t2 = time.perf_counter()
            figures._REUSED.clear()
            figure_outputs(result, lt)
            t3 = time.perf_counter()
            page = render_html(result, lt, svgs=[svg for svg, _ in drawn])
            t4 = time.perf_counter()
            figures._REUSED.clear()
            figure_outputs(result, lt, jobs=1, png=True)
            t5 = time.perf_counter()
            times["audit"].append(t1 - t0)
            times["one"].append(t2 - t1)
            times["many"].append(t3 - t2)
            times["html"].append(t4 - t3)
            times["png"].append(t5 - t4 - (t2 - t1))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append(
            f"| `{log.name}` | {lt.n_runs} runs, {lt.step.size} rows | {len(result.studies)} | "
            f"{med['audit']:.2f} | {med['one']:.2f} | {med['many']:.2f} | {med['html']:.2f} | "
            f"{med['png']:.2f} | {len(page.encode()) / 1e6:.2f} MB |")
    jobs = default_jobs()
    head = ("| log | size | figures | read + audit (s) | figures, 1 process (s) | "
            f"figures, {jobs} processes (s) | HTML page (s) | `--png` extra (s) | page size |\n"
            "|---|---|---|---|---|---|---|---|---|")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"\nmatplotlib {matplotlib.__version__}, Python {sys.version.split()[0]}, {jobs} "
            f"CPUs, load average {load:.2f}; median of {repeat} runs in one process, matplotlib "
            "already imported. A figure is drawn and serialized once (SVG, and PNG with "
            "`--png`); several studies are drawn in parallel by worker processes (one study: in "
            "this process).")
    return head + "\n" + "\n".join(rows) + "\n" + note


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="*", type=Path, help="bundled logs (default: all)")
    ap.add_argument("--bench", action="store_true", help="time report generation")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-figures", action="store_true", help="only --bench")
    a = ap.parse_args(argv)
    logs = [p.resolve() for p in a.logs] or sorted(DATA.glob("*.parquet"))
    if not logs:
        raise SystemExit(f"no bundled reference runs in {DATA} (run `grokaudit train` first)")
    if not a.no_figures:
        for log in logs:
            out = OUT / log.stem
            page = make(log, out)
            screenshot(page, out / "report-screenshot.png")
            print(f"  wrote {out.relative_to(ROOT)}/: "
                  + ", ".join(sorted(p.name for p in out.iterdir())))
    if a.bench:
        print(bench(logs, a.repeat))


if __name__ == "__main__":
    main()
