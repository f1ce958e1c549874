"""The docs: the README is a front door under 150 lines whose links resolve, the docs/ site
builds with `mkdocs build --strict` (a broken link, a missing anchor or a page left out of the
nav fails it), and docs/check-rules.md is what tools/gen_rule_docs.py renders from the rule
registry that `mpsgen check --explain` prints. (The commands the pages show run in
tests/test_readme.py.)"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[1]
DOCS = TOP / "docs"
# a markdown link's target: [text](target) (images too); code spans are taken out first
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def gen_rule_docs():
    spec = importlib.util.spec_from_file_location("gen_rule_docs", TOP / "tools" / "gen_rule_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )


def local_links(page: Path) -> list[str]:
    """The relative link targets of a markdown page, outside code blocks and code spans."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_is_a_front_door():
    lines = (TOP / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) < 150
    first_screen = "\n".join(lines[:40])
    assert "pip install -e . && mpsgen demo" in first_screen
    assert "pip install -e '.[test]' && python -m pytest -q" in first_screen


@pytest.mark.parametrize("page", ["README.md", "specs/README.md", "specs/kernels/README.md", "specs/reductions/README.md"])
def test_the_links_of_pages_outside_the_site_resolve(page: str):
    """The site's build checks the links of docs/; these pages live outside it."""
    path = TOP / page
    targets = local_links(path)
    assert targets, f"{page} links nowhere"
    for target in targets:
        assert (path.parent / target.split("#")[0]).exists(), f"{page}: the link {target} leads nowhere"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The docs site, built strictly into a temporary folder."""
    out = tmp_path_factory.mktemp("docs") / "site"
    proc = mkdocs_build(TOP / "mkdocs.yml", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_the_docs_site_builds_strictly(site: Path):
    for page in DOCS.glob("*.md"):
        html = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert html.is_file(), f"{page.name} was not built"


@pytest.mark.parametrize(
    "break_it, said",
    [
        (lambda docs: _append(docs / "try.md", "\nSee [the gate](compile-gate.md).\n"), "compile-gate.md"),
        (lambda docs: _append(docs / "try.md", "\nSee [the gate](new-op.md#the-compile-gates).\n"), "the-compile-gates"),
        (lambda docs: (docs / "orphan.md").write_text("# Not in the nav\n"), "orphan.md"),
    ],
    ids=["broken link", "broken anchor", "page left out of the nav"],
)
def test_the_strict_build_fails_on_a_broken_docs_tree(tmp_path: Path, break_it, said: str):
    """The same build on a copy of the docs with one fault fails, naming it: the strict build
    is a check that can fail."""
    shutil.copy(TOP / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    break_it(tmp_path / "docs")
    proc = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert said in proc.stderr


def _append(page: Path, text: str) -> None:
    page.write_text(page.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_the_rules_page_is_the_rule_registry_rendered():
    """docs/check-rules.md is what `python tools/gen_rule_docs.py` writes from the rule
    registry; after changing a rule, run it."""
    rendered = gen_rule_docs().render()
    assert (DOCS / "check-rules.md").read_text(encoding="utf-8") == rendered, "docs/check-rules.md is stale: run `python tools/gen_rule_docs.py`"


def test_each_rule_section_shows_what_check_explain_prints(site: Path):
    """The built page has one section per registered rule, in order, whose text is what
    `mpsgen check --explain CODE` prints (markdown's specials escaped right: no `<op>` lost as
    an HTML tag, no `*` turned into emphasis)."""
    from html import unescape

    from mpsgen.check import RULES, explain

    def words(plain: str) -> str:
        return " ".join(plain.replace("`", "").split())

    def text(fragment: str) -> str:  # an HTML fragment's text (less the headings' permalink sign)
        return words(unescape(re.sub(r"<[^>]+>", "", fragment)).replace("\u00b6", ""))

    page = (site / "check-rules" / "index.html").read_text(encoding="utf-8")
    page = page[page.index('<h2 id="mps') : page.index("</div>", page.rindex('<h2 id="mps'))]
    sections = re.split(r"(?=<h2 id=)", page)[1:]
    assert [text(s).split()[0] for s in sections] == list(RULES)
    for code, section in zip(RULES, sections):
        rule = RULES[code]
        said = explain(code)
        assert said == f"{code} {rule.name} ({rule.severity}): {rule.summary}.\n\n{rule.explanation}\n"
        assert text(section) == words(f"{code} {rule.name} {rule.severity}: {rule.summary}. {rule.explanation}"), code


def test_the_rule_page_generator_says_when_the_page_is_stale(tmp_path: Path, monkeypatch, capsys):
    gen = gen_rule_docs()
    monkeypatch.setattr(gen, "PAGE", tmp_path / "check-rules.md")
    (tmp_path / "check-rules.md").write_text("# Check rules\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert (tmp_path / "check-rules.md").read_text(encoding="utf-8") == gen.render()
