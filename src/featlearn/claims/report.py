"""The claims of all papers as a markdown table (docs/claims.md, results/<scale>/claims/table.md) and as one HTML
page (the Snakemake report's "Claims" item), both generated from the per-paper claims files, never typed by hand.

docs/claims.md keeps one claims block per scale in ``README_SCALES``, between ``<!-- claims:<scale>:begin -->`` and
``<!-- claims:<scale>:end -->``; a rehearsal's or a smoke build's claims never reach it."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from featlearn.claims.core import (
    DIRECTION,
    FAILED,
    FRAGILE,
    NOT_INFORMATIVE,
    NOT_MEASURED,
    NOT_TRAINED,
    NUMBER,
    PASSED,
    STANDIN,
    TIERS,
    Check,
)
from featlearn.claims.diagnoses import REHEARSAL_SCALE, Evidence, Finding, fill
from featlearn.claims.margins import ROUNDING, TWIN_FACTOR, margin_text
from featlearn.claims.reading import fmt

README_SCALES = ("quick", "paper")  # the scales whose claims docs/claims.md shows, one block each
VERDICT = {PASSED: "✅ passed", FRAGILE: "⚠️ fragile", FAILED: "❌ failed", NOT_MEASURED: "— not measured",
           NOT_TRAINED: "⏸️ not trained", NOT_INFORMATIVE: "➖ not informative"}
TIER = {NUMBER: "✅ reproduced: direction and the paper's number", DIRECTION: "✅ direction reproduced",
        STANDIN: "🔶 passed on stand-ins"}

Paper = tuple[dict, list[Check]]  # (the claims file's header: paper, scale, counts, stores; its checks)


def finding_text(f: Finding) -> str:
    """'open [at the paper scale, 3 seeds]: why (tried: …)', the finding's texts filled with its evidence."""
    where = f" [{f.holds}]" if f.holds else ""
    tried = fill(f.tried, f.evidence)
    return f"{f.cause}{where}: {fill(f.why, f.evidence)}" + (f" (tried: {tried})" if tried else "")


def evidence_text(e: Evidence) -> str:
    """'uc_low = 0.907: what it is (slo_sweep: uc_nfc)', one number a finding quotes, with where it came from."""
    return f"{e.name} = {fill('{' + e.name + '}', (e,))}: {e.what} ({e.source})"


def fragile_text(c: Check) -> str:
    """'passed by 0.004; seeds move it by 0.02': why a fragile verdict is neither passed nor failed."""
    if c.margin is None:
        return ""
    return f"{c.status} by {fmt(abs(c.margin.margin))}; {c.margin.source} move it by {fmt(c.margin.moved_by)}"


def _cell(text: str) -> str:
    """Markdown table cell: no pipes or newlines."""
    return " ".join(str(text).replace("|", "\\|").split())


def scale_of(papers: Mapping[str, Paper]) -> str:
    """The scale label of the claims files ("paper-rehearsal" for a rehearsal's); several are joined by commas."""
    return ", ".join(sorted({str(header["scale"]) for header, _ in papers.values()}))


REHEARSAL_NOTE = (" (a rehearsal: the paper's shapes for a few optimizer steps, the first seed and two snapshots; its "
                  "claims test the pipeline, not the papers)")


def _tiers(checks: Sequence[Check]) -> str:
    """'3 paper's numbers reproduced, 20 directions reproduced, 9 on stand-ins, ... (paper's numbers: 3 of 7
    compared within tolerance)': each claim counted once, by what its verdict stands on."""
    counts = {t: sum(c.tier == t for c in checks) for t in TIERS}
    plural = {NUMBER: "paper's numbers reproduced", DIRECTION: "directions reproduced"}
    numbers = [c.paper_match for c in checks if c.paper_match is not None]
    return (", ".join(f"{n} {plural.get(t, t)}" for t, n in counts.items())
            + f" (paper's numbers: {sum(m.within for m in numbers)} of {len(numbers)} compared within tolerance)")


def summary(papers: Mapping[str, Paper]) -> str:
    """'Scale quick: alignment 3 paper's numbers reproduced, 20 directions reproduced, 9 on stand-ins, ...; ...', each
    claim counted once by what its verdict stands on, saying so for a rehearsal."""
    parts = [f"{name} {_tiers(checks)}" for name, (_, checks) in papers.items()]
    rehearsal = any(header.get("rehearsal") or header["scale"] == REHEARSAL_SCALE for header, _ in papers.values())
    return f"Scale {scale_of(papers)}{REHEARSAL_NOTE if rehearsal else ''}: " + "; ".join(parts) + "."


def _numbers(figures: Sequence[str]) -> str:
    """'1, 3–12' from ['1', '3', ..., '12']: runs of consecutive figure numbers joined by an en dash."""
    ns = sorted(int(n) for n in figures)
    runs: list[list[int]] = []
    for n in ns:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def built_line(papers: Mapping[str, Paper], figure_stores: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """One line: which figures of each paper were built at this scale (every store a figure draws is in the
    claims file, built), and that the claims of the others are "not measured".

    ``figure_stores`` maps each paper to {figure number: the experiments its figure draws}.
    """
    parts = []
    for name, figures in figure_stores.items():
        header = papers[name][0] if name in papers else {"stores": {}}
        built = [n for n, stores in figures.items()
                 if all(header["stores"].get(s) is not None for s in stores)]
        figs = "none" if not built else f"Fig {built[0]}" if len(built) == 1 else f"Figs {_numbers(built)}"
        parts.append(f"{name} {figs} of {len(figures)}")
    return (f"Figures built at scale {scale_of(papers)}: " + "; ".join(parts) + ". Claims whose stores were not "
            "built are \"not measured\".")


def readme_block(papers: Mapping[str, Paper], figure_stores: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """What docs/claims.md shows of one scale: the figures built, then the claims table."""
    return built_line(papers, figure_stores) + "\n\n" + markdown_table(papers)


def markdown_table(papers: Mapping[str, Paper]) -> str:
    """One row per claim: paper, figure, claim, paper value, measured, margin, verdict (with a failure's diagnosis,
    what makes a verdict fragile, and why a claim was not measured)."""
    lines = [summary(papers), "",
             "| paper | fig | claim | paper value | check | measured | vs the paper's number | margin | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, (_, checks) in papers.items():
        for c in checks:
            cells = (name, c.figure, c.statement, c.paper_value or "—", c.criterion, c.measured or "—",
                     c.paper_match.text if c.paper_match else "—", margin_text(c.margin) or "—", verdict(c))
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def verdict(c: Check) -> str:
    """'✅ direction reproduced', '🔶 passed on stand-ins (CIFAR-10 …)', '⚠️ fragile (passed by 0.004; seeds move it
    by 0.02)', '❌ failed (diagnosis)', '⏸️ not trained (runs)', '— not measured (note)': the verdict a reader sees,
    with what it rests on."""
    shown = TIER.get(c.tier) or VERDICT[c.verdict]
    return shown + (f" ({fragile_text(c)})" if c.verdict == FRAGILE else "") + _reason(c)


def _reason(c: Check) -> str:
    """' (diagnosis)' of a failure, ' (note)' of a claim not measured, not trained or not informative, ' (the
    stand-ins)' of a pass on them, '' for a pass on real data."""
    if c.diagnosis is not None:
        return f" ({finding_text(c.diagnosis)})"
    if c.status in (NOT_MEASURED, NOT_TRAINED, NOT_INFORMATIVE):
        return f" ({c.note})"
    return f" ({'; '.join(c.standin)})" if c.tier == STANDIN else ""


def markers(scale: str) -> tuple[str, str]:
    """The lines of docs/claims.md that enclose one scale's claims block."""
    return f"<!-- claims:{scale}:begin -->", f"<!-- claims:{scale}:end -->"


def update_readme(text: str, block: str, scale: str, doc: str = "docs/claims.md") -> str:
    """``text`` (of the file ``doc``) with everything between ``scale``'s claims markers replaced by ``block``; the
    rest (other scales' blocks included) stays as written. Only the scales of ``README_SCALES`` have a block."""
    if scale not in README_SCALES:
        raise ValueError(f"{doc} shows the claims of the scales {', '.join(README_SCALES)}, not {scale!r}")
    begin, end = markers(scale)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{doc} needs exactly one '{begin}' line followed by one '{end}' line, "
                         f"where the {scale} scale's claims go")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    command = "snakemake claims_doc" + ("" if scale == "quick" else f" --config scale={scale}")
    note = (f"<!-- generated by `{command}` from results/{scale}/claims/*.json; edits here are overwritten -->")
    return f"{head}{begin}\n{note}\n\n{block.rstrip()}\n\n{end}{tail}"


def write_text(path: str | Path, text: str) -> None:
    """Write through a temporary file and a rename, so a killed job leaves the old file, not half a new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


STYLE = """
body { font-family: system-ui, sans-serif; font-size: 13px; margin: 1em; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tr.passed td.verdict { background: #dff0d8; }
tr.failed td.verdict { background: #f2dede; }
tr.fragile td.verdict { background: #fcf8e3; }
tr.not-measured td { color: #777; }
code { font-size: 11px; }
ul.evidence { margin: 3px 0 0 1em; padding: 0; color: #555; }
"""


def _rows(checks: Sequence[Check]) -> str:
    out = []
    for c in checks:
        cells = (c.figure, c.statement, c.paper_value or "—", c.criterion, c.measured or "—",
                 c.paper_match.text if c.paper_match else "—", margin_text(c.margin) or "—")
        shown = (TIER.get(c.tier) or VERDICT[c.verdict]) + (f" ({fragile_text(c)})" if c.verdict == FRAGILE else "")
        out.append(f'<tr class="{c.verdict.replace(" ", "-")}">' + "".join(f"<td>{html.escape(x)}</td>" for x in cells)
                   + f'<td class="verdict">{html.escape(shown)}</td>'
                   + f"<td>{_diagnosis(c.diagnosis)}</td>"
                   + f"<td>{html.escape(c.note)}</td><td><code>{html.escape(c.id)}</code></td></tr>")
    return "\n".join(out)


def _diagnosis(f: Finding | None) -> str:
    """A finding's text, then each number it quotes with what it is and the store and variable it came from."""
    if f is None:
        return ""
    quoted = "".join(f"<li>{html.escape(evidence_text(e))}</li>" for e in f.evidence)
    return html.escape(finding_text(f)) + (f"<ul class='evidence'>{quoted}</ul>" if quoted else "")


def _provenance(stores: Mapping[str, Mapping[str, str] | None]) -> str:
    rows = []
    for name, attrs in stores.items():
        if attrs is None:
            rows.append(f"<tr class='not-measured'><td>{html.escape(name)}</td><td colspan='5'>not built</td></tr>")
            continue
        commit = attrs.get("git_commit", "?")[:10] + (" (dirty)" if attrs.get("git_dirty") == "1" else "")
        cells = (name, attrs.get("scale", "?"), attrs.get("data_source", "?"), commit, attrs.get("created", "?"),
                 attrs.get("packages", "?"))
        rows.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells) + "</tr>")
    return ("<table><tr><th>store</th><th>scale</th><th>data</th><th>git commit</th><th>created</th>"
            "<th>packages</th></tr>" + "\n".join(rows) + "</table>")


def html_page(papers: Mapping[str, Paper]) -> str:
    """One self-contained page: the summary, a claims table per paper, and each paper's store provenance."""
    sections = []
    for name, (header, checks) in papers.items():
        sections.append(
            f"<h2>{html.escape(name)}</h2>"
            "<table><tr><th>fig</th><th>claim</th><th>paper</th><th>check</th><th>measured</th><th>vs the paper</th>"
            "<th>margin</th>"
            "<th>verdict</th>"
            f"<th>diagnosis</th><th>note</th><th>id</th></tr>{_rows(checks)}</table>"
            f"<h3>{html.escape(name)}: metric stores</h3>{_provenance(header['stores'])}")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>featlearn claims</title>"
            f"<style>{STYLE}</style></head><body><h1>Claims checked against the metric stores</h1>"
            f"<p>{html.escape(summary(papers))} A failed claim is reported with its numbers and its diagnosis (the "
            "cause: quick scale, stand-in data, the paper's own construction, the rehearsal, or open; in brackets the "
            "condition under which it holds, checked on these stores) and never stops the build; the note gives the "
            "scale, the seeds and any stand-in data it was measured on. The margin is how far the deciding part of "
            "the check is from its threshold (positive on the passing side; relative to the threshold where that is "
            "not 0) and what moves it: the sample sd of that number over the seeds, each seed checked alone, where "
            f"two or more ran; else {TWIN_FACTOR:g}× its gap to the same check on the runs' rounding twins (every "
            f"initial weight one unit in the last place away); else a rounding floor of {ROUNDING:g} relative. A "
            "verdict within that is \"fragile\", neither passed nor failed. A pass on real data is \"direction "
            "reproduced\", and \"reproduced\" where the paper's number is also met within its spread (or 10% of it); "
            "a pass on stand-in data is counted apart; a claim about trained networks whose real-data runs did not "
            "train reads \"not trained\"; a check whose inputs cannot tell its outcomes apart reads \"not "
            "informative\".</p>"
            + "\n".join(sections) + "</body></html>\n")
