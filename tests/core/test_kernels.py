"""The optional ``fast`` extra (issue 44, item 2): the kernel is a parameter (``--kernel``,
``validated_log(..., kernel=)``, ``build_log_table(..., kernel=)``), numpy is the reference and
the default, and each numba kernel is a twin of one numpy pass that returns exactly its answer
(values, dtype, first index, NaN and ±0.0 as numpy compares them) — so a log validated on
either gives the same bytes. ``auto`` picks numpy below the threshold; ``--kernel numba``
without numba is ``MISSING_EXTRA``; the trail names numba when it ran."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import kernels, schema
from grokaudit.cli import cli
from grokaudit.config import make_config
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError, MissingExtraError
from grokaudit.kernels import AUTO, AUTO_MIN_ROWS, NUMBA, NUMPY, Kernel, kernel_named
from grokaudit.refusals import validated_log
from grokaudit.roles import FRACTION_MAX, PERCENT_MIN
from identity import random_log

DATA = Path(__file__).resolve().parents[2] / "reference_runs" / "data"
BUNDLED = sorted(DATA.glob("*.parquet"))
NEEDS_NUMBA = "the numba kernels need the `fast` extra (numba)"


@pytest.fixture
def no_numba(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """numba made unimportable (a None entry in sys.modules fails the import)."""
    monkeypatch.setitem(sys.modules, "numba", None)
    kernels.numba_importable.cache_clear()
    kernels._compiled.cache_clear()
    yield
    kernels.numba_importable.cache_clear()
    kernels._compiled.cache_clear()


# ------------------------------------------------------------------------------------------
# the choice
# ------------------------------------------------------------------------------------------

def test_names_resolve() -> None:
    assert kernel_named("numpy") is NUMPY
    assert kernel_named("auto") is AUTO and kernel_named("auto", rows=10) == NUMPY
    assert NUMPY.for_rows(10**12) is NUMPY and not NUMPY.numba and not AUTO.numba
    for make in (kernel_named, Kernel):
        with pytest.raises(ConfigError) as e:
            make("cuda")
        assert e.value.code is ErrorCode.INVALID_OPTION and e.value.option == "--kernel"


def test_auto_picks_numpy_below_the_threshold() -> None:
    # small logs never import numba nor pay its compilation
    assert AUTO.for_rows(AUTO_MIN_ROWS - 1) == NUMPY
    assert AUTO.for_rows(0) == NUMPY
    expected = NUMBA if kernels.numba_importable() else NUMPY
    assert AUTO.for_rows(AUTO_MIN_ROWS) == expected


def test_help_says_the_threshold() -> None:
    # check's --help says auto's threshold (hard-coded there: the CLI imports no numpy)
    res = CliRunner().invoke(cli, ["check", "--help"])
    assert f"{AUTO_MIN_ROWS:,} rows" in " ".join(res.output.split())
    assert "--kernel" in CliRunner().invoke(cli, ["report", "--help"]).output


def test_auto_without_numba_is_numpy(no_numba: None) -> None:
    assert AUTO.for_rows(AUTO_MIN_ROWS * 10) == NUMPY


def test_numba_without_the_extra_is_missing_extra(no_numba: None) -> None:
    with pytest.raises(MissingExtraError) as e:
        kernel_named("numba")
    assert e.value.code is ErrorCode.MISSING_EXTRA


@pytest.mark.parametrize("command", ["check", "report"])
def test_cli_numba_without_the_extra_exits_2(no_numba: None, command: str,
                                             tmp_path: Path) -> None:
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    if command == "report":
        pytest.importorskip("matplotlib", reason="report checks its own extra first")
    res = CliRunner().invoke(cli, [command, str(BUNDLED[0]), "--kernel", "numba", *extra])
    assert res.exit_code == 2
    assert res.output.rstrip().endswith("[MISSING_EXTRA]")
    assert not (tmp_path / "r.html").exists()


def test_stream_refuses_kernel_numba(tmp_path: Path) -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    res = CliRunner().invoke(cli, ["check", str(BUNDLED[0]), "--stream", "--kernel", "numba"])
    assert res.exit_code == 2
    assert res.output.rstrip().endswith("[INVALID_OPTION]")


# ------------------------------------------------------------------------------------------
# each twin equals its numpy pass
# ------------------------------------------------------------------------------------------

_POOL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 2.0**53, 1e300])


def _values(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    """Runs of repeated values drawn from a pool of edge cases (NaN, ±0.0, ±inf, huge)."""
    if np.dtype(dtype).kind in "iu":
        pool = np.array([0, 1, -1, 2**53, 2**53 - 1, -(2**53), 7], dtype=np.int64)
        if np.dtype(dtype).kind == "u":
            pool = np.abs(pool)
        pool = pool.astype(dtype)
    else:
        with np.errstate(over="ignore"):
            pool = _POOL.astype(dtype)
    idx = rng.integers(0, pool.size, n)
    idx[rng.random(n) < 0.8] = 0  # mostly repeats: changes are rare and land anywhere
    return np.asarray(pool[np.maximum.accumulate(idx) if rng.random() < 0.3 else idx])


def _same_run(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.asarray(rng.random(max(n - 1, 0)) < rng.choice([0.5, 0.999, 1.0]))


def _sizes(rng: np.random.Generator) -> list[int]:
    block = kernels._BLOCK
    return [0, 1, 2, 3, block, block + 1, block + 2, int(rng.integers(4, 3 * block))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32])
def test_first_change_twin(dtype: Any) -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(1)
    for _ in range(12):
        for n in _sizes(rng):
            v = _values(rng, n, dtype)
            if n > 2 and rng.random() < 0.5:  # one change only, at a block's edge
                v = np.repeat(v[:1], n)
                v[min(n - 1, kernels._BLOCK)] = v[0] + 1 if v.dtype.kind != "f" else 3.0
            s = _same_run(rng, n)
            for nan_equal in (True, False):
                want = schema._first_change_in(v, s, nan_equal)
                got = kernels.first_change(v, s, nan_equal)
                assert got == want and type(got) is int, (n, dtype, nan_equal)
                assert schema._first_change_in(v, s, nan_equal, NUMBA) == want


def test_first_change_nan_and_signed_zero() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    s = np.ones(3, dtype=bool)
    for v, equal_nan, want in [([0.0, -0.0, 0.0, -0.0], True, -1),  # -0.0 == 0.0
                               ([np.nan] * 4, True, -1), ([np.nan] * 4, False, 1),
                               ([1.0, 1.0, np.nan, np.nan], True, 2)]:
        for dtype in (np.float32, np.float64):
            a = np.array(v, dtype=dtype)
            assert schema._first_change_in(a, s, equal_nan) == want
            assert kernels.first_change(a, s, equal_nan) == want


def test_first_change_stored_twin() -> None:
    # the condition test on stored Arrow chunks (read-only arrays, nulls as NaN)
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    import pyarrow as pa

    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(2, 400))
        codes = np.sort(rng.integers(0, 6, n))
        vals = _values(rng, n, rng.choice([np.float64, np.int64, np.float32]))
        cuts = np.sort(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False))
        col = pa.chunked_array([pa.array(c) for c in np.split(vals, cuts)])
        same = codes[1:] == codes[:-1]
        rows = [schema._Rows(columns=None, n_read=n, step=np.arange(n), order=None,  # type: ignore[arg-type]
                             run_ids=np.array([]), counts=np.array([]), offsets=np.array([]),
                             same_run=same, sorted_input=True, strictly=True, kernel=k)
                for k in (NUMPY, NUMBA)]
        assert schema._first_change_stored(col, rows[0]) == \
            schema._first_change_stored(col, rows[1])


def test_group_steps_twin() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.choice([2, 3, 17, kernels._BLOCK + 5]))
        codes = np.sort(rng.integers(0, rng.integers(1, 8), n)).astype(
            rng.choice([np.int32, np.int64]))
        if rng.random() < 0.3:
            rng.shuffle(codes)
        step = (2**53 - 50 + rng.integers(0, 40, n)) if rng.random() < 0.5 \
            else np.arange(n, dtype=np.int64)
        if rng.random() < 0.5:
            step[rng.integers(0, n)] = step[0]  # a repeat or a step back
        step = step.astype(np.int64)
        got = kernels.group_steps(codes, step)
        assert got is not None
        same = codes[1:] == codes[:-1]
        assert got[0].dtype == same.dtype and np.array_equal(got[0], same)
        assert got[1] == int(np.count_nonzero(same))
        assert got[2] == bool(np.any(same & (step[1:] <= step[:-1])))
        assert got[3] == bool(np.any(same & (step[1:] < step[:-1])))
    assert kernels.group_steps(np.zeros(1, np.int32), np.zeros(1, np.int64)) is None


def test_step_checks_twins() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(4)
    for _ in range(40):
        n = int(rng.integers(1, 50))
        a = rng.integers(-(2**53) - 5, 2**53 + 5, n).astype(np.int64)
        assert kernels.int_range(a) == (int(a.min()), int(a.max()))
        for dtype in (np.float32, np.float64):
            f = (rng.integers(-(2**20), 2**20, n) * rng.choice([1.0, 0.5])).astype(dtype)
            if rng.random() < 0.3:
                with np.errstate(over="ignore"):  # 1e300 is inf in float32
                    f[rng.integers(0, n)] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 1e300])
            finite, top, frac = kernels.float_steps(f)  # type: ignore[misc]
            assert finite == bool(np.all(np.isfinite(f)))
            if finite:
                assert top == float(np.abs(f).max()) and frac == bool(np.any(f != np.round(f)))
    assert kernels.int_range(np.zeros(0, np.int64)) is None


def _offsets(rng: np.random.Generator, n: int) -> np.ndarray:
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(0, min(n, 12))),
                              replace=False)) if n > 1 else np.zeros(0, int)
    return np.concatenate(([0], cuts, [n])).astype(np.int64)


def test_missing_and_absent_twin() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        v = rng.random(n).astype(rng.choice([np.float32, np.float64]))
        v[rng.random(n) < rng.choice([0.0, 0.3, 0.9, 1.0])] = np.nan
        off = _offsets(rng, n)  # single-row runs included
        want = schema._missing_and_absent(v, off)
        assert kernels.missing_and_absent(v, off) == want
        assert schema._missing_and_absent(v, off, NUMBA) == want
    # an empty run: numpy's reduceat corner, left to numpy
    v = np.array([np.nan, 1.0])
    off = np.array([0, 1, 1, 2])
    assert kernels.missing_and_absent(v, off) is None
    assert schema._missing_and_absent(v, off, NUMBA) == schema._missing_and_absent(v, off)


def test_accuracy_checks_twins() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(6)
    near = np.array([1.0, np.nextafter(1.0, 2.0), 1.0 + 1e-9, 1.5, np.nextafter(1.5, 2.0),
                     0.0, -0.0, 99.0, np.nan])
    for _ in range(200):
        n = int(rng.integers(1, 60))
        dtype = rng.choice([np.float32, np.float64])
        raw = near[rng.integers(0, near.size, n)].astype(dtype)
        for t in (PERCENT_MIN, FRACTION_MAX):
            assert schema._count_above(raw, t, NUMBA) == schema._count_above(raw, t)
            assert kernels.count_above(raw, t) == schema._count_above(raw, t)


# ------------------------------------------------------------------------------------------
# whole logs: the same validated log, the same refusals, the same bytes
# ------------------------------------------------------------------------------------------

def _same_log(a: schema.LogTable, b: schema.LogTable) -> None:
    assert a.summary == b.summary
    for f in ("run_ids", "offsets", "step", "test_acc", "train_acc"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype, f
            assert (x.tolist() == y.tolist()) if x.dtype == object else \
                (x.tobytes() == y.tobytes()), f
    assert a.series.keys() == b.series.keys()
    for k in a.series:
        assert a.series[k].dtype == b.series[k].dtype
        assert a.series[k].tobytes() == b.series[k].tobytes(), k
    pd.testing.assert_frame_equal(a.conditions, b.conditions)


def _hostile(rng: np.random.Generator) -> pd.DataFrame:
    """A random log with NaN gaps, then some of: unsorted rows, duplicate rows, percent
    accuracies, float steps, a run with no accuracy, a one-row run."""
    with warnings.catch_warnings():  # huge values cast to float32: inf, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        df = random_log(rng, int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                        int(rng.choice([5, 40, 300])))
    if rng.random() < 0.3:
        df = df.sample(frac=1.0, random_state=int(rng.integers(1 << 30)))
    if rng.random() < 0.3:
        df = pd.concat([df, df.iloc[: int(rng.integers(1, 5))]], ignore_index=True)
    if rng.random() < 0.3:
        df["test_acc"] = df["test_acc"] * 100
    if rng.random() < 0.3:
        df["step"] = df["step"].astype(np.float64)
    if rng.random() < 0.2:
        df = pd.concat([df, pd.DataFrame({"run": ["lonely"], "step": [0],
                                          "test_acc": [np.nan], "rho": [9.0]})])
    return df.reset_index(drop=True)


def _validate(df: pd.DataFrame, kernel: Kernel, on_duplicate: str) -> Any:
    cfg = make_config(by="rho", on_duplicate=on_duplicate)
    try:
        return validated_log(df, cfg, kernel=kernel)
    except LogFormatError as exc:
        return exc.code


def test_random_logs_validate_the_same_on_both_kernels() -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    rng = np.random.default_rng(7)
    for _ in range(25):
        df = _hostile(rng)
        for rule in ("error", "first"):
            a, b = _validate(df, NUMPY, rule), _validate(df, NUMBA, rule)
            if isinstance(a, ErrorCode) or isinstance(b, ErrorCode):
                assert a == b
            else:
                _same_log(a, b)


@pytest.mark.parametrize("steps", [[0, 5, -1], [0, 1.5, 2], [0, np.nan, 2], [0, 2.0**60, 1],
                                   [0, 2**60, 1], [-3, 0, 5], [0, 1, 2**60]])
def test_step_refusals_are_the_same(steps: list[Any]) -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    df = pd.DataFrame({"run": "a", "step": steps, "test_acc": [0.1, 0.2, 0.3]})
    codes = []
    for k in (NUMPY, NUMBA):
        with pytest.raises(LogFormatError) as e:
            schema.build_log_table(df, kernel=k)
        codes.append((e.value.code, e.value.column))
    assert codes[0] == codes[1]
    assert codes[0][0] in (ErrorCode.NEGATIVE_STEP, ErrorCode.NON_INTEGER_STEP,  # NaN: missing
                           ErrorCode.MISSING_VALUES,
                           ErrorCode.STEP_OUT_OF_RANGE)


def _check(path: Path, kernel: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    res = CliRunner().invoke(cli, ["check", str(path), "--json", "-", "--kernel", kernel,
                                   *extra])
    out = json.loads(res.stdout)
    return res.exit_code, out, res.stdout


def _strip_kernel(out: dict[str, Any]) -> dict[str, Any]:
    """The result less what ``--kernel`` changes by design: the command line, the kernel."""
    trail = dict(out["trail"])
    trail.pop("kernel", None)
    trail.pop("command")
    return {**out, "trail": trail}


def _check_files(tmp_path: Path) -> list[tuple[Path, list[str]]]:
    rng = np.random.default_rng(8)
    log = tmp_path / "random.parquet"
    random_log(rng, 3, 3, 200).to_parquet(log, index=False)
    return [(p, []) for p in BUNDLED] + [(log, ["--by", "rho"])]


def test_check_is_byte_identical_on_both_kernels(tmp_path: Path) -> None:
    pytest.importorskip("numba", reason=NEEDS_NUMBA)
    for path, extra in _check_files(tmp_path):
        code_a, a, text_a = _check(path, "numpy", *extra)
        code_b, b, text_b = _check(path, "numba", *extra)
        assert code_a == code_b
        assert "kernel" not in a["trail"] and b["trail"]["kernel"] == "numba"
        assert _strip_kernel(a) == _strip_kernel(b)
        # every byte but the command line's option and the kernel's record
        assert text_a.replace('"numpy"', '"numba"') == text_b.replace(
            ',\n    "kernel": "numba"', "")


def test_trail_names_the_kernel_only_when_numba_ran(tmp_path: Path) -> None:
    _, auto, _ = _check(BUNDLED[0], "auto")  # a small log: auto runs numpy
    _, numpy_, _ = _check(BUNDLED[0], "numpy")
    assert "kernel" not in auto["trail"] and "kernel" not in numpy_["trail"]
    res = CliRunner().invoke(cli, ["check", str(BUNDLED[0])])
    assert "kernel:" not in res.stdout
    if kernels.numba_importable():
        res = CliRunner().invoke(cli, ["check", str(BUNDLED[0]), "--kernel", "numba"])
        assert any(line.strip().startswith("kernel: numba") for line in res.stdout.splitlines())


def test_no_writable_numba_cache_compiles_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only install with no NUMBA_CACHE_DIR: numba refuses cache=True (RuntimeError: no
    locator available); the kernels are compiled for this process instead, never an error."""
    pytest.importorskip("numba", reason="the numba kernels are the extra `fast`")
    import numba.core.caching as caching
    from grokaudit import kernels

    def no_locator(self: object, py_func: object) -> None:
        raise RuntimeError("cannot cache function: no locator available for file")

    monkeypatch.setattr(caching.FunctionCache, "__init__", no_locator)
    compiled = getattr(kernels._compiled, "__wrapped__", kernels._compiled)()  # not cached
    assert sorted(vars(compiled)) == sorted(kernels._LOOPS)
    from grokaudit import clockloops  # the clocks' loops, and the helpers they call

    loops = clockloops._compile_once.__wrapped__()  # not cached
    assert sorted(vars(loops)) == sorted(clockloops._LOOPS)
    V = np.array([[3.0, 1.0, 2.0, 5.0]])
    assert loops.window_median(V, np.array([0]), np.array([4]), np.zeros(1), False,
                               out := np.empty(1))
    assert out[0] == 2.5
