"""Every error grokaudit raises on purpose carries a specific ErrorCode, set at the raise, and
every code is documented: scripts and tests test codes, never message text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from grokaudit.errors import (
    ConfigError,
    ErrorCode,
    GrokauditError,
    LogFormatError,
    MissingExtraError,
    OutputError,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("audit", "adapters", "reference_runs", "adversarial_suite")
ERRORS = {"LogFormatError", "ConfigError", "OutputError", "GrokauditError", "MissingExtraError"}


def _raises_without_code() -> list[str]:
    bad = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in ERRORS):
                    continue
                if node.func.id == "MissingExtraError":
                    continue  # one code only: MISSING_EXTRA
                kw = {k.arg: k.value for k in node.keywords}
                code = kw.get("code")
                if code is None or (isinstance(code, ast.Attribute)
                                    and code.attr == "UNSPECIFIED"):
                    bad.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.func.id}")
    return bad


def test_every_raise_sets_its_code() -> None:
    bad = _raises_without_code()
    assert not bad, f"errors raised without a specific code=ErrorCode.X: {bad}"


def test_a_code_is_required_and_typed() -> None:
    with pytest.raises(TypeError):
        GrokauditError("x", code="FILE_EMPTY")  # type: ignore[arg-type]
    e = LogFormatError("bad", path="f.csv", column="c", code=ErrorCode.MISSING_COLUMN)
    assert e.code is ErrorCode.MISSING_COLUMN and e.path == "f.csv" and e.column == "c"
    assert isinstance(e, ValueError) and isinstance(OutputError("x", code=ErrorCode.OUTPUT_IS_INPUT),
                                                     GrokauditError)
    assert ConfigError("x", code=ErrorCode.INVALID_FAIL_ON, option="fail_on").option == "fail_on"


def test_every_error_code_is_documented() -> None:
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `([A-Z_]+)`", doc, re.M))
    codes = {c.value for c in ErrorCode}
    assert not sorted(codes - headings), f"docs/errors.md lacks {sorted(codes - headings)}"
    assert not sorted(headings - codes), f"docs/errors.md documents unknown {headings - codes}"


@pytest.mark.parametrize("err", [
    OutputError("cannot write x", code=ErrorCode.OUTPUT_NOT_WRITABLE, path="x.json"),
    LogFormatError("column 'a' missing", code=ErrorCode.MISSING_COLUMN, path="log.csv",
                   column="a", param="metrics"),
    ConfigError("bad", code=ErrorCode.OPTION_OUT_OF_RANGE, option="rel_tol"),
    MissingExtraError("needs ray"),
], ids=lambda e: type(e).__name__)
def test_an_error_pickles_as_it_is(err: Exception) -> None:
    """A worker process or a Ray task hands its error back pickled: before, an OutputError or
    LogFormatError could not be rebuilt (its keyword-only code), so the worker's error became
    an unpickling TypeError."""
    import pickle

    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)
    assert back.__dict__ == err.__dict__
