import json
import zipfile

import numpy as np
import pytest
import torch
from torchvision import datasets

from featlearn.data import real, registry
from featlearn.data.preprocessing import preprocess
from featlearn.pipeline.jobs import load_tensors

NATIVE = {"mnist": 28, "cifar10": 32, "cifar100": 32, "svhn": 32, "stl10": 96}
MD5_CHECKED = {"cifar10", "cifar100", "svhn", "stl10", "celeba"}


def _files(request, name):
    if name in MD5_CHECKED:
        request.getfixturevalue("skip_md5")
    return request.getfixturevalue(f"{name}_files")


def _as_float(images):
    return torch.from_numpy(np.asarray(images)).float() / 255


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("name", sorted(NATIVE))
def test_loader_reads_the_on_disk_format_pixel_for_pixel(name, split, request, tmp_path):
    expected_images, expected_labels = _files(request, name)[split]
    images, labels = real.load(name, tmp_path, split, size=NATIVE[name])
    assert images.dtype == torch.float32 and labels.dtype == torch.int64
    torch.testing.assert_close(images, _as_float(expected_images), rtol=0, atol=0)
    assert labels.tolist() == list(expected_labels)


def test_known_pixels_survive_the_file_layouts(request, tmp_path):
    _files(request, "cifar10")
    _files(request, "stl10")
    cifar, _ = real.load("cifar10", tmp_path)
    stl, _ = real.load("stl10", tmp_path, size=96)
    assert cifar[7, 1, 5, 9] == pytest.approx(123 / 255)  # row-major planes, 3 images per batch file
    assert stl[1, 0, 10, 70] == pytest.approx(5 / 255)  # STL-10 stores width before height


def test_svhn_label_10_is_the_digit_0(request, tmp_path):
    _files(request, "svhn")
    _, labels = real.load("svhn", tmp_path)
    assert labels.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]


def test_mnist_gz_files_are_unpacked_in_place_through_a_temporary_name(mnist_files, tmp_path):
    real.load("mnist", tmp_path, "test")
    raw = tmp_path / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(
        f"{prefix}-{kind}-ubyte{ext}" for prefix in ("train", "t10k") for kind in ("images-idx3", "labels-idx1")
        for ext in ("", ".gz"))


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_default_sizes_follow_the_spec(name, request, tmp_path):
    expected_images, _ = _files(request, name)["train"]
    images, _ = real.load(name, tmp_path)
    spec = registry.IMAGES[name]
    assert images.shape == (len(expected_images), spec.channels, spec.size, spec.size)
    assert images.shape[-1] == (28 if name == "mnist" else 32)


def test_stl10_is_resized_from_96_to_32(request, tmp_path):
    _files(request, "stl10")
    images, _ = real.load("stl10", tmp_path)
    assert images.shape == (6, 3, 32, 32)
    flat = torch.tensor([200, 40, 90]) / 255  # image 0 is one colour, which resizing must keep
    torch.testing.assert_close(images[0], flat[:, None, None].expand(3, 32, 32))


def test_gtsrb_labels_come_from_the_class_folders_and_every_sign_becomes_32x32(gtsrb_files, tmp_path):
    train_images, train_labels = gtsrb_files["train"]
    images, labels = real.load("gtsrb", tmp_path)
    assert labels.tolist() == train_labels.tolist() == [0, 0, *range(1, 43)]
    assert images.shape == (44, 3, 32, 32)
    torch.testing.assert_close(images[0], _as_float(train_images[0].transpose(2, 0, 1)), rtol=0, atol=0)
    flat = torch.tensor([10, 220, 130]) / 255  # the 40×48 sign of class 2
    torch.testing.assert_close(images[3], flat[:, None, None].expand(3, 32, 32))


def test_gtsrb_test_split_reads_the_csv(gtsrb_files, tmp_path):
    expected_images, expected_labels = gtsrb_files["test"]
    images, labels = real.load("gtsrb", tmp_path, "test")
    assert labels.tolist() == [16, 1, 38]
    torch.testing.assert_close(images, _as_float(expected_images), rtol=0, atol=0)


def test_first_n_points_in_file_order(request, tmp_path):
    expected_images, expected_labels = _files(request, "cifar10")["train"]
    images, labels = real.load("cifar10", tmp_path, n=4)  # crosses from data_batch_1 into data_batch_2
    torch.testing.assert_close(images, _as_float(expected_images[:4]), rtol=0, atol=0)
    assert labels.tolist() == expected_labels[:4].tolist()
    assert len(real.load("cifar10", tmp_path, n=10_000, at_most=True)[0]) == 15  # the default: like GTSRB's 26,640
    assert len(real.load("cifar10", tmp_path)[0]) == 15
    with pytest.raises(ValueError, match=r"CIFAR-10 \(train\) holds 15 images .* n = 10,000 asks for more"):
        real.load("cifar10", tmp_path, n=10_000)


def test_prepare_records_the_counts_it_loaded(request, tmp_path):
    _files(request, "cifar10")
    data = real.prepare("cifar10", tmp_path, n_train="all", n_test=10_000)
    assert data["x_train"].shape[0] == 15
    options = json.loads(data["preprocessing"])
    assert (options["n_train"], options["n_test"]) == (15, len(data["y_test"]))


def test_celeba_eyeglasses_subset_is_balanced_and_in_file_order(request, tmp_path):
    files = _files(request, "celeba")
    images, labels = real.load("celeba", tmp_path, n=4)
    # train files 1–8; without glasses 1, 3, 4, 6, 8 and with glasses 2, 5, 7: the first two of each
    assert labels.tolist() == [0, 1, 0, 1]
    assert images.shape == (4, 3, 64, 64)
    colours = images.mean(dim=(2, 3)) * 255
    torch.testing.assert_close(colours, torch.tensor(files["colours"][[0, 1, 2, 4]]).float(), rtol=0, atol=3)
    _, everything = real.load("celeba", tmp_path)
    assert everything.tolist() == [0, 1, 0, 0, 1, 1]  # files 1, 2, 3, 4, 5, 7: 3 per class, all the rarer has


def test_celeba_size_is_configurable_and_splits_follow_the_partition_file(request, tmp_path):
    files = _files(request, "celeba")
    images, _ = real.load("celeba", tmp_path, n=2, size=32)
    assert images.shape == (2, 3, 32, 32)
    valid, labels = real.load("celeba", tmp_path, "valid")
    assert labels.tolist() == [1, 0]  # files 9 and 10, the valid split
    torch.testing.assert_close(valid.mean(dim=(2, 3)) * 255, torch.tensor(files["colours"][8:]).float(),
                               rtol=0, atol=3)


def test_celeba_zip_placed_by_hand_is_unpacked(request, tmp_path):
    files = _files(request, "celeba")
    folder = tmp_path / "celeba"
    with zipfile.ZipFile(folder / "img_align_celeba.zip", "w") as archive:
        for image in sorted((folder / "img_align_celeba").iterdir()):
            archive.write(image, f"img_align_celeba/{image.name}")
            image.unlink()
    (folder / "img_align_celeba").rmdir()
    images, labels = real.load("celeba", tmp_path, n=2)
    assert labels.tolist() == [0, 1]
    torch.testing.assert_close(images.mean(dim=(2, 3)) * 255, torch.tensor(files["colours"][:2]).float(),
                               rtol=0, atol=3)
    assert len(list((folder / "img_align_celeba").iterdir())) == 10
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # the temporary folder is gone


@pytest.mark.parametrize("name", sorted(registry.IMAGES))
def test_missing_dataset_names_itself_the_path_and_both_fixes(name, tmp_path):
    folder = tmp_path / registry.IMAGES[name].folder
    with pytest.raises(real.DatasetMissingError) as info:
        real.load(name, tmp_path)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert message.startswith(f"{registry.IMAGES[name].title} not found in {folder}")
    assert "run with `--config download=true`" in message and f"put the files under {folder}" in message
    assert "expected layout: " in message
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_missing_message_lists_what_is_absent(request, tmp_path):
    _files(request, "cifar10")
    (tmp_path / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(real.DatasetMissingError, match=r"\(missing: test_batch\)"):
        real.load("cifar10", tmp_path)


def test_celeba_message_says_where_to_put_the_files_by_hand(tmp_path):
    with pytest.raises(real.DatasetMissingError) as info:
        real.load("celeba", tmp_path)
    message = str(info.value)
    assert "Google Drive" in message and "quota" in message
    for name in ("img_align_celeba/", "img_align_celeba.zip", "list_attr_celeba.txt", "list_eval_partition.txt",
                 "identity_CelebA.txt", "list_bbox_celeba.txt", "list_landmarks_align_celeba.txt"):
        assert name in message


def test_torchvision_checksum_failure_becomes_the_missing_data_error(cifar10_files, tmp_path):
    with pytest.raises(real.DatasetMissingError) as info:  # no MD5 stub: the tiny files are not the originals
        real.load("cifar10", tmp_path)
    assert "failed torchvision's check (Dataset not found or corrupted" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize("name, cls", [("svhn", datasets.SVHN), ("celeba", datasets.CelebA)])
def test_download_is_passed_to_torchvision_and_its_failure_says_how_to_place_files(name, cls, tmp_path,
                                                                                     monkeypatch):
    calls = []

    def unreachable(self):
        calls.append(self.root)
        raise RuntimeError("network unreachable")

    monkeypatch.setattr(cls, "download", unreachable)
    with pytest.raises(real.DatasetMissingError, match="download into .* failed \\(network unreachable\\)") as info:
        real.load(name, tmp_path, download=True)
    assert calls
    assert "by hand" in str(info.value) and "download=true" not in str(info.value)


def test_per_channel_standardization_uses_training_statistics():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(50, 3, 4, 4, generator=g) * torch.tensor([1.0, 5.0, 0.1])[:, None, None] + 2
    x_test = torch.rand(7, 3, 4, 4, generator=g)
    out = preprocess((x, torch.arange(50) % 10), (x_test, torch.arange(7)), 10)
    torch.testing.assert_close(out["x_train"].mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(out["x_train"].std(dim=(0, 2, 3), correction=0), torch.ones(3), atol=1e-5, rtol=0)
    assert out["mean"].shape == (1, 3, 1, 1)
    torch.testing.assert_close(out["x_test"], (x_test - out["mean"]) / out["std"])


def test_per_feature_standardization_maps_constant_pixels_to_zero():
    x = torch.rand(40, 1, 3, 3, generator=torch.Generator().manual_seed(1))
    x[:, 0, 0, 0] = 0.0  # MNIST's always-black border
    out = preprocess((x, torch.arange(40) % 10), (x[:5] + 1, torch.arange(5)), 10, standardize="feature")
    assert torch.isfinite(out["x_train"]).all() and torch.isfinite(out["x_test"]).all()
    assert (out["x_train"][:, 0, 0, 0] == 0).all() and (out["x_test"][:, 0, 0, 0] == 0).all()
    std = out["x_train"].std(dim=0, correction=0)
    torch.testing.assert_close(std.flatten()[1:], torch.ones(8), atol=1e-5, rtol=0)


def test_no_standardization_keeps_pixels_in_0_1():
    x = torch.rand(6, 3, 2, 2)
    assert torch.equal(preprocess((x, torch.arange(6) % 2), None, 2, standardize="none")["x_train"], x)


def test_targets_one_hot_minus_one_over_c_signed_and_scalar():
    labels = torch.tensor([3, 0, 42, 3])
    shifted = preprocess((torch.rand(4, 3, 2, 2), labels), None, 43)["y_train"]
    torch.testing.assert_close(shifted.sum(dim=1), torch.zeros(4), atol=1e-6, rtol=0)
    assert shifted.argmax(dim=1).tolist() == labels.tolist()
    assert shifted.max().item() == pytest.approx(1 - 1 / 43) and shifted.min().item() == pytest.approx(-1 / 43)
    signed = preprocess((torch.rand(4, 3, 2, 2), labels), None, 43, targets="signed")["y_train"]
    assert sorted(signed.unique().tolist()) == [-1.0, 1.0] and (signed.sum(dim=1) == -41).all()
    scalar = preprocess((torch.rand(2, 3, 2, 2), torch.tensor([1, 0])), None, 2, targets="scalar")["y_train"]
    assert scalar.tolist() == [[1.0], [0.0]]


def test_flatten_is_channel_major_and_sorting_keeps_dataset_order_within_a_class():
    x = torch.arange(5 * 3 * 2 * 2, dtype=torch.float32).reshape(5, 3, 2, 2)
    labels = torch.tensor([2, 0, 2, 1, 0])
    plain = preprocess((x, labels), None, 3)
    flat = preprocess((x, labels), None, 3, flatten=True, sort_by_class=True)
    assert flat["x_train"].shape == (5, 12)
    assert flat["labels_train"].tolist() == [0, 0, 1, 2, 2]
    torch.testing.assert_close(flat["x_train"].reshape(5, 3, 2, 2), plain["x_train"][[1, 4, 3, 0, 2]])


def test_unknown_options_name_the_option_and_the_choices():
    with pytest.raises(ValueError, match="standardize must be one of"):
        preprocess((torch.rand(2, 1, 2, 2), torch.tensor([0, 1])), None, 2, standardize="pixel")
    with pytest.raises(ValueError, match="targets must be one of"):
        preprocess((torch.rand(2, 1, 2, 2), torch.tensor([0, 1])), None, 2, targets="onehot")
    with pytest.raises(ValueError, match="CIFAR-10 has no split 'valid'"):
        real.load("cifar10", "/nonexistent", "valid")


def test_cache_writes_one_readable_file_and_no_temporary(request, tmp_path):
    _files(request, "cifar10")
    out = tmp_path / "results" / "data" / "cifar10.pt"
    real.cache(out, "cifar10", tmp_path, n_train=10, n_test=3, flatten=True)
    data = load_tensors(out)
    assert data["x_train"].shape == (10, 3072) and data["x_test"].shape == (3, 3072)
    torch.testing.assert_close(data["y_train"].sum(dim=1), torch.zeros(10), atol=1e-6, rtol=0)
    assert data["source"] == "CIFAR-10: real, via torchvision.datasets (10 train / 3 test)"
    assert json.loads(data["preprocessing"])["standardize"] == "channel"
    assert [p.name for p in out.parent.iterdir()] == ["cifar10.pt"]


def test_cache_of_missing_data_fails_before_writing_anything(tmp_path):
    data_dir, out = tmp_path / "data", tmp_path / "results" / "data" / "svhn.pt"
    data_dir.mkdir()
    with pytest.raises(real.DatasetMissingError, match="SVHN not found"):
        real.cache(out, "svhn", data_dir)
    assert not out.parent.exists() and list(data_dir.iterdir()) == []


def test_a_missing_test_split_fails_before_the_train_split_is_read(request, tmp_path, monkeypatch):
    _files(request, "svhn")
    (tmp_path / "svhn" / "test_32x32.mat").unlink()
    monkeypatch.setattr(real, "load", lambda *a, **k: pytest.fail("loaded data although the test split is missing"))
    with pytest.raises(real.DatasetMissingError, match="missing: test_32x32.mat"):
        real.prepare("svhn", tmp_path)


def test_celeba_for_fig16_keeps_0_1_pixels_and_a_scalar_target(request, tmp_path):
    _files(request, "celeba")
    data = real.prepare("celeba", tmp_path, n_test=0, standardize="none", targets="scalar")
    assert data["x_train"].shape == (6, 3, 64, 64) and 0 <= data["x_train"].min() and data["x_train"].max() <= 1
    assert data["y_train"].flatten().tolist() == [0, 1, 0, 0, 1, 1]
    assert json.loads(data["preprocessing"])["n_train"] == 6  # the spec's 3,750 per class asked, all 3 here
    assert data["source"] == "CelebA: real, via torchvision.datasets (6 train, balanced Eyeglasses subset)"
