"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link, a missing anchor or a
page left out of the navigation fails), the README is a front page (short, its first command early), and
nothing refers to a file outside the repository."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))


def test_the_site_builds_strict(tmp_path):
    import mkdocs  # noqa: F401  (the docs extra; make venv installs it: a missing one fails, it does not skip)

    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "explorer" / "math_demo.html").exists()  # the committed explorer is served


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [p.name for p in PAGES if f": {p.name}" not in nav] == []


def test_the_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(text) <= 12000, len(text)
    first_command = next(i for i, line in enumerate(lines, 1) if line.startswith("make "))
    install = next(i for i, line in enumerate(lines, 1) if line == "## Install")
    assert first_command <= 15 and install <= 30
    assert not re.search(r"\b(19|20)\d\d-\d\d-\d\d\b|\b\d{1,2} (Nov|Dec|Jan|Oct)\w* 20\d\d\b", text)  # no dates
    for heading in ("## Which arch do I pick", "## Results at a glance", "## Licence and citation"):
        assert heading in lines


def test_nothing_refers_to_a_file_outside_the_repository():
    texts = {p: p.read_text(encoding="utf-8") for p in [*PAGES, ROOT / "README.md", ROOT / "CONTRIBUTING.md"]}
    bad = [f"{p.name}: {m.group(0)}" for p, t in texts.items()
           for m in re.finditer(r"DESIGN\.md|\.\./shared\b|\.\./\.library", t)]
    assert bad == []


def test_every_link_of_the_readme_resolves():
    """The README is not part of the site: its links to files and to sections of the pages are checked here."""
    from fairseq_tpr.cli.doc_toc import headings
    from fairseq_tpr.helpdoc import anchor

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    bad = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", text):
        path, fragment = target
        if path.startswith("http"):
            continue
        if not (ROOT / path).exists():
            bad.append(path)
        elif fragment and fragment not in {anchor(t) for _, t in headings((ROOT / path).read_text(encoding="utf-8"), 6)}:
            bad.append(f"{path}#{fragment}")
    assert bad == []
