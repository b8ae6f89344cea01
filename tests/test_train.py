import copy
import multiprocessing as mp
import os
import signal
import time

import pytest
import torch

from featlearn.data.synthetic import make_dataset
from featlearn.metrics.nfa import hidden_layer_nfcs
from featlearn.models.mlp import MLP, init_mlp
from featlearn.train import annealed_lr, cosine_lr, measurement_steps, train

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


@pytest.mark.parametrize("method", ["gd", "sgd", "adam", "adamw", "slo", "slo_adaptive"])
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


def test_adaptive_slo_without_its_measurement_names_it(tmp_path):
    spec = _spec(optimizer="slo_adaptive", slo_adaptive={"s": 20, "eps": 0.01})
    with pytest.raises(ValueError, match="adaptive SLO needs layer_nfcs"):
        train(spec, _data(spec), tmp_path / "a.pt", tmp_path / "a.ckpt")
    assert not (tmp_path / "a.pt").exists()


@pytest.mark.parametrize(("t_max", "epochs"), [(7, 7), (4, 19), (100, 400)])
def test_cosine_annealing_replays_pytorchs_scheduler_bit_for_bit(t_max, epochs):
    """Restarts after t_max included (the tangent teacher's 100 of 400 epochs): the closed form differs in the last
    bits, which SGD amplifies over hundreds of epochs."""
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max)
    for epoch in range(epochs):
        assert annealed_lr(0.1, epoch, t_max) == opt.param_groups[0]["lr"], epoch
        opt.step()
        scheduler.step()


def test_lr_schedule_warmup_and_cosine_endpoints():
    lr, min_lr, warmup, decay = 5e-3, 1e-4, 100, 5000
    assert cosine_lr(0, lr, min_lr, warmup, decay) == pytest.approx(lr / 101)
    assert cosine_lr(99, lr, min_lr, warmup, decay) == pytest.approx(lr * 100 / 101)
    assert cosine_lr(100, lr, min_lr, warmup, decay) == pytest.approx(lr)
    assert cosine_lr((warmup + decay) // 2, lr, min_lr, warmup, decay) == pytest.approx((lr + min_lr) / 2)
    assert cosine_lr(5000, lr, min_lr, warmup, decay) == pytest.approx(min_lr)
    assert cosine_lr(9000, lr, min_lr, warmup, decay) == min_lr


def test_momentum_cosine_and_seed_streams_match_a_plain_pytorch_loop(tmp_path):
    """SGD with momentum, CosineAnnealingLR stepped per epoch, a reshuffle per epoch from ``seeds.shuffle`` and the
    init from ``seeds.init``, bias and He-normal init: the loop equals the textbook loop bit for bit."""
    spec = copy.deepcopy(SPEC)
    spec["model"].update(init_convention="he_normal", bias=True)
    spec["seeds"] = {"init": 123, "shuffle": 456}
    spec["train"] = {"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "epochs": 6, "batch_size": 10,
                     "cosine_annealing": {"t_max": 4}, "measure_every": 6}
    data = _data(spec)
    record = train(spec, data, tmp_path / "r.pt", tmp_path / "r.ckpt")
    model = init_mlp(MLP(6, [16, 16], bias=True), [1.0, 1.0], torch.Generator().manual_seed(123), "he_normal")
    assert all(torch.equal(v, record["snapshots"][0][k]) for k, v in model.state_dict().items())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    shuffle, x, y, losses = torch.Generator().manual_seed(456), data["x"].float(), data["y"].float(), []
    for _ in range(6):
        for batch in torch.randperm(len(x), generator=shuffle).split(10):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[batch])[:, 0], y[batch])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        scheduler.step()
    assert record["losses"][:-1].tolist() == losses and sorted(record["snapshots"]) == [0, 24]
    assert all(torch.equal(v, record["snapshots"][24][k]) for k, v in model.state_dict().items())


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
