"""docs/logging.md is real: every Python block runs, and every `grokaudit check` line, run as
written on what the scripts logged, reads it back (exit 0 or 1, never 2).

The sweep loops run as written except for the number of steps (a few instead of 8000) and of
seeds (one instead of two: two runs at once, not four); the full sweep and the output quoted in
the guide were run by hand.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "logging.md"
STEPS = 100  # per run, instead of 8000: three logged points (0, 50, 100)
SEEDS = "0"  # per weight decay, instead of "0 1": two runs at once instead of four


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M)


def scripts() -> dict[str, str]:
    """The Python blocks that start with their file name: ``# train.py — …``."""
    out = {}
    for b in blocks("python"):
        m = re.match(r"# (\w+\.py) ", b)
        if m:
            out[m.group(1)] = b
    return out


def commands(script: str) -> tuple[list[str], list[str]]:
    """The console block that runs ``script``: (its other lines, in order; its `grokaudit check`
    lines)."""
    for b in blocks("console"):
        lines = [ln[2:] for ln in b.splitlines() if ln.startswith("$ ")]
        if any(f"python {script} " in ln for ln in lines):
            return ([ln for ln in lines if not ln.startswith("grokaudit ")],
                    [ln for ln in lines if ln.startswith("grokaudit check ")])
    raise AssertionError(f"no console block runs {script}")


def run_sweep(tmp: Path, script: str, env: dict[str, str]) -> list[str]:
    for name, code in scripts().items():
        (tmp / name).write_text(code, encoding="utf-8")
    setup, checks = commands(script)
    assert checks, f"no `grokaudit check` line after {script}"
    # as written, with a few steps instead of 8000, this interpreter for `python`, and every
    # run's exit status checked (a bare `wait` always succeeds)
    shell = ["set -e", f"python() {{ {shlex.quote(sys.executable)} \"$@\"; }}"]
    for line in setup:
        if f"python {script} " in line:
            short = line.replace(" --seed $seed &", f" --seed $seed --steps {STEPS} &")
            short = short.replace(" $wd $seed &", f" $wd $seed {STEPS} &")
            assert short != line and short.endswith("& done; done; wait")
            # two of the guide's four runs (both weight decays, one seed), still at once
            assert "for seed in 0 1;" in short
            short = short.replace("for seed in 0 1;", f"for seed in {SEEDS};")
            short = short.replace("& done; done; wait", "& pids+=($!); done; done")
            shell += [short, 'for p in "${pids[@]}"; do wait "$p"; done']
        else:
            shell.append(line)
    r = subprocess.run(["bash", "-c", "\n".join(shell)], cwd=tmp, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return checks


def check(tmp: Path, line: str, env: dict[str, str]) -> dict:
    argv = shlex.split(line)
    assert argv[:2] == ["grokaudit", "check"]
    r = subprocess.run([sys.executable, "-m", "grokaudit", *argv[1:], "--json", "-", "-q"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


RUNS = 2 * len(SEEDS.split())  # 2 weight decays × the seeds


def rows_of_sweep() -> int:
    return RUNS * (STEPS // 50 + 1)  # a row every 50 steps


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(tmp_path)  # `from train import …`
    e["WANDB_SILENT"] = "true"
    return e


def test_every_python_block_with_a_file_name_is_complete() -> None:
    assert set(scripts()) == {"train.py", "train_tensorboard.py", "train_wandb.py",
                              "train_mlflow.py"}
    for name, code in scripts().items():
        compile(code, name, "exec")


def test_the_spectral_metrics_example_prints_what_it_says() -> None:
    code = next(b for b in blocks("python") if "embed = torch.nn.Embedding(31, 128)" in b)
    printed = re.search(r"^# (\{.*\})$", code, re.M).group(1)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == printed


def test_plain_loop_with_run_logger(tmp_path: Path, env: dict[str, str]) -> None:
    for line in run_sweep(tmp_path, "train.py", env):
        d = check(tmp_path, line, env)
        assert d["input"]["rows_read"] == rows_of_sweep() and d["input"]["runs_kept"] == RUNS
        assert d["input"]["conditions"] == ["p", "seed", "wd"]
        assert d["config"]["metrics"] == ["emb_erank"]


def test_tensorboard(tmp_path: Path, env: dict[str, str]) -> None:
    pytest.importorskip("tensorboard")
    for line in run_sweep(tmp_path, "train_tensorboard.py", env):
        d = check(tmp_path, line, env)
        assert d["input"]["rows_read"] == rows_of_sweep() and d["input"]["runs_kept"] == RUNS
        assert d["input"]["conditions"] == ["seed", "wd"]


def test_wandb_offline(tmp_path: Path, env: dict[str, str]) -> None:
    pytest.importorskip("wandb")
    assert "export WANDB_MODE=offline" in commands("train_wandb.py")[0]
    env.pop("WANDB_MODE", None)  # the guide's own `export` sets it
    for line in run_sweep(tmp_path, "train_wandb.py", env):
        deadline = time.monotonic() + 60  # wandb's service may still be writing the files
        while True:
            d = check(tmp_path, line, env)
            if d["input"]["rows_read"] == rows_of_sweep() or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert d["input"]["rows_read"] == rows_of_sweep() and d["input"]["runs_kept"] == RUNS
        assert d["input"]["conditions"] == ["seed", "wd"]


def test_mlflow(tmp_path: Path, env: dict[str, str]) -> None:
    pytest.importorskip("mlflow")
    for line in run_sweep(tmp_path, "train_mlflow.py", env):
        d = check(tmp_path, line, env)
        assert d["input"]["rows_read"] == rows_of_sweep() and d["input"]["runs_kept"] == RUNS
        assert d["input"]["conditions"] == ["seed", "wd"]
