"""The claims table, the HTML page and the README block are generated from the checks."""

import pytest

from featlearn.claims.core import FAILED, NOT_MEASURED, PASSED, Check
from featlearn.claims.diagnoses import CONSTRUCTION, Evidence, Finding
from featlearn.claims.report import built_line, html_page, markdown_table, markers, readme_block, update_readme

WHY = Finding(CONSTRUCTION, "the printed spike dominates", "x/d", "at every scale")


def _check(status: str, measured: str = "0.5", note: str = "scale quick") -> Check:
    return Check("fig1.x", "alignment", "1", "ρ is high | really.", "0.93", "≥ 0.8", ("chain_fig1",), status,
                 measured, 0.5, note, WHY if status == FAILED else None)


PAPERS = {"alignment": ({"paper": "alignment", "scale": "quick",
                         "counts": {PASSED: 1, FAILED: 1, NOT_MEASURED: 1},
                         "stores": {"chain_fig1": {"scale": "quick", "git_commit": "abcdef1234567", "git_dirty": "1"},
                                    "real_mlp": None}},
                        [_check(PASSED), _check(FAILED, "0.12"), _check(NOT_MEASURED, "", "store real_mlp not built")])}


def test_markdown_has_one_row_per_claim_with_verdicts_and_escaped_pipes():
    table = markdown_table(PAPERS)
    rows = [line for line in table.splitlines() if line.startswith("| alignment")]
    assert len(rows) == 3
    assert "ρ is high \\| really." in rows[0] and "✅ direction reproduced" in rows[0]
    assert "0.12" in rows[1]
    assert "❌ failed (paper's construction [at every scale]: the printed spike dominates (tried: x/d))" in rows[1]
    assert "not measured (store real_mlp not built)" in rows[2]
    assert table.startswith("Scale quick: alignment 0 paper's numbers reproduced, 1 directions reproduced, 0 on "
                            "stand-ins, 0 not informative, 0 not trained, 0 fragile, 1 failed, 1 not measured")


def test_html_page_shows_claims_and_provenance():
    page = html_page(PAPERS)
    assert page.count('<tr class="failed">') == 1 and "abcdef1234 (dirty)" in page and "not built" in page
    assert "the printed spike dominates" in page


def test_a_finding_s_text_is_filled_with_its_evidence_and_the_page_lists_where_each_number_came_from():
    quoted = Finding(CONSTRUCTION, "ρ_2nd stays at {low:.3f} ({seeds})", "", "at every scale",
                     (Evidence("low", 0.99912, "lowest ρ_2nd", "reversing: rho_observed"),
                      Evidence("seeds", (0.9991, None), "ρ_2nd per seed", "reversing: rho_observed")))
    failed = Check("fig3.reversal", "alignment", "3", "ρ falls.", "", "≤ 0.9", ("reversing",), FAILED, "1", 1.0,
                   "scale quick", quoted)
    papers = {"alignment": (PAPERS["alignment"][0], [failed])}
    row = next(line for line in markdown_table(papers).splitlines() if line.startswith("| alignment"))
    assert "(paper's construction [at every scale]: ρ_2nd stays at 0.999 (0.999 / nan))" in row
    page = html_page(papers)
    assert "ρ_2nd stays at 0.999 (0.999 / nan)" in page
    assert "<li>low = 0.999: lowest ρ_2nd (reversing: rho_observed)</li>" in page


def test_a_rehearsal_says_so_in_the_table_header():
    header = {**PAPERS["alignment"][0], "scale": "paper-rehearsal", "rehearsal": True}
    table = markdown_table({"alignment": (header, PAPERS["alignment"][1])})
    assert table.startswith("Scale paper-rehearsal (a rehearsal: ")
    assert "claims test the pipeline, not the papers" in table.splitlines()[0]
    assert "rehearsal" not in markdown_table(PAPERS).splitlines()[0]


QUICK_BEGIN, QUICK_END = markers("quick")
PAPER_BEGIN, PAPER_END = markers("paper")
README = (f"# title\n\n{QUICK_BEGIN}\nold quick\n{QUICK_END}\n\n## Claims at the paper scale\n\n"
          f"{PAPER_BEGIN}\nold paper\n{PAPER_END}\n\nmore\n")


def test_each_scale_rewrites_its_own_block_and_keeps_the_other():
    paper = update_readme(README, "| paper table |\n", "paper")
    assert "old quick" in paper and "old paper" not in paper and "| paper table |" in paper
    assert paper.index("| paper table |") > paper.index(PAPER_BEGIN) and paper.endswith(f"{PAPER_END}\n\nmore\n")
    assert "`snakemake claims_doc --config scale=paper` from results/paper/claims/*.json" in paper
    both = update_readme(paper, "| quick table |\n", "quick")
    assert "old quick" not in both and "| paper table |" in both and "| quick table |" in both
    assert both.index("| quick table |") < both.index(QUICK_END) < both.index("| paper table |")
    assert update_readme(both, "| quick table |\n", "quick") == both  # idempotent


def test_the_rehearsal_and_smoke_never_reach_the_readme():
    for scale in ("paper-rehearsal", "smoke"):
        with pytest.raises(ValueError, match="not 'paper-rehearsal'|not 'smoke'"):
            update_readme(README, "| t |\n", scale)


def test_readme_without_a_scale_s_markers_names_them():
    with pytest.raises(ValueError, match="claims:paper:begin"):
        update_readme(f"# only quick\n{QUICK_BEGIN}\n{QUICK_END}\n", "| t |\n", "paper")
    with pytest.raises(ValueError, match="claims:quick:begin"):
        update_readme("# no markers\n", "| t |\n", "quick")


FIGURES = {"alignment": {1: ("chain_fig1",), 2: ("real_mlp", "vgg_cifar"), 3: ("reversing",), 4: ("slo_sweep",),
                         5: ("init_sweep",), 6: ("init_sweep",)},
           "tangent": {1: ("tangent_mnist",), 2: ("tangent_penalties",)}}


def _built(scale: str, **stores: bool) -> dict:
    return {"scale": scale, "counts": {PASSED: 1, FAILED: 0, NOT_MEASURED: 1},
            "stores": {name: {"scale": scale} if built else None for name, built in stores.items()}}


def test_the_built_line_names_the_figures_whose_stores_were_built():
    papers = {"alignment": (_built("paper", chain_fig1=True, real_mlp=True, vgg_cifar=False, reversing=True,
                                   slo_sweep=True, init_sweep=True), []),
              "tangent": (_built("paper", tangent_mnist=False, tangent_penalties=True), [])}
    line = built_line(papers, FIGURES)
    assert line == ("Figures built at scale paper: alignment Figs 1, 3–6 of 6; tangent Fig 2 of 2. Claims whose "
                    "stores were not built are \"not measured\".")
    assert "alignment none of 6" in built_line({"alignment": (_built("paper", chain_fig1=False), [])},
                                               {"alignment": FIGURES["alignment"]})
    block = readme_block(papers, FIGURES)
    assert block.startswith(line + "\n\nScale paper: alignment 0 paper's numbers reproduced, 0 directions reproduced")
