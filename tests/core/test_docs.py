"""The docs match the code: every command documented from its --help, every reason code
explained, the README's commands real."""

import re
from pathlib import Path

import click
import gen_cli_docs as gen  # scripts/, on the tests' path (pyproject pythonpath)
import pytest
from grokaudit import Reason
from grokaudit.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def section(doc: str, name: str) -> str | None:
    m = re.search(rf"^## grokaudit {re.escape(name)}\n\n```text\n(.*?)\n```", doc, re.S | re.M)
    return m.group(1) if m else None


@pytest.mark.parametrize("name", cli.list_commands(click.Context(cli)))
def test_every_command_has_help_and_its_reference_is_current(name):
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"## grokaudit {name}\n" in doc
    current = gen.command_help(name)
    if current is None:
        pytest.skip(f"`grokaudit {name}` needs an optional extra not installed here")
    assert section(doc, name) == current, "run: python scripts/gen_cli_docs.py"


def test_every_reason_code_is_documented():
    doc = (ROOT / "docs" / "reasons.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `?([A-Z_]+)`?", doc, re.M))
    missing = sorted(r.value for r in Reason if r.value not in headings)
    assert not missing, f"docs/reasons.md lacks {missing}"
    unknown = sorted(h for h in headings if h not in {r.value for r in Reason})
    assert not unknown, f"docs/reasons.md documents codes that do not exist: {unknown}"


def test_readme_quick_start_commands_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for script in ("scripts/demo", "scripts/test"):
        assert f"./{script}" in readme
        assert (ROOT / script).is_file()


DOCS = [ROOT / "README.md", ROOT / "reference_runs" / "data" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_points_into_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    bad = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT.resolve() not in (path, *path.parents):
            bad.append(target)
    assert not bad, f"{doc.name} links to files the repository does not contain: {bad}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_do_not_cite_files_that_do_not_ship(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    cited = [n for n in ("AUDIT_SPEC", "CLAIMS_SPEC", "ARCHITECTURE.md", "TRAINER_SPEC",
                         "ADAPTERS.md", "../shared", "shared/external", "shared/seeds")
             if n in text]
    assert not cited, f"{doc.name} cites {cited}, which do not ship with the project"


def test_architecture_lists_every_module_of_the_core() -> None:
    """docs/architecture.md names every module and subpackage of audit/ (issue 23): a newcomer
    reading it finds where each definition lives."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "architecture.md").read_text()
    audit = root / "audit"
    modules = [p.name for p in audit.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    packages = [p.name + "/" for p in audit.iterdir() if (p / "__init__.py").is_file()]
    missing = [m for m in modules + packages if f"`{m}`" not in doc]
    assert not missing, missing
