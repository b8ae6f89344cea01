import pytest

from featlearn.resources import DEVICE_STAGES, gpus, job_resources


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
@pytest.mark.parametrize("stage", [*DEVICE_STAGES, "store", "data", "figure"])
@pytest.mark.parametrize("kind", ["training", "network", "deep_rfm", "reversing", "tangent_mnist"])
def test_who_asks_for_a_gpu(scale, stage, kind):
    device_stage = stage in DEVICE_STAGES
    assert gpus("cpu", scale, stage, kind) == 0
    assert gpus("cuda", scale, stage, kind) == int(device_stage)
    heavy = kind in ("network", "deep_rfm")
    assert gpus("auto", scale, stage, kind) == int(device_stage and scale == "paper" and heavy)


def test_job_resources_carry_the_gpu_request():
    assert job_resources("auto", "paper", "train", "network")["gpu"] == 1
    assert job_resources("auto", "quick", "train", "network")["gpu"] == 0
    assert set(job_resources("cpu", "smoke", "measure", "training")) == {"runtime", "mem_mb", "gpu"}
