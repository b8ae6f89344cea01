"""Kind ``tangent_penalties`` (experiments/tangent_penalties.py): the Fig 2 penalties store."""

import numpy as np

from featlearn.pipeline.experiments.tangent_penalties import penalties_store
from featlearn.pipeline.store import check_attributes


def test_penalties_store_schema():
    ds = penalties_store({"v": {"start": 0, "stop": 5, "num": 30}, "s": {"start": 1, "stop": 6, "num": 20}})
    assert dict(ds.sizes) == {"penalty": 3, "v": 30, "s": 20}
    check_attributes(ds)
    closed = ds.omega_tilde_closed.sel(penalty=["w1", "w2"])
    np.testing.assert_allclose(ds.omega_tilde.sel(penalty=["w1", "w2"]), closed, atol=1e-9)
    np.testing.assert_allclose(ds.omega, ds.omega_closed, atol=1e-9)
