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
