"""Write the synthetic logs of the worked examples in docs/claims.md, and (``--docs``) rewrite
every example output block of docs/claims.md from real output.

    python docs/examples/make_claims_examples.py OUT_DIR
    python docs/examples/make_claims_examples.py OUT_DIR --docs docs/claims.md

Each synthetic log is a canonical table written by ``grokaudit.claims.simulate.make_log`` from
known answers (stated below), so every number the claim audits print can be checked against the
truth. They stand in for trainer runs where the bundled trainer cannot produce the design on a
small CPU budget (see docs/claims.md, "Worked examples"). The trainer logs the docs also use are
kept beside their configs in docs/examples (``claims_*.parquet``).

With ``--docs``, every block of docs/claims.md between ``<!-- claims-example: NAME -->`` and
``<!-- /claims-example -->`` is replaced by the output of the command :data:`EXAMPLES` names for
it, run through the CLI in OUT_DIR (synthetic logs) or docs/examples (trainer logs).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from grokaudit.claims.simulate import lognormal_times, make_log, weibull_times

HERE = Path(__file__).resolve().parent


def onset(rng: np.random.Generator) -> pd.DataFrame:
    """log t_grok = log 40 + 0.8·log H − 0.5·log lr + 0.4·W (Weibull AFT), budget 3000 steps:
    the slow cells are partly censored."""
    H = np.repeat([64, 128, 256, 512], 12)
    lr = np.tile(np.repeat([1.0, 3.0], 6), 4)
    s = np.tile(np.arange(6), 8)
    T = weibull_times(np.log(40) + 0.8 * np.log(H) - 0.5 * np.log(lr), 0.4, rng)
    T = np.where(T > 3000, np.inf, np.ceil(T))
    runs = pd.DataFrame({"run": [f"H{h}_lr{r:g}_s{x}" for h, x, r in zip(H, s, lr)], "H": H,
                         "lr": lr, "seed": s, "t_grok": T, "budget": 3000})
    return make_log(runs, every=50, ramp=400)


def onset_lognormal(rng: np.random.Generator) -> pd.DataFrame:
    """log t_grok = log 300 + 1.0·log H + 0.4·Z (a log-normal AFT), 5 sizes × 20 seeds, every
    run grokked within its budget: nothing is censored."""
    H = np.repeat([1, 2, 4, 8, 16], 20)
    s = np.tile(np.arange(20), 5)
    T = lognormal_times(np.log(300) + np.log(H), 0.4, np.random.default_rng(0))
    runs = pd.DataFrame({"run": [f"H{h}_s{x}" for h, x in zip(H, s)], "H": H, "seed": s,
                         "t_grok": np.ceil(T), "t_mem": 100, "budget": int(T.max()) + 200})
    return make_log(runs, every=20)


def dose(rng: np.random.Generator) -> pd.DataFrame:
    """ln t_grok = ln 500 + 1.2·(rho/tau − 1) + noise; a mediation design at rho = 1.15 over tau."""
    rows = []
    cells = [(r, 1.0) for r in (1.0, 1.15, 1.3, 1.45, 1.6, 1.75)] + \
        [(1.15, t) for t in (1.05, 1.1, 1.2, 1.25)]
    for rho, tau in cells:
        for s in range(6):
            T = np.exp(np.log(500) + 1.2 * (rho / tau - 1) + rng.normal(0, 0.04))
            rows.append({"run": f"rho{rho:g}_tau{tau:g}_s{s}", "rho": rho, "tau": tau,
                         "seed": s, "t_grok": float(np.ceil(T)), "budget": 3000})
    return make_log(pd.DataFrame(rows), every=5, series={
        "logit_scale": lambda r, st: np.full(st.size, 10 * r["rho"] / r["tau"])})


def dose_diverging(rng: np.random.Generator) -> pd.DataFrame:
    """ln t_grok = ln 300 + 2·rho up to rho = 2, then nothing groks at rho = 2.5 within the
    100 000-step budget (the response diverges near rho ≈ 2.2)."""
    rows = []
    for x in [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5]:
        for s in range(5):
            t = np.inf if x > 2.2 else round(300 * np.exp(2 * x + rng.normal(0, 0.03)))
            rows.append({"run": f"rho{x:g}_s{s}", "rho": x, "seed": s, "t_grok": t,
                         "budget": 100_000})
    return make_log(pd.DataFrame(rows), every=100)


def transition(rng: np.random.Generator) -> pd.DataFrame:
    """P(grok) = logistic(4·(ln wd − ln 0.5)); above λ_c = 0.5, t_grok = 400·(wd − 0.5)^−0.5."""
    wd = np.repeat([0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0], 8)
    p = 1 / (1 + np.exp(-4 * (np.log(wd) - np.log(0.5))))
    g = rng.random(wd.size) < p
    with np.errstate(divide="ignore"):
        T = 400 * np.abs(wd - 0.5) ** -0.5 * np.exp(rng.normal(0, 0.1, wd.size))
    T = np.where(g, np.minimum(np.ceil(T), 7000), np.inf)
    runs = pd.DataFrame({"run": [f"wd{w:g}_s{i % 8}" for i, w in enumerate(wd)], "wd": wd,
                         "seed": np.tile(np.arange(8), 8), "t_grok": T, "budget": 8000})
    return make_log(runs, every=50)


def transition_separated(rng: np.random.Generator) -> pd.DataFrame:
    """No run groks at wd = 0.1, every run does from wd = 0.3 on: the boundary lies somewhere
    in (0.1, 0.3) and nothing in the data says where."""
    wd = np.repeat([0.1, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0], 6)
    T = np.where(wd > 0.2, np.ceil(500 / np.sqrt(wd) * np.exp(rng.normal(0, 0.05, wd.size))),
                 np.inf)
    runs = pd.DataFrame({"run": [f"wd{w:g}_s{i % 6}" for i, w in enumerate(wd)], "wd": wd,
                         "seed": np.tile(np.arange(6), 8), "t_grok": T, "budget": 8000})
    return make_log(runs, every=10)


def precursor(rng: np.random.Generator) -> pd.DataFrame:
    """attn_cv peaks 500 steps before grokking; weight_norm falls smoothly; 2 runs never grok."""
    tg = np.ceil(rng.uniform(2500, 4500, 10))
    tg[:2] = np.inf
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(10)], "seed": np.arange(10),
                         "t_grok": tg, "t_mem": 400, "budget": 6000})

    def cv(r: pd.Series, s: np.ndarray) -> np.ndarray:
        c = r["t_grok"] - 500 if np.isfinite(r["t_grok"]) else 3000
        noise = np.random.default_rng(int(r["seed"])).normal(0, 0.02, s.size)
        return 1 + np.exp(-(((s - c) / 250) ** 2)) + noise

    return make_log(runs, every=50, series={
        "attn_cv": cv, "weight_norm": lambda r, s: 30 * np.exp(-s / 4000) + 5})


def compare(rng: np.random.Generator) -> pd.DataFrame:
    """Five paired seeds: cv_adamw groks ~1500 steps sooner; one baseline run never groks."""
    base = np.ceil(rng.uniform(3000, 4000, 5))
    base[2] = np.inf
    new = np.ceil(rng.uniform(1500, 2500, 5))
    runs = pd.DataFrame({"run": [f"adamw_s{i}" for i in range(5)] + [f"cv_s{i}" for i in range(5)],
                         "method": ["adamw"] * 5 + ["cv_adamw"] * 5,
                         "seed": list(range(5)) * 2, "t_grok": np.r_[base, new],
                         "budget": 4500})
    return make_log(runs, every=50)


LOGS = {"onset": onset, "onset_lognormal": onset_lognormal, "dose": dose,
        "dose_diverging": dose_diverging, "transition": transition,
        "transition_separated": transition_separated, "precursor": precursor,
        "compare": compare}

#: Block name in docs/claims.md → (where the log is: "synthetic" or "trainer", the command
#: line after ``grokaudit``).
EXAMPLES: dict[str, tuple[str, str]] = {
    "wd-onset": ("trainer", "onset claims_mlp_wd_p23.parquet --by wd --thresholds 0.9,0.95"),
    "wd-transition": ("trainer", "transition claims_mlp_wd_p23.parquet --by wd"),
    "wd-dose": ("trainer", "dose claims_mlp_wd_p23.parquet --by wd"),
    "tf-compare": ("trainer", "compare claims_tf_cvadamw_p23.parquet --by optimizer --pair seed"),
    "tf-precursor": ("trainer", "precursor claims_tf_cvadamw_p23.parquet --signal attn_cv"),
    "onset": ("synthetic", "onset onset.parquet --by H,lr --thresholds 0.9,0.95,0.99"),
    "onset-lognormal": ("synthetic", "onset onset_lognormal.parquet --by H"),
    "dose": ("synthetic", "dose dose.parquet --by rho --fit-range 1,1.75 --mediator "
                          "logit_scale --baseline rho=1,tau=1 --raised rho=1.15,tau=1 "
                          "--sweep tau"),
    "dose-diverging": ("synthetic", "dose dose_diverging.parquet --by rho"),
    "transition": ("synthetic", "transition transition.parquet --by wd"),
    "transition-separated": ("synthetic", "transition transition_separated.parquet --by wd"),
    "precursor": ("synthetic", "precursor precursor.parquet --signal attn_cv"),
    "compare": ("synthetic", "compare compare.parquet --by method --pair seed "
                             "--arms adamw,cv_adamw"),
}


def write_logs(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in LOGS.items():
        df = fn(np.random.default_rng(2026))
        df.to_parquet(out / f"{name}.parquet", index=False)
        print(f"wrote {out / f'{name}.parquet'} ({df['run'].nunique()} runs, {len(df)} rows)")


def run_example(cwd: Path, line: str) -> str:
    """``$ grokaudit LINE`` and its output (the last line states the exit code), run through
    the CLI in ``cwd``."""
    import os
    import shlex

    from click.testing import CliRunner
    from grokaudit.cli import cli

    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(cli, shlex.split(line))
    finally:
        os.chdir(old)
    shown = "\n    ".join(_wrap(line))
    out = (res.stdout + res.stderr).rstrip("\n")
    return f"$ grokaudit {shown}\n{out}"


def _wrap(line: str, width: int = 88) -> list[str]:
    """Split a long command line into shell continuation lines."""
    words, out, cur = line.split(" "), [], ""
    for w in words:
        if cur and len(cur) + len(w) + 14 > width:
            out.append(cur + " \\")
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    return out + [cur]


def write_docs(out: Path, doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for name, (where, line) in EXAMPLES.items():
        cwd = HERE if where == "trainer" else out
        block = run_example(cwd, line)
        pat = re.compile(rf"(<!-- claims-example: {re.escape(name)} -->\n)```text\n.*?\n```\n"
                         rf"(<!-- /claims-example -->)", re.S)
        if not pat.search(text):
            raise SystemExit(f"{doc}: no block <!-- claims-example: {name} -->")
        text = pat.sub(lambda m, b=block: f"{m.group(1)}```text\n{b}\n```\n{m.group(2)}",
                       text)
        print(f"ran {name}: grokaudit {line}")
    doc.write_text(text, encoding="utf-8")
    print(f"wrote {doc}")


def main(argv: list[str]) -> None:
    out = Path(argv[0] if argv else "claims_examples").resolve()
    write_logs(out)
    if "--docs" in argv:
        write_docs(out, Path(argv[argv.index("--docs") + 1]).resolve())


if __name__ == "__main__":
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(__doc__)
        sys.exit(0)
    main(sys.argv[1:])
