"""The papers' claims as checks over the metric stores: one package per paper, one module per figure, as the figures.

A claim (``core``) is a check over named stores that returns its criterion as terms and the facts a diagnosis reads
(``terms``), through the store readers of ``reading``; a failure carries the finding of its diagnosis, its evidence
kept as numbers with their source (``diagnoses``), and every verdict its margin (``margins``). ``records`` writes a
paper's checks to its claims file and reads them back; ``report`` renders them: the markdown table, the HTML page of
the Snakemake report and the blocks of docs/claims.md, filling each finding's text with its evidence.

``REGISTRY`` maps each paper to its list of claims, in figure order.
"""

from featlearn.claims import alignment, collapse, tangent
from featlearn.claims.core import Claim

REGISTRY: dict[str, list[Claim]] = {
    "alignment": alignment.CLAIMS,
    "collapse": collapse.CLAIMS,
    "tangent": tangent.CLAIMS,
}
