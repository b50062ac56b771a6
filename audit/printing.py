"""The one way a result becomes text: :func:`render`, one printer per result type, chosen by the
result's type.

Every command prints its result through :func:`render` (``cli.emit``), so each result has
exactly one text form, the one the command shows. The printers live in their own modules
(``report``, ``claims.render``, ``claims.sensitivity``, ``inspect``,
``adversarial_suite.render``) and are imported only when a result is printed: results
never import their printers, so computing never loads printing and no module imports back.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from .claims.results import ClaimResult
from .claims.sensitivity import SensitivityResult, render_sensitivity
from .inspect import Inspection, render_inspection
from .reproduce import ReproduceResult
from .results import AuditResult


@singledispatch
def render(result: Any, *, verbose: bool = False) -> str:
    """``result`` as its command prints it (text ending in its result line); ``verbose``
    shows what the command's ``--verbose`` shows."""
    if type(result).__module__ == "grokaudit.adversarial_suite.runner":
        # the suite's report: its printer loaded only for it (the suite is not imported else)
        from .adversarial_suite.render import render_table
        from .adversarial_suite.runner import SuiteReport

        if isinstance(result, SuiteReport):
            return render_table(result) + "\n"
    raise TypeError(f"no printer for a {type(result).__name__}")


@render.register
def _audit(result: AuditResult, *, verbose: bool = False) -> str:
    from .report import render_text

    return render_text(result, verbose=verbose)


@render.register
def _claim(result: ClaimResult, *, verbose: bool = False) -> str:
    from .claims.render import render_text

    return render_text(result, verbose=verbose)


@render.register
def _sensitivity(result: SensitivityResult, *, verbose: bool = False) -> str:
    return render(result.baseline, verbose=verbose) + "\n" + render_sensitivity(result)


@render.register
def _reproduce(result: ReproduceResult, *, verbose: bool = False) -> str:
    from .reproduce_text import render_reproduce

    return render_reproduce(result)


@render.register
def _inspection(result: Inspection, *, verbose: bool = False) -> str:
    return render_inspection(result)
