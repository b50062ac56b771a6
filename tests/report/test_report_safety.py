"""The report against hostile logs and hostile output paths (issue 10).

Strings from a log reach matplotlib and the page: a ``$`` is a dollar sign (never mathtext,
which fails to parse ``$x^$``), control characters are shown as visible escapes, markup is
escaped; the file named by a ``SOURCE_TRUNCATED`` finding is on the page; PNGs are written
atomically with the umask's permissions; a censored clock label stays inside its panel; and an
output that is an input, a directory, a symbolic link, a device, a FIFO or unwritable is refused
(exit 2) before anything is written. Every test asserts behaviour: exit codes, error codes,
files written or left unchanged, literal text present.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'grokaudit[report]'")

import grokaudit  # noqa: E402
import pandas as pd  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from grokaudit.api import audit_log  # noqa: E402
from grokaudit.cli import cli  # noqa: E402
from grokaudit.config import make_config  # noqa: E402
from grokaudit.errors import ErrorCode, OutputError  # noqa: E402
from grokaudit.figures import dashboard, figure_svg, save_png  # noqa: E402
from grokaudit.html_report import write_report  # noqa: E402
from grokaudit.schema import build_log_table  # noqa: E402
from grokaudit.text import safe  # noqa: E402
from helpers import report_builders as rb
from helpers import report_dom as dom

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_MLP = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"

TWO_CELLS = [{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
             {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0, "never_settle": 2}]

#: what must never reach the page raw: C0/C1 controls (bar tab and newline, which the page's
#: own markup may hold), DEL, bidirectional overrides and isolates
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def invoke(*args: str) -> tuple[int, str, str | None]:
    """Run the CLI: (exit code, output, the ``[CODE]`` of an ``error:`` line or None)."""
    res = CliRunner().invoke(cli, list(args))
    found = re.search(r"^error: .*\[([A-Z_]+)\]\s*$", res.output, flags=re.M)
    return res.exit_code, res.output, found.group(1) if found else None


def snapshot(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (not following links): kind, bytes or link target, mode and
    modification time, to assert that nothing changed."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what: Any = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                what = ("file", p.read_bytes(), st.st_mtime_ns)
            else:
                what = ("other", stat.S_IFMT(st.st_mode))
            out[str(p.relative_to(root))] = (what, stat.S_IMODE(st.st_mode))
    return out


def svg_texts(page: str) -> list[str]:
    """The text of every SVG ``<text>`` element of the page (the figures' labels)."""
    return ["".join(e.text) for e in dom.parse(page).elements if e.tag == "text"]


# ------------------------------------------------------------------------------------------
# a "$" in a log string is a dollar sign
# ------------------------------------------------------------------------------------------

DOLLAR_METRIC = r"emb_$\alpha$_rank"
DOLLAR_CELL = "$x^$"  # not even valid mathtext: it crashed the report before


@pytest.fixture(scope="module")
def dollar_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("dollar")
    df = rb.study(TWO_CELLS, seeds=2, arch=DOLLAR_CELL).rename(
        columns={"emb_erank": DOLLAR_METRIC})
    log = d / "dollar.parquet"
    grokaudit.write_table(df, log)
    return log


def test_dollar_signs_report_with_png_and_log_steps(dollar_log: Path) -> None:
    d = dollar_log.parent / "report"
    page, png = d / "page.html", d / "png"
    code, out, err = invoke("report", str(dollar_log), "-o", str(page), "--png", str(png),
                            "--by", "rho", "--cell", "arch", "--metric", DOLLAR_METRIC,
                            "--log-steps")
    assert code in (0, 1), out
    assert err is None
    text = page.read_text(encoding="utf-8")
    labels = svg_texts(text)
    assert DOLLAR_METRIC in labels  # the y label, as written in the log
    assert any(f"arch={DOLLAR_CELL}" in t and DOLLAR_METRIC in t for t in labels)  # suptitle
    assert "\\mathdefault" not in text  # log-step tick labels are plain numbers too
    assert "100" in labels and "1000" in labels
    pngs = list(png.iterdir())
    assert len(pngs) == 1 and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_dollar_signs_check_report(dollar_log: Path) -> None:
    d = dollar_log.parent / "check"
    d.mkdir()
    page = d / "page.html"
    code, out, err = invoke("check", str(dollar_log), "--report", str(page), "--by", "rho",
                            "--cell", "arch", "--metric", DOLLAR_METRIC)
    assert code in (0, 1), out
    assert err is None
    headings = " ".join(" ".join(e.text) for e in dom.parse(page.read_text("utf-8")).elements
                        if e.tag == "h2")
    assert DOLLAR_METRIC in headings and f"arch={DOLLAR_CELL}" in headings
    assert DOLLAR_METRIC in svg_texts(page.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------
# control characters and markup from the log
# ------------------------------------------------------------------------------------------

HOSTILE_CELL = "mlp\x1b[31m<script>alert(1)</script>\u202e"
HOSTILE_RUN = "r\x1b[2J\r<img src=x onerror=alert(1)>"
HOSTILE_METRIC = 'emb:"<b>\x1b[1m'


def test_control_characters_and_markup_from_the_log(tmp_path: Path) -> None:
    df = rb.study(TWO_CELLS, seeds=2, arch=HOSTILE_CELL)
    short = df[df["run"] == "rho1.0_s0"].head(2).assign(run=HOSTILE_RUN)  # set aside: too short
    df = pd.concat([df, short], ignore_index=True).rename(columns={"emb_erank": HOSTILE_METRIC})
    log = tmp_path / "hostile.parquet"
    grokaudit.write_table(df, log)
    page = tmp_path / "page.html"
    code, out, err = invoke("report", str(log), "-o", str(page), "--by", "rho", "--cell",
                            "arch", "--metric", HOSTILE_METRIC)
    assert code in (0, 1), out
    assert not RAW_CONTROL.search(out)  # the terminal line too
    text = page.read_text(encoding="utf-8")
    assert not RAW_CONTROL.search(text)
    low = text.lower()
    assert "<script" not in low and "<img" not in low and "<b>" not in low
    assert dom.external_references(text) == []
    d = dom.parse(text)
    shown = " ".join(" ".join(e.text) for e in d.elements if e.tag in ("h2", "p", "li", "td"))
    for s in (HOSTILE_CELL, HOSTILE_RUN, HOSTILE_METRIC):
        assert safe(s) in shown  # visible, escaped, literal
    assert safe(HOSTILE_METRIC) in svg_texts(text)  # the figure's label, the same way
    panels = d.by_class("cell-panel")
    assert panels and {e.attrs["data-quantity"] for e in panels} == {safe(HOSTILE_METRIC)}
    assert {e.attrs["data-cell"] for e in panels} == {"1.0", "2.0"}


# ------------------------------------------------------------------------------------------
# SOURCE_TRUNCATED names its file on the page
# ------------------------------------------------------------------------------------------

def test_source_truncated_names_the_file(tmp_path: Path) -> None:
    df = rb.study(TWO_CELLS, seeds=2)
    src = tmp_path / "cut\x1b[2J.csv"  # the file name is log data too
    df.to_csv(src, index=False)
    src.write_bytes(src.read_bytes().rstrip(b"\n"))  # the last line lost its newline
    page = tmp_path / "page.html"
    code, out, err = invoke("report", str(src), "--format", "table", "-o", str(page),
                            "--by", "rho")
    assert code in (0, 1), out
    text = page.read_text(encoding="utf-8")
    assert not RAW_CONTROL.search(text)
    rows = [" ".join(e.text) for e in dom.parse(text).elements if e.tag == "tr"]
    truncated = [r for r in rows if "SOURCE_TRUNCATED" in r]
    assert truncated
    assert all(safe(str(src)) in r for r in truncated)


# ------------------------------------------------------------------------------------------
# PNG files: atomic, umask permissions, nothing left behind
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_audit() -> tuple[Any, Any]:
    log = build_log_table(rb.study(TWO_CELLS, seeds=2))
    return audit_log(log, make_config(by="rho")), log


def test_png_and_page_permissions_follow_the_umask(tmp_path: Path, small_audit: Any,
                                                   umask: Any) -> None:
    result, log = small_audit
    umask(0o027)
    page = write_report(result, log, tmp_path / "page.html", tmp_path / "png")
    pngs = sorted((tmp_path / "png").iterdir())
    assert [p.name for p in pngs] == ["emb_erank.png"]  # no temporary file beside it
    for p in (page, *pngs):
        assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "png"]


class _FailingFigure:
    """A figure whose savefig writes part of the file, then fails."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.calls: list[str] = []

    def savefig(self, fname: str, **_: Any) -> None:
        self.calls.append(fname)
        Path(fname).write_bytes(b"\x89PNG partial")
        raise self.exc


@pytest.mark.parametrize("exc, raised", [(OSError(28, "No space left on device"), OutputError),
                                         (RuntimeError("renderer failed"), RuntimeError)])
def test_png_write_failure_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, exc: BaseException, raised: type[BaseException]) -> None:
    target = tmp_path / "fig.png"
    target.write_bytes(b"old")
    before = snapshot(tmp_path)
    fig = _FailingFigure(exc)
    with pytest.raises(raised) as info:
        save_png(fig, target)
    assert fig.calls and Path(fig.calls[0]).parent == tmp_path  # it wrote a temporary file
    assert Path(fig.calls[0]) != target  # not the target
    if raised is OutputError:
        assert info.value.code is ErrorCode.OUTPUT_NOT_WRITABLE  # type: ignore[attr-defined]
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------
# the censored clock label fits its panel
# ------------------------------------------------------------------------------------------

def _layout_problems(fig: Any) -> list[str]:
    """Texts that leave the figure, censored labels that leave their panel, and neighbouring
    panels that run into each other; rendered like the PNG (after the SVG)."""
    from grokaudit.figures import _rc
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    figure_svg(fig)
    bad = []
    with _rc():
        fig.set_dpi(120)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        r = canvas.get_renderer()
        ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                 for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                 for t in (tick.label1, tick.label2)}
        W, H = fig.bbox.width, fig.bbox.height
        for t in fig.findobj(Text):
            if id(t) in ticks or not t.get_visible() or not t.get_text().strip():
                continue
            b = t.get_window_extent(r)
            if b.x0 < -0.5 or b.x1 > W + 0.5 or b.y0 < -0.5 or b.y1 > H + 0.5:
                bad.append(f"outside the figure: {t.get_text()!r}")
            # the censored-median labels: "t_grok > 8000 (censored)" in a cell panel, ">8000"
            # beside an arrow in the clocks and lag panels
            if t.axes is not None and ("(censored)" in t.get_text()
                                       or t.get_text().startswith(">")):
                a = t.axes.get_window_extent(r)
                if b.x0 < a.x0 or b.x1 > a.x1 or b.y0 < a.y0 or b.y1 > a.y1:
                    bad.append(f"outside its panel: {t.get_text()!r}")
        panels = [ax for ax in fig.axes if str(ax.get_gid() or "").startswith("ga:cell-panel")]
        for left, right in zip(panels, panels[1:], strict=False):
            lb, rb_ = left.get_window_extent(r), right.get_tightbbox(r)
            if abs(lb.y0 - right.get_window_extent(r).y0) < 1 and rb_.x0 < lb.x1:
                bad.append("a panel's tick labels run into its left neighbour")
    return bad


def test_censored_labels_fit_four_narrow_panels() -> None:
    df = rb.study([{"rho": 1.0, "t_grok": 50_000, "tau": 500, "floor": 12.0, "acc_hi": 0.5},
                   {"rho": 2.0, "t_grok": 1500, "tau": 500, "floor": 12.0, "never_settle": 2},
                   {"rho": 3.0, "t_grok": 2000, "tau": 700, "floor": 13.0},
                   {"rho": 4.0, "t_grok": 2500, "tau": 900, "floor": 14.0}], seeds=2)
    log = build_log_table(df)
    result = audit_log(log, make_config(by="rho"))
    cells = {c.axis_value: c for c in result.studies[0].cells}
    assert cells[1.0].t_grok is not None and cells[1.0].t_grok.censored
    assert cells[2.0].t_compress is not None and cells[2.0].t_compress.censored
    fig = dashboard(result.studies[0], log, result)
    assert _layout_problems(fig) == []


@pytest.mark.skipif(not BUNDLED_MLP.exists(), reason="bundled MLP log not present")
def test_censored_labels_fit_the_bundled_mlp_sweep() -> None:
    """The case of the issue: ``--by wd --metric emb_pr --cell arch``; wd=0.03 never groks,
    and its label ``t_grok > 8000 (censored)`` was cut by the next panel."""
    from grokaudit.loader import read_any

    log = build_log_table(read_any(BUNDLED_MLP), path=str(BUNDLED_MLP))
    result = audit_log(log, make_config(by="wd", metrics=["emb_pr"], cell=["arch"]))
    assert any(c.t_grok is not None and c.t_grok.censored
               for s in result.studies for c in s.cells)
    for s in result.studies:
        assert _layout_problems(dashboard(s, log, result)) == []


# ------------------------------------------------------------------------------------------
# outputs that must be refused: exit 2, nothing written, nothing changed
# ------------------------------------------------------------------------------------------

@pytest.fixture
def work(tmp_path: Path) -> Path:
    grokaudit.write_table(rb.study(TWO_CELLS, seeds=2), tmp_path / "X.parquet")
    (tmp_path / "other.html").write_text("keep me", encoding="utf-8")
    return tmp_path


def _refused(work: Path, args: list[str], expected: str | tuple[str, ...]) -> None:
    before = snapshot(work)
    code, out, err = invoke(*args)
    assert code == 2, out
    assert err in ((expected,) if isinstance(expected, str) else expected), out
    assert snapshot(work) == before  # nothing written, nothing changed


def _commands(log: Path, target: str) -> list[list[str]]:
    return [["report", str(log), "--by", "rho", "-o", target],
            ["check", str(log), "--by", "rho", "--report", target]]


@pytest.mark.parametrize("cmd", [0, 1], ids=["report", "check"])
def test_output_is_the_input(work: Path, cmd: int) -> None:
    log = work / "X.parquet"
    _refused(work, _commands(log, str(log))[cmd], "OUTPUT_IS_INPUT")
    os.link(log, work / "X.html")  # the same file under an .html name
    _refused(work, _commands(log, str(work / "X.html"))[cmd], "OUTPUT_IS_INPUT")


@pytest.mark.parametrize("cmd", [0, 1], ids=["report", "check"])
def test_output_is_a_symbolic_link(work: Path, cmd: int) -> None:
    log = work / "X.parquet"
    (work / "to-input.html").symlink_to(log)
    (work / "to-other.html").symlink_to(work / "other.html")
    (work / "dangling.html").symlink_to(work / "nowhere.html")
    for name in ("to-input.html", "to-other.html", "dangling.html"):
        _refused(work, _commands(log, str(work / name))[cmd], "OUTPUT_NOT_REGULAR")


@pytest.mark.parametrize("cmd", [0, 1], ids=["report", "check"])
def test_output_is_a_directory_fifo_or_device(work: Path, cmd: int) -> None:
    log = work / "X.parquet"
    (work / "out.html").mkdir()
    _refused(work, _commands(log, str(work / "out.html"))[cmd], "OUTPUT_IS_DIRECTORY")
    _refused(work, _commands(log, str(work))[cmd], ("OUTPUT_EXTENSION", "OUTPUT_IS_DIRECTORY"))
    os.mkfifo(work / "pipe.html")
    _refused(work, _commands(log, str(work / "pipe.html"))[cmd], "OUTPUT_NOT_REGULAR")
    devnull = os.stat("/dev/null")
    _refused(work, _commands(log, "/dev/null")[cmd], ("OUTPUT_EXTENSION", "OUTPUT_NOT_REGULAR"))
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert os.stat("/dev/null").st_ino == devnull.st_ino


@pytest.mark.parametrize("cmd", [0, 1], ids=["report", "check"])
def test_output_cannot_be_written(work: Path, cmd: int) -> None:
    log = work / "X.parquet"
    (work / "a-file").write_text("x", encoding="utf-8")
    _refused(work, _commands(log, str(work / "a-file" / "r.html"))[cmd], "OUTPUT_NOT_WRITABLE")
    _refused(work, _commands(log, "")[cmd], "OUTPUT_NOT_WRITABLE")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root may write into a read-only folder")
@pytest.mark.parametrize("cmd", [0, 1], ids=["report", "check"])
def test_output_in_a_read_only_folder(work: Path, cmd: int) -> None:
    ro = work / "ro"
    ro.mkdir()
    (ro / "r.html").write_text("old", encoding="utf-8")
    log = work / "X.parquet"
    ro.chmod(0o555)
    try:
        _refused(work, _commands(log, str(ro / "new.html"))[cmd], "OUTPUT_NOT_WRITABLE")
        (ro / "r.html").chmod(0o444)
        _refused(work, _commands(log, str(ro / "r.html"))[cmd], "OUTPUT_NOT_WRITABLE")
    finally:
        ro.chmod(0o755)


def test_check_report_and_json_on_one_file(work: Path) -> None:
    log = work / "X.parquet"
    # --json writes .json, --report .html: one name for both fails on its extension
    _refused(work, ["check", str(log), "--by", "rho", "--json", str(work / "r.html"),
                    "--report", str(work / "r.html")], "OUTPUT_EXTENSION")


def test_png_folder_refused_before_anything_is_written(work: Path) -> None:
    log = work / "X.parquet"
    page = str(work / "page.html")
    (work / "a-file").write_text("x", encoding="utf-8")
    _refused(work, ["report", str(log), "--by", "rho", "-o", page, "--png",
                    str(work / "a-file")], "OUTPUT_NOT_REGULAR")
    (work / "link-dir").symlink_to(work, target_is_directory=True)
    _refused(work, ["report", str(log), "--by", "rho", "-o", page, "--png",
                    str(work / "link-dir")], "OUTPUT_NOT_REGULAR")


def test_png_file_refused_before_anything_is_written(work: Path) -> None:
    """The PNG names are known only after the audit; each is checked like any output before
    the page or any figure is written."""
    log = work / "X.parquet"
    png = work / "png"
    png.mkdir()
    (png / "emb_erank.png").symlink_to(work / "other.html")
    _refused(work, ["report", str(log), "--by", "rho", "-o", str(work / "page.html"),
                    "--png", str(png)], "OUTPUT_NOT_REGULAR")
    (png / "emb_erank.png").unlink()
    (png / "emb_erank.png").mkdir()
    _refused(work, ["report", str(log), "--by", "rho", "-o", str(work / "page.html"),
                    "--png", str(png)], "OUTPUT_IS_DIRECTORY")


def test_studies_whose_names_differ_only_in_non_ascii_get_their_own_ids_and_pngs(
        tmp_path: Path) -> None:
    a = rb.study(TWO_CELLS, seeds=2, arch="α")
    b = rb.study(TWO_CELLS, seeds=2, arch="β")
    b["run"] = "b_" + b["run"]
    log = build_log_table(pd.concat([a, b], ignore_index=True))
    result = audit_log(log, make_config(by="rho", cell=["arch"]))
    assert len(result.studies) == 2
    page = write_report(result, log, tmp_path / "page.html", tmp_path / "png")
    d = dom.parse(page.read_text(encoding="utf-8"))
    sections = [e.attrs["id"] for e in d.elements if e.tag == "section" and "study" in e.classes]
    assert len(sections) == len(set(sections)) == 2
    links = {e.attrs["href"] for e in d.elements if e.tag == "a"}
    assert {f"#{s}" for s in sections} <= links
    assert len(list((tmp_path / "png").iterdir())) == 2  # one PNG each, none overwritten
