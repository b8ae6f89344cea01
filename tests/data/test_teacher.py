import pytest
import torch

from featlearn.data import teacher
from featlearn.models.mlp import MLP, init_mlp

PARAMS = {"minus": 2, "plus": 3, "n_train": 60, "normalization": "unit_norm", "widths": [8, 8], "fit": "lstsq",
          "seed": 0, "teacher": 0, "target": "linear"}


def test_teacher_features_are_models_mlps_he_normal_draws():
    """The data stage draws the teacher itself (it sits below ``models``): the draws must stay the MLP's."""
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(3))
    z, w = teacher.teacher_features(x, [4, 3], torch.Generator().manual_seed(7))
    net = init_mlp(MLP(6, [4, 3]), [1.0, 1.0], torch.Generator().manual_seed(7), "he_normal")
    assert torch.equal(z, torch.relu(net.hidden[-1](net.layer_inputs(x)[-1])))
    assert torch.equal(w, net.layers[-1].weight.detach())


@pytest.mark.parametrize("normalization", teacher.NORMALIZATIONS)
def test_both_normalizations_build_centred_images(normalization):
    data = teacher.mnist_teacher(**{**PARAMS, "normalization": normalization})
    x = data["x"].double()
    torch.testing.assert_close(x.mean(1), torch.zeros(60, dtype=torch.float64), atol=1e-6, rtol=0)
    scale = x.norm(dim=1) if normalization == "unit_norm" else x.std(dim=1)
    torch.testing.assert_close(scale, torch.ones(60, dtype=torch.float64), atol=1e-5, rtol=0)


def test_labels_targets_and_the_shared_teacher():
    linear = teacher.mnist_teacher(**PARAMS)
    binary = teacher.mnist_teacher(**{**PARAMS, "target": "binary"})
    assert set(linear["digit"].tolist()) == {2, 3}
    assert torch.equal(linear["labels"], torch.where(linear["digit"] == 2, -1.0, 1.0))
    assert torch.equal(linear["y"], linear["teacher_y"]) and torch.equal(binary["x"], linear["x"])
    assert torch.equal(binary["teacher_y"], linear["teacher_y"]) and torch.equal(binary["y"], linear["y"].sign())
    assert float((linear["teacher_y"].sign() == linear["labels"]).float().mean()) > 0.7  # a fit of the labels
    other_teacher = teacher.mnist_teacher(**{**PARAMS, "teacher": 1})
    assert torch.equal(other_teacher["x"], linear["x"])  # the subset has its own stream
    assert not torch.equal(other_teacher["teacher_y"], linear["teacher_y"])
    assert not torch.equal(teacher.mnist_teacher(**{**PARAMS, "seed": 1})["image"], linear["image"])


def test_sgd_fit_lowers_the_readouts_error_toward_the_least_squares_fit():
    data = teacher.mnist_teacher(**PARAMS)
    x, t = data["x"], data["labels"]
    z, w = teacher.teacher_features(x, [8, 8], torch.Generator().manual_seed(0))
    settings = {"lr": 0.1, "momentum": 0.9, "epochs": 50, "t_max": None, "batch_size": 20}
    sgd = teacher.fit_readout_sgd(z, t, w, settings, torch.Generator().manual_seed(1))
    lstsq = teacher.teacher_targets(x, t, [8, 8], "lstsq", None, torch.Generator().manual_seed(0))
    mse = {name: float(((y - t) ** 2).mean()) for name, y in (("init", (z @ w.T)[:, 0]), ("sgd", sgd),
                                                                ("lstsq", lstsq))}
    assert mse["lstsq"] <= mse["sgd"] < mse["init"], mse


def test_mistakes_name_the_parameter():
    with pytest.raises(ValueError, match="n_train must be in 1..1000"):
        teacher.mnist_teacher(**{**PARAMS, "n_train": 1001})
    with pytest.raises(ValueError, match="fit must be one of"):
        teacher.mnist_teacher(**{**PARAMS, "fit": "ridge"})
    with pytest.raises(ValueError, match="normalization must be one of"):
        teacher.mnist_teacher(**{**PARAMS, "normalization": "standardize"})
