import pytest

from featlearn.resources import gpus, job_resources

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


def test_a_projected_job_grows_with_the_attempt_too():
    row = {"hours": "1.5", "peak_mb": "3000", "cuda_peak_mb": "5000", "device": "cuda:0"}
    one, two = (job_resources("auto", "paper", "train", "network", row, attempt) for attempt in (1, 2))
    assert all(two[key] > one[key] for key in ("runtime", "mem_mb", "gpu_mem_mb")), (one, two)
