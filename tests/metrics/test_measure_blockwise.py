"""K_ℓ summed over blocks of points, one output at a time (``mlp_nfa.mlp_feature_covariances``), is the whole-Jacobian
formula it replaced; the MLP measurement checks its memory before spending it, and its need bounds the peak."""

import copy
import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from featlearn.data.synthetic import make_dataset
from featlearn.metrics import mlp_nfa, nfa
from featlearn.metrics.jacobians import layer_jacobians
from featlearn.metrics.measure import measure_run
from featlearn.models import build_model
from featlearn.models.mlp import MLP
from featlearn.pipeline import memory
from featlearn.train import train, training_tensors

SPEC = {
    "experiment": "t", "sweep": {}, "seed": 0,
    "data": {"task": "chain_monomial", "r": 5, "d": 8, "n": 48, "n_test": 16, "alpha": None, "seed": 0},
    "model": {"widths": [32, 24], "activation": "relu", "init_scales": [1.0, 1.0], "init_convention": "torch_std",
              "readout_scale": 1.0},
    "train": {"optimizer": "gd", "lr": 0.05, "steps": 20, "measure_every": 10},
    "measure": {"centered": True, "random_q_draws": 3},
}


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("chunk", [4, 23, 100])
def test_blockwise_k_is_the_whole_jacobian_formula(chunk, centered, dtype):
    """1e-10 in float64. A float32 Jacobian row may differ at float32 rounding with the number of rows its matrix
    products see (the BLAS kernel changes), so float32 is held to that: 1e-6."""
    torch.manual_seed(0)
    model, init = MLP(6, [7, 5, 4], out=3).to(dtype), MLP(6, [7, 5, 4], out=3).to(dtype)
    x = torch.randn(23, 6, dtype=dtype)
    jacs = [j.detach() for j in layer_jacobians(model, x)]
    j0 = [j.detach() for j in layer_jacobians(init, x)]
    ks, k_bars = mlp_nfa.mlp_feature_covariances(model, x, chunk, init if centered else None)
    assert (k_bars is not None) == centered and all(k.dtype == torch.float64 for k in ks)
    tol = 1e-10 if dtype == torch.float64 else 1e-6
    for ell, jac in enumerate(jacs):
        assert _relative(ks[ell], nfa.ptk_feature_covariance(jac)) <= tol
        if centered:
            assert _relative(k_bars[ell], nfa.ptk_feature_covariance(jac - j0[ell])) <= tol


def _run(tmp_path, centered: bool) -> tuple[dict, dict, dict]:
    spec = copy.deepcopy(SPEC)
    spec["measure"]["centered"] = centered
    data = make_dataset(spec["data"])
    return spec, data, train(spec, data, tmp_path / "r.pt", tmp_path / "r.ckpt")


@pytest.mark.parametrize("centered", [False, True])
def test_the_measurement_matches_the_whole_jacobian_formulas(tmp_path, centered):
    """The store's NFCs, dispersions and final first-layer AGOP against K from the whole J_ℓ (the code this replaced),
    J_0 from the init snapshot; 48 points are one block, so J is the same and only K's float64 sums are reordered."""
    spec, data, record = _run(tmp_path, centered)
    ds = measure_run(record, data, spec)
    x = training_tensors(data)["x"]

    def at(step: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        model = build_model(spec, data)
        model.load_state_dict(record["snapshots"][step])
        return [w.weight.detach() for w in model.hidden], [j.detach() for j in layer_jacobians(model, x)]

    w0, j0 = at(0)
    for step in ds.step.values:
        w, jacs = at(int(step))
        for ell in range(2):
            k = nfa.ptk_feature_covariance(jacs[ell])
            got = ds.sel(step=step, layer=ell + 1)
            assert float(got.uc_nfc.sel(convention="cosine")) == pytest.approx(nfa.nfc(w[ell], k), rel=1e-10)
            assert float(got.k_dispersion) == pytest.approx(nfa.eigen_dispersion(k), rel=1e-10)
            if centered and step > 0:
                k_bar = nfa.ptk_feature_covariance(jacs[ell] - j0[ell])
                dc = nfa.double_centered_nfc(w[ell], w0[ell], k_bar)
                assert float(got.dc_nfc.sel(convention="cosine")) == pytest.approx(dc, rel=1e-10)
    agop = nfa.agop(w[0].double(), nfa.ptk_feature_covariance(jacs[0]))
    np.testing.assert_allclose(ds.agop.values, agop.numpy(), rtol=1e-10, atol=1e-12 * float(agop.abs().max()))


@pytest.mark.parametrize("centered", [False, True])
def test_a_measurement_in_blocks_of_one_point_matches_one_block(tmp_path, monkeypatch, centered):
    """Every variable, within the float32 Jacobian's rounding (see the first test): one row alone takes another
    BLAS kernel than 48 together."""
    spec, data, record = _run(tmp_path, centered)
    whole = measure_run(record, data, spec)
    assert mlp_nfa.mlp_covariance_plan(MLP(8, [32, 24]), 48, centered)[0] == 48
    monkeypatch.setattr(mlp_nfa, "mlp_covariance_plan", functools.partial(mlp_nfa.mlp_covariance_plan, budget=1))
    blocks = measure_run(record, data, spec)
    assert set(blocks.data_vars) == set(whole.data_vars) and ("dc_nfc" in whole) == centered
    for name in whole.data_vars:
        np.testing.assert_allclose(blocks[name].values, whole[name].values, rtol=1e-6, atol=1e-12, err_msg=name)


def test_a_measurement_too_big_for_its_device_stops_before_the_first_snapshot(tmp_path, monkeypatch):
    data = make_dataset(SPEC["data"])
    record = train(SPEC, data, tmp_path / "r.pt", tmp_path / "r.ckpt")
    monkeypatch.setattr(memory, "available_bytes", lambda device: 10**6)
    _, need = mlp_nfa.mlp_covariance_plan(MLP(8, [32, 24]), 48, True)
    with pytest.raises(memory.MemoryNeedError, match=rf"K of 2 layers over 48 points \(48 per block\) needs "
                                                     rf"{need / 1e9:.3g} GB of memory, but cpu .* 0.001 GB available"):
        measure_run(record, data, SPEC)


PEAK = """
import re
import sys
from pathlib import Path

import torch

from featlearn.metrics import mlp_nfa
from featlearn.models.mlp import MLP

torch.set_num_threads(1)
centered = sys.argv[1] == "1"


def status(key):
    return int(re.search(key + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


torch.manual_seed(0)
model, init = MLP(256, [128, 128, 128], out=20).eval(), MLP(256, [128, 128, 128], out=20).eval()
x = torch.randn(2000, 256)
chunk, need = mlp_nfa.mlp_covariance_plan(model, len(x), centered, budget=1 << 22)
mlp_nfa.mlp_feature_covariances(model, x[:100], 50, init if centered else None)  # warm-up: BLAS buffers
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
base = status("VmRSS")
mlp_nfa.mlp_feature_covariances(model, x, chunk, init if centered else None)
print(chunk, need, status("VmHWM") - base)
"""


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's resettable peak RSS")
@pytest.mark.parametrize("centered", ["0", "1"])
def test_the_planned_need_bounds_the_measured_peak(centered):
    """Peak RSS over the call in a fresh process, every block over 64 kB mapped on its own (so a freed one leaves RSS
    at once); the need must hold it, and so must its terms besides the 64 MiB allowance to within 10% (the plan's
    docstring gives the range measured on the CIFAR-100 MLP)."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 16), "OMP_NUM_THREADS": "1"}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", PEAK, centered], capture_output=True, text=True, env=env,
                          check=True, timeout=600)
    chunk, need, peak = map(int, done.stdout.split())
    assert 2000 / 8 < chunk < 2000 / 2  # several blocks
    assert peak <= need and peak <= 1.1 * (need - (1 << 26)), f"peak {peak:,} B against a need of {need:,} B"
