import copy
import multiprocessing as mp
import os
import signal
import time

import pytest
import torch

from featlearn.data.synthetic import make_dataset
from featlearn.metrics.nfa import hidden_layer_nfcs
from featlearn.train import measurement_steps, train

SPEC = {
    "experiment": "t", "sweep": {}, "seed": 0,
    "data": {"task": "chain_monomial", "r": 3, "d": 6, "n": 32, "n_test": 16, "alpha": None, "seed": 0},
    "model": {"widths": [16, 16], "activation": "relu", "init_scales": [1.0, 1.0], "init_convention": "torch_std",
              "readout_scale": 1.0},
    "train": {"optimizer": "gd", "lr": 0.1, "steps": 40, "measure_every": 10},
    "measure": {},
}


def _spec(**train):
    spec = copy.deepcopy(SPEC)
    spec["train"].update(train)
    return spec


def _data(spec):
    return make_dataset(spec["data"])


def test_schedule_has_init_step_one_and_final():
    assert measurement_steps(25, 10) == [0, 1, 10, 20, 25]


@pytest.mark.parametrize("method", ["gd", "sgd", "adam", "slo", "slo_adaptive"])
def test_two_identical_runs_are_bitwise_identical(tmp_path, method):
    extra = {"slo": {"speeds": [1.0, 0.1, 0.1], "eps": 0.1}, "slo_adaptive": {"s": 20, "eps": 0.01},
             "batch_size": 8 if method == "sgd" else None}
    spec = _spec(optimizer=method, **extra)
    nfcs = hidden_layer_nfcs if method == "slo_adaptive" else None
    a = train(spec, _data(spec), tmp_path / "a.pt", tmp_path / "a.ckpt", layer_nfcs=nfcs)
    b = train(spec, _data(spec), tmp_path / "b.pt", tmp_path / "b.ckpt", layer_nfcs=nfcs)
    assert a["status"] == "completed"
    _assert_same_run(b, a)
    assert float(a["losses"][-1]) < float(a["losses"][0])


def test_divergence_is_recorded_not_raised(tmp_path):
    spec = _spec(lr=1e4)
    record = train(spec, _data(spec), tmp_path / "d.pt", tmp_path / "d.ckpt")
    assert record["status"] == "diverged"
    assert record["diverged_step"] is not None and record["diverged_step"] < 40
    assert all(torch.isfinite(w).all() for snap in record["snapshots"].values() for w in snap.values())
    assert torch.load(tmp_path / "d.pt", weights_only=False)["status"] == "diverged"


def _reference_and_forked_run(tmp_path, spec):
    """An uninterrupted reference run, and the same run started in a forked process (torch already loaded)."""
    data = _data(spec)
    reference = train(spec, data, tmp_path / "ref.pt", tmp_path / "ref.ckpt")
    out, ckpt = tmp_path / "run.pt", tmp_path / "run.ckpt"
    proc = mp.get_context("fork").Process(target=train, args=(spec, data, out, ckpt))
    proc.start()
    return reference, data, proc, out, ckpt


def _assert_same_run(record, reference):
    assert torch.equal(record["losses"], reference["losses"])
    for step, weights in reference["snapshots"].items():
        assert all(torch.equal(weights[k], record["snapshots"][step][k]) for k in weights)


def test_killed_run_resumes_and_matches_uninterrupted(tmp_path):
    spec = _spec(optimizer="sgd", batch_size=8, steps=4000, measure_every=50, checkpoint_seconds=0.05)
    reference, data, proc, out, ckpt = _reference_and_forked_run(tmp_path, spec)
    deadline = time.monotonic() + 60
    while not ckpt.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert not out.exists(), "the run finished before it could be killed; make it longer"
    assert ckpt.exists()
    resumed_from = torch.load(ckpt, weights_only=False)["step"]
    assert 0 < resumed_from < 4000
    record = train(spec, data, out, ckpt)
    assert not ckpt.exists()
    _assert_same_run(record, reference)


def test_sigterm_checkpoints_at_once_and_the_rerun_matches_uninterrupted(tmp_path):
    """SLURM's time limit, preemption and scancel send SIGTERM: the run saves where it is, not a minute back."""
    spec = _spec(optimizer="sgd", batch_size=8, steps=40000, measure_every=1000, checkpoint_seconds=3600)
    reference, data, proc, out, ckpt = _reference_and_forked_run(tmp_path, spec)
    time.sleep(0.5)  # forked with torch loaded: training starts within milliseconds
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(60)
    assert proc.exitcode == 1, f"exit {proc.exitcode}: 0 = finished before SIGTERM, -15 = killed before the handler"
    assert not out.exists()
    stopped_at = torch.load(ckpt, weights_only=False)["step"]
    assert 0 < stopped_at < 40000  # a periodic checkpoint would not exist yet (one per hour)
    record = train(spec, data, out, ckpt)
    _assert_same_run(record, reference)


def test_corrupted_checkpoint_is_reported_and_ignored(tmp_path, caplog):
    spec = _spec()
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"not a checkpoint")
    record = train(spec, _data(spec), tmp_path / "x.pt", ckpt)
    assert record["status"] == "completed"
    assert "unreadable" in caplog.text and str(ckpt) in caplog.text
