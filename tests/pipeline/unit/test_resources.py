import math

import pytest

from featlearn.pipeline.projection import GPU_MARGIN
from featlearn.pipeline.resources import (
    CUDA_CONTEXT_MB,
    DataShape,
    GpuMemoryError,
    check_cards,
    data_shape,
    deep_rfm_bytes,
    gpu_cards,
    gpu_need_mb,
    gpus,
    job_resources,
    measure_bytes,
    saved_bytes,
    training_bytes,
)

STAGES = ("train", "measure", "combine", "data", "figure")
KINDS = ("training", "network", "deep_rfm", "reversing", "tangent_mnist")


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_who_asks_for_a_gpu(scale, stage, kind):
    trained = kind in ("training", "network", "tangent_mnist")
    on_device = kind in ("training", "network", "deep_rfm")
    computes = (stage == "train" and trained) or (stage == "measure" and on_device)
    heavy = kind in ("network", "deep_rfm")
    assert gpus("cpu", scale, stage, kind) == 0
    assert gpus("cuda", scale, stage, kind) == int(computes)
    assert gpus("auto", scale, stage, kind) == int(computes and scale == "paper" and heavy)


def test_job_resources_carry_the_gpu_request():
    assert job_resources("auto", "paper", "train", "network")["gpu"] == 1
    assert job_resources("auto", "quick", "train", "network")["gpu"] == 0
    assert set(job_resources("cpu", "smoke", "measure", "training")) == {"runtime", "mem_mb", "gpu", "gpu_mem_mb"}


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_asks_for_more_time_and_memory(scale, stage, kind):
    """Snakemake's `attempt` (a resubmission after running out of time or memory) scales every job's requests."""
    one, two = (job_resources("auto", scale, stage, kind, None, attempt) for attempt in (1, 2))
    assert (two["runtime"], two["mem_mb"]) == (2 * one["runtime"], 2 * one["mem_mb"])
    assert two["gpu"] == one["gpu"]


def test_a_projected_job_grows_with_the_attempt_but_its_gpu_memory_does_not():
    """A retry asks for more time and host memory; the GPU memory measured at the paper's shapes is the same peak
    on every attempt (more would be capped at the card by Snakemake anyway), plus the CUDA context torch omits."""
    row = {"hours": "1.5", "peak_mb": "3000", "cuda_peak_mb": "5000", "device": "cuda:0"}
    one, two = (job_resources("auto", "paper", "train", "network", row, attempt) for attempt in (1, 2))
    assert all(two[key] > one[key] for key in ("runtime", "mem_mb")), (one, two)
    assert one["gpu_mem_mb"] == two["gpu_mem_mb"] == math.ceil(5000 * 1.048576 * GPU_MARGIN) + CUDA_CONTEXT_MB


# The paper's units, as the Snakefile plans them (the rehearsal keeps these shapes).
RELU = {"model": {"activation": "relu", "width": 1024, "depth": 20}}
CIFAR = {"dataset": "cifar10", "source": "real", "n": 50000, "n_test": 0, "standardize": "feature",
         "targets": "signed", "flatten": True, "sort_by_class": True}
REAL_MLP = {"model": {"widths": [256] * 5, "activation": "relu", "init_scales": [1.0] * 5,
                      "init_convention": "torch_std", "readout_scale": 1.0},
            "train": {"optimizer": "sgd", "batch_size": 128}, "measure": {"family": "nfa"}, "seed": 0}
REAL_MLP_DATA = {**CIFAR, "n_test": 10000, "standardize": "channel", "targets": "shifted", "sort_by_class": False}


def test_deep_rfm_asks_for_what_its_own_code_says_it_needs_with_the_context():
    """Deep RFM's request is the algorithm's own statement of its need: the whole run's (``rfm.deep_rfm.run_bytes``)
    where the code has one, else X (N, d) float64 plus the larger of layer 1 on X and a later layer on the features
    (N, width) it holds (``layer_bytes``)."""
    from featlearn.rfm import deep_rfm

    n, d, w = 50000, 3072, 1024
    if hasattr(deep_rfm, "run_bytes"):
        expected = deep_rfm.run_bytes(n, d, w)
    else:
        expected = 8 * n * d + max(deep_rfm.layer_bytes(n, d, w), 8 * n * w + deep_rfm.layer_bytes(n, w, w))
    assert deep_rfm_bytes(RELU, [CIFAR]) == expected > 4 * n * n  # at least one N×N float64 buffer
    assert gpu_need_mb("measure", "deep_rfm", RELU, [CIFAR]) == math.ceil(expected / 1e6) + CUDA_CONTEXT_MB


def test_data_shapes_come_from_the_block_alone():
    assert data_shape(CIFAR) == DataShape(50000, 0, (3072,), 10)
    assert data_shape({**CIFAR, "flatten": False, "targets": "scalar", "n_test": None}) == DataShape(
        50000, 10000, (3, 32, 32), 1)
    assert data_shape({"task": "chain_monomial", "d": 32, "n": 256, "n_test": 2000}) == DataShape(256, 2000, (32,), 1)
    assert data_shape({"dataset": "gtsrb", "source": "real", "n": 50000, "n_test": 0}).n == 26640  # all it holds


def test_offline_and_corpus_shapes_come_from_the_registry():
    """Offline, the points are the stand-ins' digits (4,500 / 500), not the real split's; a corpus's outputs are its
    vocabulary."""
    from featlearn.data import registry

    offline = data_shape({"dataset": "cifar100", "source": "offline", "n": "all", "n_test": 10_000})
    assert (offline.n, offline.n_test) == (registry.OFFLINE_SIZES["train"], registry.OFFLINE_SIZES["test"])
    assert offline.outputs == 100 and offline.shape == (3, 32, 32)
    assert data_shape({"dataset": "svhn", "source": "real", "n": 100}).n_test == registry.N_TEST  # the loader's default
    assert data_shape({"dataset": "shakespeare_char", "source": "real"}) == DataShape(1, 0, (), 65)


def test_planning_data_shapes_are_what_the_data_stage_prepares():
    """The planner's shape of an offline block is the prepared file's, for every stand-in."""
    from featlearn.data import standins

    for name in standins.STANDINS:
        block = {"dataset": name, "source": "offline", "n": 12, "n_test": 5, "flatten": name != "celeba"}
        data = standins.from_block(block, "/nonexistent")
        planned = data_shape(block)
        assert (planned.n, planned.n_test) == (len(data["x_train"]), len(data["x_test"])), name
        assert planned.shape == tuple(data["x_train"].shape[1:]) and planned.outputs == data["y_train"].shape[1]


def test_training_counts_parameters_optimizer_data_and_a_batch():
    """Parameters, their gradients and optimizer state (Adam keeps one more copy than SGD), the training set, and
    one batch's saved activations twice, which grow with the batch."""
    import torch

    from featlearn.models import build_model

    sgd = training_bytes(REAL_MLP, [REAL_MLP_DATA])
    bigger = training_bytes({**REAL_MLP, "train": {"optimizer": "sgd", "batch_size": 256}}, [REAL_MLP_DATA])
    adam = training_bytes({**REAL_MLP, "train": {"optimizer": "adam", "batch_size": 128}}, [REAL_MLP_DATA])
    model = build_model(REAL_MLP, {"x": torch.empty(1, 3072), "y": torch.empty(1, 10)})
    params = sum(p.numel() * 4 for p in model.parameters())
    assert adam - sgd == params
    data = 4 * 50000 * (3072 + 10)
    model = model.to("meta")
    saved = {b: saved_bytes(model, torch.empty(b, 3072, device="meta")) for b in (128, 256)}
    assert sgd == 3 * params + data + 2 * saved[128]
    assert bigger - sgd == 2 * (saved[256] - saved[128]) > 0


def test_saved_bytes_counts_what_backward_keeps():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(), torch.nn.Linear(20, 1)).to("meta")
    x = torch.empty(8, 10, device="meta")
    # linear 1 keeps x (for its weight's gradient; x needs none, so not W); ReLU its output (8×20); linear 2 that
    # output and Wᵀ (20×1); plus the output (8×1)
    assert saved_bytes(model, x) == 4 * (8 * 10 + 8 * 20 + 8 * 20 + 20 * 1 + 8 * 1)


def test_the_mlp_measurement_asks_for_its_k_plan():
    from featlearn.metrics.mlp_nfa import mlp_covariance_plan

    base = measure_bytes(REAL_MLP, [REAL_MLP_DATA])
    centered = measure_bytes({**REAL_MLP, "measure": {"family": "nfa", "centered": True}}, [REAL_MLP_DATA])
    model = build_meta(REAL_MLP)
    plan, plan_centered = (mlp_covariance_plan(model, 50000, c)[1] for c in (False, True))
    assert centered - base == plan_centered - plan > 0


def build_meta(unit):
    from featlearn.pipeline.resources import _meta_model

    return _meta_model(unit, data_shape(REAL_MLP_DATA))


def test_gpu_jobs_ask_for_their_memory_and_cpu_jobs_for_none():
    unit = {**REAL_MLP, "model": {**REAL_MLP["model"], "arch": "mlp"}}
    on_gpu = job_resources("cuda", "paper", "train", "network", None, 1, unit, [REAL_MLP_DATA])
    on_cpu = job_resources("cpu", "paper", "train", "network", None, 1, unit, [REAL_MLP_DATA])
    assert on_gpu["gpu"] == 1 and on_gpu["gpu_mem_mb"] == gpu_need_mb("train", "network", unit, [REAL_MLP_DATA])
    assert on_gpu["gpu_mem_mb"] > CUDA_CONTEXT_MB and on_cpu["gpu_mem_mb"] == 0


@pytest.mark.parametrize(("given", "local", "detected", "card", "total"), [
    (None, True, [85520], 85520, 85520),              # one card found: the total is the card
    (None, True, [85520, 25757], 25757, 51514),       # cards × the smallest card
    (24000, True, [85520], 24000, 24000),             # a smaller given total caps the card too
    (200000, True, [85520, 85520], 85520, 200000),    # a larger given total is the user's
    (24000, True, [], 24000, None),                   # no card here: the given value is one (simulated) card
    (None, True, [], None, None),                     # nothing known: nothing checked
    (85520, False, [25757], 85520, None),             # a cluster: the profile's card, not this machine's
])
def test_the_card_and_the_total(given, local, detected, card, total):
    cards = gpu_cards(given, local, detected)
    assert (cards.card_mb, cards.total_mb) == (card, total), cards


def test_a_job_no_card_holds_is_refused_naming_it_its_need_and_the_card():
    cards = gpu_cards(24000, True, [])
    check_cards({"measure deep_rfm_relu/mnist": 24000, "train vgg_cifar/seed-0": 4000}, cards)
    with pytest.raises(GpuMemoryError) as err:
        check_cards({"measure deep_rfm_cos/cifar10": 25573, "measure deep_rfm_relu/svhn": 24001,
                     "train vgg_cifar/seed-0": 4000}, cards)
    message = str(err.value)
    assert "measure deep_rfm_cos/cifar10 needs 25,573 MB" in message and "deep_rfm_relu/svhn needs 24,001" in message
    assert "24,000 MB" in message and "vgg_cifar" not in message and message.startswith("2 GPU job(s)")
    check_cards({"measure deep_rfm_cos/cifar10": 10**9}, gpu_cards(None, True, []))  # no card known: no refusal
