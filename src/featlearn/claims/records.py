"""A paper's claims file (results/<scale>/claims/<paper>.json): its checks, a count per verdict and the stores'
provenance, written by the claims rule and read back by the table, the report page and docs/claims.md."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict

import xarray as xr

from featlearn.claims.core import FRAGILE, TIERS, VERDICTS, Check
from featlearn.claims.diagnoses import REHEARSAL_SCALE, Evidence, Finding
from featlearn.claims.margins import Margin
from featlearn.claims.tiers import PaperMatch

PROVENANCE_ATTRS = ("scale", "data_source", "git_commit", "git_dirty", "created", "rule", "packages")


def provenance(stores: Mapping[str, xr.Dataset | None]) -> dict[str, dict[str, str] | None]:
    """Per store, its provenance attributes (scale, data source, commit, creation time, ...); None if not built."""
    return {
        name: None if ds is None else {k: str(ds.attrs[k]) for k in PROVENANCE_ATTRS if k in ds.attrs}
        for name, ds in stores.items()
    }


def to_json(paper: str, scale: str, checks: Sequence[Check], stores: Mapping[str, xr.Dataset | None]) -> str:
    """The claims file of one paper: its checks (each with its verdict, tier, margin, the paper's number against
    ours and a failure's finding with its evidence), a count per verdict and per tier, and the stores' provenance.
    ``scale`` is the build's label (the rule's TAG: "paper-rehearsal" for a rehearsal, whose file also says
    ``"rehearsal": true``)."""
    counts = {s: sum(c.verdict == s for c in checks) for s in VERDICTS}
    tiers = {t: sum(c.tier == t for c in checks) for t in TIERS}
    numbers = [c.paper_match for c in checks if c.paper_match is not None]
    doc = {"paper": paper, "scale": scale, "rehearsal": scale == REHEARSAL_SCALE, "counts": counts, "tiers": tiers,
           "paper_numbers": {"compared": len(numbers), "within": sum(m.within for m in numbers)},
           "stores": provenance(stores),
           "checks": [{**asdict(c), "verdict": c.verdict, "tier": c.tier, "fragile": c.verdict == FRAGILE}
                      for c in checks]}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)


def _evidence(e: dict) -> Evidence:
    value = e["value"]
    return Evidence(**{**e, "value": tuple(value) if isinstance(value, list) else value})


def _finding(d: dict) -> Finding:
    return Finding(**{**d, "evidence": tuple(_evidence(e) for e in d.get("evidence", ()))})


def from_json(text: str) -> tuple[dict, list[Check]]:
    """A claims file back as (its header, its checks); ``verdict``, ``tier`` and ``fragile`` are derived, so not
    read back."""
    doc = json.loads(text)
    checks = []
    for c in doc.pop("checks"):
        c = {k: v for k, v in c.items() if k not in ("verdict", "tier", "fragile")}
        checks.append(Check(**{**c, "stores": tuple(c["stores"]), "standin": tuple(c.get("standin", ())),
                               "diagnosis": _finding(c["diagnosis"]) if c.get("diagnosis") else None,
                               "margin": Margin(**c["margin"]) if c.get("margin") else None,
                               "paper_match": PaperMatch(**c["paper_match"]) if c.get("paper_match") else None}))
    return doc, checks
