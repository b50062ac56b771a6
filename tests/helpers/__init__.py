"""Helpers shared by the test folders, in one place.

``helpers`` is importable from every test because pytest puts ``tests/`` on ``sys.path``
(``pythonpath`` in pyproject.toml's ``[tool.pytest.ini_options]``, which also puts
``benchmarks/`` and ``scripts/`` there, so the oracle ``v15_loop``, ``reproduce_recipes``,
``gen_cli_docs`` and ``make_figures`` are imported by name, as the benchmarks import them).

- :mod:`helpers.core_builders` — hand-built runs and cells for the core's tests;
- :mod:`helpers.hostile` — the hostile-input suite's logs, CLI runner and checks;
- :mod:`helpers.report_builders`, :mod:`helpers.report_dom` — the report's logs and its
  parsed page (DOM, headless Chromium);
- :mod:`helpers.tables` — what an adapter's table says of itself (provenance, percent);
- :mod:`helpers.writer` — the RunLogger's training process (also run as a script).

Fixtures used by more than one folder live in the root ``tests/conftest.py``.
"""
