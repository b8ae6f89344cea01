"""The project's documentation lives in the repository: nothing outside docs/ cites a document a clone lacks, and
every relative link of the README and docs/ reaches a file that exists."""

import re
import subprocess
from pathlib import Path

import pytest

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
    assert {"design.md", "layout.md"} <= {p.name for p in (ROOT / "docs").glob("*.md")}
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
