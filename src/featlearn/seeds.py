"""Independent random streams of one run: a seed per (run seed, stream, index), derived by numpy's SeedSequence.

A run that draws its data subset, its teacher, its init and its minibatch order from one generator shifts every later
draw when one stage changes (a teacher fitted differently draws a different number of values). Keyed streams keep
each stage's draws fixed whatever the others do. The tangent experiment draws through these (``data.teacher`` and its
runs' ``seeds`` block, read by ``models.build_model`` and ``train.train``).
"""

from __future__ import annotations

import numpy as np

STREAMS = ("data", "teacher", "student", "shuffle")  # the order fixes each stream's key: append, never reorder


def stream_seed(seed: int, stream: str, index: int = 0) -> int:
    """The seed of stream ``stream`` (one of ``STREAMS``) of run seed ``seed``, for draw ``index`` (e.g. a task)."""
    if stream not in STREAMS:
        raise ValueError(f"unknown random stream {stream!r}; streams: {STREAMS}")
    return int(np.random.SeedSequence([seed, STREAMS.index(stream), index]).generate_state(1)[0])
