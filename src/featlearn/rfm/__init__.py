"""Deep Recursive Feature Machines and the kernel machinery of the collapse paper (docs/figures/collapse.md).

``DeepRFM`` (``deep_rfm``) is the estimator; ``layer`` one iteration of Algorithm 1, ``memory`` what a layer and a run
need of their device, ``kernels``, ``linalg`` and ``features`` the pieces a layer is made of.
"""

from featlearn.rfm.deep_rfm import DeepRFM

__all__ = ["DeepRFM"]
