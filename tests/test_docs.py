"""The project's documentation lives in the repository: nothing outside docs/ cites a document a clone lacks, every
relative link of the README and docs/ reaches a file that exists, and the README stays a short way into docs/."""

import re
import subprocess
from pathlib import Path

import pytest

from featlearn.claims.report import README_SCALES, markers

ROOT = Path(__file__).resolve().parents[1]
# Written apart so that this file does not match itself.
OUTSIDE = ("../" + "shared", "DESIGN" + ".md", "spec" + " §")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"not a git checkout ({err})")
    return out.splitlines()


def test_no_reference_leaves_the_repository():
    found = []
    for name in _tracked():
        path = ROOT / name
        if name.startswith("docs/") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{name}:{number}: {needle!r}" for needle in OUTSIDE if needle in line]
    assert not found, "references to documents outside the repository (cite docs/ instead):\n" + "\n".join(found)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_docs_exist():
    pages = {"claims", "design", "extending", "faults", "layout", "own-model", "paper-scale", "reproducibility",
             "running", "stores", "testing"}
    assert {f"{page}.md" for page in pages} <= {p.name for p in (ROOT / "docs").glob("*.md")}
    assert {p.stem for p in (ROOT / "docs" / "figures").glob("*.md")} == {"alignment", "collapse", "tangent"}


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_files(doc):
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same page
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)} links to missing files: {broken}"


def test_the_readme_is_a_doorway():
    """Under 200 lines, and every page of docs/ one link away: the long sections live in their pages."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    linked = {target.split("#", 1)[0] for target in LINK.findall(text)}
    missing = [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md links to no {missing}"


@pytest.mark.parametrize("scale", README_SCALES)
def test_the_claims_page_and_the_readme_hold_each_scale_s_block(scale):
    """The rule `claims_doc` rewrites between these markers: the table in docs/claims.md, its summary line (the count
    of each tier) in the README."""
    begin, end = markers(scale)
    for doc in (ROOT / "docs" / "claims.md", ROOT / "README.md"):
        text = doc.read_text(encoding="utf-8")
        assert text.count(begin) == text.count(end) == 1 and text.index(begin) < text.index(end), doc.name
