"""`snakemake --lint` on a copy of the workflow (parsing the Snakefile writes stamps under results/, which the checkout
keeps for its own builds); fails on every lint but the accepted ones, which docs/testing.md's "Lint" section explains.

Run by `make lint` and `make test`: `.venv/bin/python .ci/snakemake_lint.py`.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# The lints this workflow keeps, by title (for every rule, or for the rules named), with the reason (docs/testing.md,
# "Lint").
ACCEPTED = {
    "Specify a conda environment or container for each rule.": (
        None, "one pinned environment runs every rule (requirements.txt, or environment.yml for conda); a per-rule "
              "environment would install torch once per rule"),
    "No log directive defined.": (
        {"rule alignment_shortcut", "rule figure_shortcut"},
        "the figures/ shortcuts are a `cp`, with nothing to log; a log file per shortcut would be 49 empty files, and "
        "every job with a log is a featlearn job whose log the smoke-build test reads"),
}


def lints(repo: Path) -> list[tuple[str, str]]:
    """(what, title) of every lint `snakemake --lint` prints for the workflow in ``repo``."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    proc = subprocess.run([str(SNAKEMAKE), "--lint", "--config", "scale=smoke"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    text = proc.stdout + proc.stderr
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and "Lints for" not in text):
        raise SystemExit(f"snakemake --lint failed:\n{text[-4000:]}")
    found, what = [], None
    for line in text.splitlines():
        if m := re.match(r"Lints for (.+?)(?: \(line \d+, .*\))?:$", line):
            what = m.group(1).replace(str(repo) + "/", "")
        elif (m := re.match(r" {4}\* (.+?):?$", line)) and what:
            found.append((what, m.group(1)))
    return found


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for name in ("Snakefile", "config.yaml", "workflow", "src", "profiles"):
            (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, repo / name)
        found = lints(repo)
    def is_accepted(what: str, title: str) -> bool:
        rules, _ = ACCEPTED.get(title.rstrip(".:") + ".", ((), ""))
        return rules is None or what.split(" (")[0] in rules

    accepted = [(what, title) for what, title in found if is_accepted(what, title)]
    others = [(what, title) for what, title in found if (what, title) not in accepted]
    print(f"snakemake --lint: {len(accepted)} accepted lint(s) ({', '.join(sorted({t for _, t in accepted}))}), "
          f"{len(others)} other(s)")
    for what, title in others:
        print(f"  {what}: {title}")
    if others:
        sys.exit(1)


if __name__ == "__main__":
    main()
