"""featlearn: regenerate the figures of three feature-learning papers as Snakemake targets, and measure their
quantities on any nn.Module (``measure_nfa``, ``agop``, the collapse metrics) or with Deep RFM (``DeepRFM``, a
scikit-learn style estimator).

The library names are imported on first use: every pipeline job imports this package, and most of them
(figures, claims, planning) must not pay for torch.
"""

from __future__ import annotations

import importlib

# library name -> the module defining it (a dispatch table, so featlearn.pipeline.deps follows no job into these
# modules)
DISPATCH = {
    "measure_nfa": "featlearn.metrics.model_nfa",
    "agop": "featlearn.metrics.model_nfa",
    "collapse_metrics": "featlearn.metrics.collapse",
    "nc1": "featlearn.metrics.collapse",
    "nc2": "featlearn.metrics.collapse",
    "nfa_correlation": "featlearn.metrics.collapse",
    "DeepRFM": "featlearn.rfm.deep_rfm",
}
__all__ = list(DISPATCH)


def __getattr__(name: str) -> object:
    if name not in DISPATCH:
        raise AttributeError(f"module 'featlearn' has no attribute {name!r}")
    return getattr(importlib.import_module(DISPATCH[name]), name)
