"""Figures drawn once per study, in worker processes, on a reused figure: the page is the same
byte for byte whichever way it was drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'grokaudit[report]'")

import pandas as pd  # noqa: E402
from grokaudit.api import audit_log  # noqa: E402
from grokaudit.config import make_config  # noqa: E402
from grokaudit.schema import build_log_table  # noqa: E402
from helpers import report_builders as rb


@pytest.fixture(scope="module")
def four_studies() -> tuple[Any, Any]:
    """Four studies of one shape (five cells along rho: one figure reused for all), gated and
    censored cells in different places, metric values of two sizes."""
    censored = [{"rho": 0.5, "t_grok": 1200, "tau": 400, "floor": 12.0, "never_settle": 2},
                {"rho": 1.0, "t_grok": 1600, "tau": 700, "floor": 13.0},
                {"rho": 1.5, "t_grok": 50_000, "tau": 1000, "floor": 14.0, "acc_hi": 0.5},
                {"rho": 2.0, "t_grok": 3000, "tau": 1300, "floor": 15.0},
                {"rho": 3.0, "t_grok": 4000, "tau": 600, "floor": 16.0}]
    frames = []
    for arch, make in (("mlp", rb.healthy_study), ("tf", lambda **c: rb.study(censored, **c)),
                       ("cnn", rb.healthy_study), ("rnn", lambda **c: rb.study(censored, **c))):
        df = make(arch=arch)
        df["run"] = arch + "_" + df["run"]
        if arch in ("cnn", "rnn"):  # other values: other ticks, other tick-label widths
            df["emb_erank"] = df["emb_erank"] * 1000.0
        frames.append(df)
    log = build_log_table(pd.concat(frames, ignore_index=True))
    result = audit_log(log, make_config(by="rho", cell=["arch"]))
    assert len(result.studies) == 4
    assert {len(s.cells) for s in result.studies} == {5}
    gated = [tuple(c.passes for c in s.cells) for s in result.studies]
    assert len(set(gated)) > 1  # a panel gated in one study passes in another
    return log, result


@pytest.mark.parametrize("log_steps", [False, True])
def test_a_reused_figure_draws_what_a_new_one_draws(four_studies: tuple[Any, Any],
                                                    log_steps: bool) -> None:
    from grokaudit.figures import (
        dashboard_data,
        draw_dashboard,
        figure_svg,
        render_dashboard,
        svg_for_html,
    )

    log, result = four_studies
    data = [dashboard_data(s, log, result, log_steps=log_steps) for s in result.studies]
    new = [svg_for_html(figure_svg(draw_dashboard(d, log_steps=log_steps)), "f") for d in data]
    assert len(set(new)) == len(new)
    for k in [0, 1, 2, 3, 3, 1, 0, 2]:  # every study after every other kind
        assert render_dashboard(data[k], "f", log_steps=log_steps)[0] == new[k], k


def test_parallel_and_sequential_pages_are_identical(four_studies: tuple[Any, Any],
                                                     tmp_path: Path) -> None:
    from grokaudit.html_report import _study_key, write_report

    log, result = four_studies
    lines: list[str] = []
    one = write_report(result, log, tmp_path / "one" / "r.html", tmp_path / "one", jobs=1)
    two = write_report(result, log, tmp_path / "two" / "r.html", tmp_path / "two", jobs=2,
                       progress=lines.append)
    assert one.read_bytes() == two.read_bytes()
    pngs = sorted(p.name for p in (tmp_path / "one").glob("*.png"))
    assert len(pngs) == 4
    for name in pngs:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert sorted(ln for ln in lines if ln.startswith("figure")) == sorted(
        f"figure {k}/4 ({_study_key(s)})" for k, s in enumerate(result.studies, start=1))
    assert sum(ln.startswith("PNG") for ln in lines) == 4


def test_without_worker_processes_the_figures_are_drawn_here(
        four_studies: tuple[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no process can be started (a sandbox without semaphores), the report is still
    written, the same, by this process."""
    import concurrent.futures

    from grokaudit.html_report import FigureWorkers, render_html, write_report

    def refuse(*_a: Any, **_k: Any) -> None:
        raise OSError("no semaphores here")

    log, result = four_studies
    expected = render_html(result, log, jobs=1)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    with FigureWorkers(2) as workers:
        assert workers.pool is None
        out = write_report(result, log, tmp_path / "r.html", workers=workers)
    assert out.read_text(encoding="utf-8") == expected
