"""The papers' claims as checks over the metric stores (``core``), one module of claims per paper.

``REGISTRY`` maps each paper to its list of claims; ``report`` turns the per-paper results into the markdown
table, the HTML page of the Snakemake report and the README block.
"""

from featlearn.claims import alignment, collapse, tangent
from featlearn.claims.core import Claim

REGISTRY: dict[str, list[Claim]] = {
    "alignment": alignment.CLAIMS,
    "collapse": collapse.CLAIMS,
    "tangent": tangent.CLAIMS,
}
