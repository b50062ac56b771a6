"""Are the audit's outputs byte-identical before and after a change? (issue 13: "no verdict
changes").

    python benchmarks/identity.py --save before.json     # on the old code
    python benchmarks/identity.py --check before.json    # on the new code: exit 1 on any change

Hashes (SHA-256) the full ``to_json()`` of many audits:

* every bundled log under several configurations (profiles, t_compress rules, floor windows,
  grok points, censoring options, every metric);
* every named adversarial case of the suite under the default and the reference profile, and
  the same logs with their float64 columns stored as float32;
* random logs (NaN gaps, unequal lengths and cadences, float32 and float64 columns, runs that
  never grok or never compress, huge values), several sizes;
* the held-out public p = 59 sweep when ``../shared/external`` is present (``--external``).

A difference prints the audit's label; ``--check`` exits 1 if any hash differs or is missing.

``--kernel NAME`` validates every log on that kernel (:mod:`grokaudit.kernels`: ``numba`` is
the extra ``fast``): ``--check before.json --kernel numba`` proves the numba kernels give the
numpy kernel's bytes. The library audits take ``kernel=``; the ``check`` command lines get
``--kernel NAME``; what that changes by design is taken out of every output before it is
hashed — the option in the trail's command line and the trail's record of the kernel (both
only there when the kernel is not numpy) — so every other byte is compared.
Each audit's JSON as ``--json`` writes it (``json_chunks``: the runs written from their columns)
and ``to_json`` are also compared with ``json.dumps`` of ``to_dict`` (``_reference_json``); any
difference exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grokaudit
import numpy as np
import pandas as pd
from grokaudit.config import make_config
from grokaudit.config import replace as replace_config

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "reference_runs" / "data"

BUNDLED = {
    "mlp_wd_sweep_p59.parquet": {"by": "wd", "cell": ("arch",)},
    "transformer_ln_p23.parquet": {"by": "layernorm"},
    "external_alpha_sweep.parquet": {"by": "alpha"},
}
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "reference": {"profile": "reference"},
    "crossing": {"rule": "crossing"},
    "index": {"floor_window": "index"},
    "grid": {"floor_window": "grid"},
    "usable": {"grok_point": "usable"},
    "no-interval": {"interval_censoring": False},
    "smooth5": {"smooth": 5},
    "no-stability": {"stability_check": False},
}


#: Audits whose JSON written in pieces (``json_chunks``: what ``--json`` writes, the runs from
#: their columns) or ``to_json`` is not the plain ``json.dumps`` of ``to_dict``
#: (``_reference_json``).
CHUNKS_DIFFER: list[str] = []
CHUNKS_CHECKED = [0]


def _hash(obj: Any, label: str = "") -> str:
    if isinstance(obj, grokaudit.LogFormatError):
        text = f"error:{obj.code}:{obj}"
    else:
        text = obj.to_json()
        if hasattr(obj, "_reference_json"):  # a result (not a command's output)
            CHUNKS_CHECKED[0] += 1
            if "".join(obj.json_chunks()) != obj._reference_json() or text != obj._reference_json():
                CHUNKS_DIFFER.append(label)
        if KERNEL["name"] is not None:  # a result's trail may record the kernel
            text = _without_kernel(text)
    return hashlib.sha256(text.encode()).hexdigest()


#: With ``--stream N``: each audit is also run on a Parquet file of its log, in memory and
#: streamed in parts of N rows, and the two compared (``STREAMED``: label -> same or not).
STREAM: dict[str, Any] = {"part_rows": None, "dir": None, "n": 0}
STREAMED: dict[str, str] = {}
#: With ``--kernel NAME``: the kernel every audit validates its log on (None: the default).
KERNEL: dict[str, Any] = {"name": None, "kernel": None}


def _kernel_options() -> dict[str, Any]:
    """``kernel=`` for the library audits, when ``--kernel`` was given."""
    return {} if KERNEL["kernel"] is None else {"kernel": KERNEL["kernel"]}


def _without_kernel(text: str) -> str:
    """A ``check`` command's output less what ``--kernel NAME`` changes by design: the option
    in the trail's command line (text and JSON) and the trail's record of the kernel."""
    name = re.escape(str(KERNEL["name"]))
    text = re.sub(rf',\n\s*"--kernel",\n\s*"{name}"', "", text)  # the JSON command list
    text = re.sub(rf',\n\s*"kernel": "{name}"', "", text)  # the JSON trail's record
    text = text.replace(f" --kernel {KERNEL['name']}", "")  # the text trail's command line
    return re.sub(rf"(?m)^\s*kernel: {name} \(.*\)\n", "", text)  # its kernel line


def _streamed(df: pd.DataFrame | str, cfg: Any) -> str:
    """``same``, ``refused`` (an option a log read in parts cannot take) or ``DIFFERS``."""
    from grokaudit.errors import ConfigError
    from grokaudit.stream import audit_stream

    if isinstance(df, str):
        path = df
    else:
        STREAM["n"] += 1
        path = str(Path(STREAM["dir"]) / f"log{STREAM['n']}.parquet")
        df.to_parquet(path, index=False, row_group_size=max(1, STREAM["part_rows"] // 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            whole: Any = grokaudit.audit_path(path, config=cfg)
        except grokaudit.LogFormatError as exc:
            whole = exc
        try:
            parts: Any = audit_stream(path, cfg, part_rows=STREAM["part_rows"])
        except ConfigError:
            return "refused"
        except grokaudit.LogFormatError as exc:
            parts = exc
    if isinstance(whole, Exception) or isinstance(parts, Exception):
        same = (type(whole) is type(parts) and getattr(whole, "code", None)
                == getattr(parts, "code", None))
    else:
        same = whole.to_json() == parts.to_json()
    return "same" if same else "DIFFERS"


def _audit(df: pd.DataFrame | str, cfg: Any, label: str | None = None) -> Any:
    if STREAM["part_rows"] is not None and label is not None:
        STREAMED[label] = _streamed(df, cfg)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(df, str):
                return grokaudit.audit_path(df, config=cfg, **_kernel_options())
            return grokaudit.audit_table(df, cfg, **_kernel_options())
    except grokaudit.LogFormatError as exc:
        return exc


def _config(base: dict[str, Any], extra: dict[str, Any]) -> Any:
    opts = {k: v for k, v in {**base, **extra}.items() if k != "profile"}
    cfg = make_config(profile=extra.get("profile", "default"))
    return replace_config(cfg, **opts)


def bundled() -> Iterator[tuple[str, Any]]:
    for name, opts in BUNDLED.items():
        path = str(DATA / name)
        for label, extra in CONFIGS.items():
            cfg = _config(opts, extra)
            if cfg is not None:
                yield f"bundled/{name}/{label}", _audit(path, cfg, f"bundled/{name}/{label}")


def _as_float32(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == np.float64 and c not in ("step",):
            out[c] = out[c].astype(np.float32)
    return out


def suite_cases() -> Iterator[tuple[str, Any]]:
    from grokaudit.adversarial_suite.catalog import CASES

    for profile in ("default", "reference"):
        base = make_config(profile=profile)
        for case in CASES:
            try:
                inst = case.instance(base)
            except RuntimeError:
                continue
            label = f"suite/{profile}/{case.name}"
            yield label, _audit(inst.table, inst.cfg, label)
            yield f"{label}/f32", _audit(_as_float32(inst.table), inst.cfg, f"{label}/f32")


def random_log(rng: np.random.Generator, n_cells: int, n_seeds: int, T: int) -> pd.DataFrame:
    frames = []
    for c in range(n_cells):
        for s in range(n_seeds):
            n = int(rng.integers(max(3, T // 2), T + 1)) if rng.random() < 0.3 else T
            cad = int(rng.choice([1, 1, 2, 5]))
            step = np.arange(n, dtype=np.int64) * cad * 10
            i = np.arange(n)
            tg = int(rng.uniform(0.05, 0.7) * n) if rng.random() < 0.9 else n + 1
            tc = min(n - 1, tg + int(rng.uniform(0, 0.6) * n))
            peak, floor = rng.uniform(20, 60), rng.uniform(2, 19)
            shape = rng.choice(["compress", "flat", "rebound", "drift"])
            m = np.where(i < tc, peak, floor).astype(float)
            if shape == "flat":
                m[:] = peak
            elif shape == "rebound":
                m[int(0.8 * n):] = floor + 0.5 * (peak - floor)
            elif shape == "drift":
                m = m - np.linspace(0, 3, n) * (i >= tc)
            m += rng.normal(0, rng.choice([0.0, 0.3, 2.0]), n)
            acc = np.where(i >= tg, rng.uniform(0.9, 1.0, n), rng.uniform(0.0, 0.5, n))
            if rng.random() < 0.3:
                m[rng.random(n) < 0.1] = np.nan
            if rng.random() < 0.2:
                acc[rng.random(n) < 0.05] = np.nan
            if rng.random() < 0.05:
                m = m * 1e306
            frames.append(pd.DataFrame({
                "run": f"c{c}_s{s}", "step": step, "test_acc": acc, "train_acc": 1.0,
                "emb_erank": m, "emb_pr": m * 0.5 + rng.normal(0, 0.1, n),
                "rho": float(c) * 0.5, "seed": s}))
    df = pd.concat(frames, ignore_index=True)
    if rng.random() < 0.5:
        df = _as_float32(df)
    return df


def randoms(n: int) -> Iterator[tuple[str, Any]]:
    rng = np.random.default_rng(13)
    for i in range(n):
        df = random_log(rng, int(rng.integers(1, 6)), int(rng.integers(1, 5)),
                        int(rng.choice([5, 40, 300, 2000])))
        for label, extra in (("default", {}), ("reference", {"profile": "reference"}),
                             ("crossing", {"rule": "crossing"})):
            cfg = _config({"by": "rho"}, extra)
            yield f"random/{i}/{label}", _audit(df, cfg, f"random/{i}/{label}")


def external() -> Iterator[tuple[str, Any]]:
    folder = ROOT.parent / "shared" / "external" / "critical-norm-grokking" / "grokfss_p59"
    if not folder.is_dir():
        return
    for f in sorted(folder.glob("*.npz")):
        yield f"external/{f.name}", _audit(str(f), make_config())


class _Output:
    """What a CLI command printed (stdout, stderr, exit code), hashed as one text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def to_json(self) -> str:
        return self.text


def _examples() -> Any:
    """docs/examples/make_claims_examples.py, imported by name (as the tests import it)."""
    sys.path.insert(0, str(ROOT / "docs" / "examples"))
    import make_claims_examples

    return make_claims_examples


def commands(check_only: bool = False) -> Iterator[tuple[str, Any]]:
    """What the commands print: check's text and JSON (with --sensitivity), every claim's text
    and JSON on the docs' examples, and the suite's named cases — the renderers, not only
    ``to_json``. ``check_only``: only the ``check`` lines (the only commands that take
    ``--kernel``: the claims' and the suite's lines print the same bytes whichever kernel the
    other outputs were validated on)."""
    import os
    import shlex
    import tempfile

    from click.testing import CliRunner
    from grokaudit.cli import cli

    ex = _examples()
    mlp = str(DATA / "mlp_wd_sweep_p59.parquet")
    tf = str(DATA / "transformer_ln_p23.parquet")
    alpha = str(DATA / "external_alpha_sweep.parquet")
    lines = [f"check {mlp} --by wd --cell arch", f"check {mlp} --by wd --cell arch --json -",
             f"check {tf} --by layernorm", f"check {alpha} --by alpha --json -",
             f"check {mlp} --by wd --cell arch --profile reference",
             f"check {mlp} --by wd --cell arch --sensitivity",
             f"check {mlp} --by wd --cell arch --sensitivity --json -",
             "suite --max-examples 0", "suite --max-examples 0 --json -"]
    for _name, (where, line) in ex.EXAMPLES.items():
        if where == "synthetic":
            lines += [line, line + " --json -"]
    with tempfile.TemporaryDirectory() as d:
        for name, fn in ex.LOGS.items():
            fn(np.random.default_rng(2026)).to_parquet(Path(d) / f"{name}.parquet", index=False)
        old = Path.cwd()
        os.chdir(d)
        try:
            for line in lines:
                if check_only and not line.startswith("check "):
                    continue
                run = line
                if KERNEL["name"] is not None and line.startswith("check "):
                    run = f"{line} --kernel {KERNEL['name']}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = CliRunner().invoke(cli, shlex.split(run))
                text = f"{res.exit_code}\n{res.stdout}\n{res.stderr}"
                if run != line:
                    text = _without_kernel(text)
                yield f"cli/{line.replace(str(DATA) + '/', '')}", _Output(text)
        finally:
            os.chdir(old)


def collect(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    sources = [bundled(), suite_cases(), randoms(args.random),
               commands(check_only=getattr(args, "check_only", False))]
    if args.external:
        sources.append(external())
    for src in sources:
        for label, res in src:
            out[label] = _hash(res, label)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", help="write the hashes to this JSON file")
    g.add_argument("--check", help="compare with the hashes in this JSON file")
    ap.add_argument("--random", type=int, default=60, help="random logs (default 60)")
    ap.add_argument("--external", action="store_true", help="also the public p = 59 sweep")
    ap.add_argument("--tiny-blocks", action="store_true",
                    help="compute the clocks in blocks of a few runs (grokaudit.blocks)")
    ap.add_argument("--kernel", default=None, metavar="NAME",
                    help="validate every log on this kernel (auto, numpy, numba: extra `fast`)")
    ap.add_argument("--stream", type=int, default=None, metavar="N",
                    help="also audit each log as a Parquet file in memory and streamed in "
                         "parts of N rows, and say which differ (exit 1 if any)")
    a = ap.parse_args()
    if a.kernel is not None:
        from grokaudit.kernels import kernel_named

        KERNEL["name"], KERNEL["kernel"] = a.kernel, kernel_named(a.kernel)
    if a.stream is not None:
        import tempfile

        STREAM["part_rows"], STREAM["dir"] = a.stream, tempfile.mkdtemp()
        collect(a)
        counts = {k: sum(v == k for v in STREAMED.values()) for k in ("same", "refused",
                                                                        "DIFFERS")}
        for label, v in sorted(STREAMED.items()):
            if v == "DIFFERS":
                print(f"streamed differs: {label}")
        print(f"{len(STREAMED)} logs audited in memory and streamed in parts of {a.stream} "
              f"rows: {counts}")
        return 1 if counts["DIFFERS"] else 0
    if a.tiny_blocks:
        from grokaudit import blocks

        blocks.MIN_BLOCKED, blocks.BLOCK_ELEMENTS = 0, 64
    hashes = collect(a)
    for label in CHUNKS_DIFFER:
        print(f"--json or to_json differs from json.dumps of to_dict: {label}")
    print(f"{CHUNKS_CHECKED[0]} audits written in pieces (--json) and by to_json: "
          f"{len(CHUNKS_DIFFER)} differ from json.dumps of to_dict")
    if CHUNKS_DIFFER:
        return 1
    if a.save:
        Path(a.save).write_text(json.dumps(hashes, indent=1, sort_keys=True))
        print(f"{len(hashes)} audits hashed -> {a.save}")
        return 0
    old = json.loads(Path(a.check).read_text())
    bad = sorted(k for k in old.keys() | hashes.keys() if old.get(k) != hashes.get(k))
    for k in bad:
        print(f"DIFFERENT: {k}")
    print(f"{len(hashes)} audits hashed; {len(bad)} differ from {a.check}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
