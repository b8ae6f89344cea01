"""The claims table, the HTML page and the README block are generated from the checks."""

import pytest

from featlearn.claims.core import CONSTRUCTION, FAILED, NOT_MEASURED, PASSED, Check, Diagnosis
from featlearn.claims.report import BEGIN, END, html_page, markdown_table, update_readme

WHY = Diagnosis(CONSTRUCTION, "the printed spike dominates", "x/d")


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
    assert "ρ is high \\| really." in rows[0] and "✅ passed" in rows[0]
    assert "0.12" in rows[1] and "❌ failed (paper's construction: the printed spike dominates (tried: x/d))" in rows[1]
    assert "not measured (store real_mlp not built)" in rows[2]
    assert table.startswith("Scale quick: alignment 1 passed, 1 failed, 1 not measured.")


def test_html_page_shows_claims_and_provenance():
    page = html_page(PAPERS)
    assert page.count('<tr class="failed">') == 1 and "abcdef1234 (dirty)" in page and "not built" in page
    assert "the printed spike dominates" in page


def test_readme_block_is_replaced_and_the_rest_kept():
    readme = f"# title\n\ntext\n\n{BEGIN}\nold table\n{END}\n\nmore\n"
    new = update_readme(readme, "| new |\n")
    assert new.startswith("# title\n\ntext\n\n") and new.endswith(f"{END}\n\nmore\n")
    assert "old table" not in new and "| new |" in new
    assert update_readme(new, "| new |\n") == new  # idempotent


def test_readme_without_markers_names_them():
    with pytest.raises(ValueError, match="claims:begin"):
        update_readme("# no markers\n", "| t |\n")
