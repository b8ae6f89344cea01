"""Tiny datasets written in each dataset's real on-disk format, for torchvision to parse with download=False.

Each ``<name>_files`` fixture writes under ``tmp_path`` (torchvision's root) and returns what a loader must give back:
``{split: (uint8 images (N, C, H, W) at the stored size, labels)}``.
"""

import gzip
import pickle
import struct

import numpy as np
import pytest
import scipy.io
from PIL import Image
from torchvision.datasets import celeba, cifar, stl10, svhn
from torchvision.datasets.utils import check_integrity

ATTRIBUTES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose Black_Hair Blond_Hair "
    "Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee Gray_Hair Heavy_Makeup High_Cheekbones Male "
    "Mouth_Slightly_Open Mustache Narrow_Eyes No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks "
    "Sideburns Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat Wearing_Lipstick Wearing_Necklace "
    "Wearing_Necktie Young"
).split()
CELEBA_PARTITION = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]  # files 1–8 train, 9–10 valid
CELEBA_GLASSES = [0, 1, 0, 0, 1, 0, 1, 0, 1, 0]  # train: files 2, 5, 7 wear glasses


@pytest.fixture
def skip_md5(monkeypatch):
    """Stub exactly one thing: torchvision's MD5 comparison of CIFAR, SVHN, STL-10 and CelebA files with the originals,
    which tiny test files cannot match. The file must still exist; all parsing is torchvision's own."""
    for module in (cifar, svhn, stl10, celeba):
        monkeypatch.setattr(module, "check_integrity", lambda fpath, md5=None: check_integrity(fpath))


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


def _idx_gz(path, array):
    """IDX: magic (0, 0, 0x08 = unsigned byte, ndim), big-endian uint32 dims, then the bytes; gzipped as distributed."""
    header = struct.pack(">4B", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def _pickle(path, obj):
    path.write_bytes(pickle.dumps(obj, protocol=2))


@pytest.fixture
def mnist_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng, out = _rng("mnist"), {}
    for split, prefix, n in (("train", "train", 12), ("test", "t10k", 5)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) * 3 % 10).astype(np.uint8)
        _idx_gz(raw / f"{prefix}-images-idx3-ubyte.gz", images)
        _idx_gz(raw / f"{prefix}-labels-idx1-ubyte.gz", labels)
        out[split] = (images[:, None], labels)
    return out


@pytest.fixture
def cifar10_files(tmp_path):
    """cifar-10-batches-py: data_batch_1…5 (3 images each here) and test_batch hold {data: N×3072 uint8 rows of
    1024 red, 1024 green, 1024 blue values, labels: list}; batches.meta holds label_names."""
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = _rng("cifar10")
    train, test = rng.integers(0, 256, (15, 3, 32, 32), dtype=np.uint8), rng.integers(0, 256, (4, 3, 32, 32),
                                                                                       dtype=np.uint8)
    train[7, 1, 5, 9] = 123  # a known pixel: image 7 (batch 3), green, row 5, column 9
    train_labels, test_labels = rng.integers(0, 10, 15), rng.integers(0, 10, 4)
    for b in range(5):
        part = slice(3 * b, 3 * b + 3)
        _pickle(folder / f"data_batch_{b + 1}", {"batch_label": f"training batch {b + 1} of 5",
                                                 "labels": train_labels[part].tolist(),
                                                 "data": train[part].reshape(3, 3072),
                                                 "filenames": [f"img_{i}.png" for i in range(3)]})
    _pickle(folder / "test_batch", {"batch_label": "testing batch 1 of 1", "labels": test_labels.tolist(),
                                    "data": test.reshape(4, 3072), "filenames": [f"t_{i}.png" for i in range(4)]})
    _pickle(folder / "batches.meta", {"num_cases_per_batch": 10000, "num_vis": 3072,
                                      "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                                                      "horse", "ship", "truck"]})
    return {"train": (train, train_labels), "test": (test, test_labels)}


@pytest.fixture
def cifar100_files(tmp_path):
    """cifar-100-python: train and test hold {data, fine_labels, coarse_labels}; meta holds fine_label_names."""
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    rng, out = _rng("cifar100"), {}
    for split, n in (("train", 6), ("test", 3)):
        images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        fine = np.array([0, 99, 42, 7, 63, 11][:n])
        _pickle(folder / split, {"filenames": [f"{split}_{i}.png" for i in range(n)], "batch_label": split,
                                 "fine_labels": fine.tolist(), "coarse_labels": (fine // 5).tolist(),
                                 "data": images.reshape(n, 3072)})
        out[split] = (images, fine)
    _pickle(folder / "meta", {"fine_label_names": [f"fine{i}" for i in range(100)],
                              "coarse_label_names": [f"coarse{i}" for i in range(20)]})
    return out


@pytest.fixture
def svhn_files(tmp_path):
    """svhn/{train,test}_32x32.mat: X (32, 32, 3, N) uint8 and y (N, 1) with the digit 0 stored as 10."""
    folder = tmp_path / "svhn"
    folder.mkdir()
    rng, out = _rng("svhn"), {}
    for split, n in (("train", 10), ("test", 3)):
        images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        stored = (np.arange(n) % 10 + 1).astype(np.uint8)  # 1…10
        scipy.io.savemat(folder / f"{split}_32x32.mat", {"X": images.transpose(2, 3, 1, 0), "y": stored[:, None]})
        out[split] = (images, stored % 10)
    return out


@pytest.fixture
def stl10_files(tmp_path):
    """stl10_binary: *_X.bin are N×3×96×96 uint8 stored column-major per channel (width before height);
    *_y.bin are uint8 labels 1…10; unlabeled_X.bin must exist too."""
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    rng, out = _rng("stl10"), {}
    for split, n in (("train", 6), ("test", 3)):
        images = rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8)
        images[0] = np.array([200, 40, 90], dtype=np.uint8)[:, None, None]  # one flat colour, for resizing
        images[1, 0, 10, 70] = 5  # a known pixel: image 1, red, row 10, column 70
        labels = np.arange(n) % 10
        images.transpose(0, 1, 3, 2).tofile(folder / f"{split}_X.bin")
        (labels + 1).astype(np.uint8).tofile(folder / f"{split}_y.bin")
        out[split] = (images, labels)
    rng.integers(0, 256, (1, 3, 96, 96), dtype=np.uint8).tofile(folder / "unlabeled_X.bin")
    (folder / "class_names.txt").write_text("\n".join(["airplane", "bird", "car", "cat", "deer", "dog", "horse",
                                                        "monkey", "ship", "truck"]) + "\n")
    (folder / "fold_indices.txt").write_text("\n".join("0 1 2" for _ in range(10)) + "\n")
    return out


@pytest.fixture
def gtsrb_files(tmp_path):
    """gtsrb/GTSRB/Training/00000 … 00042/<track>_<image>.ppm plus GT-<class>.csv (class = folder position, so all 43
    folders must be there); test: gtsrb/GTSRB/Final_Test/Images/*.ppm with gtsrb/GT-final_test.csv (';'-separated)."""
    base = tmp_path / "gtsrb"
    rng = _rng("gtsrb")
    header = "Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"
    train, labels = [], []
    for cls in range(43):
        folder = base / "GTSRB" / "Training" / f"{cls:05d}"
        folder.mkdir(parents=True)
        rows = [header]
        for k in range(2 if cls == 0 else 1):
            image = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            if cls == 2:  # a 40×48 (w×h) flat-colour sign: resizing to 32×32 keeps the colour exactly
                image = np.full((48, 40, 3), (10, 220, 130), dtype=np.uint8)
            Image.fromarray(image).save(folder / f"00000_{k:05d}.ppm")
            rows.append(f"00000_{k:05d}.ppm;{image.shape[1]};{image.shape[0]};5;5;25;25;{cls}")
            train.append(image)
            labels.append(cls)
        (folder / f"GT-{cls:05d}.csv").write_text("\n".join(rows) + "\n")
    images = base / "GTSRB" / "Final_Test" / "Images"
    images.mkdir(parents=True)
    test, test_labels, rows = [], [16, 1, 38], [header]
    for i, cls in enumerate(test_labels):
        image = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        Image.fromarray(image).save(images / f"{i:05d}.ppm")
        rows.append(f"{i:05d}.ppm;32;32;5;5;27;27;{cls}")
        test.append(image.transpose(2, 0, 1))
    (base / "GT-final_test.csv").write_text("\n".join(rows) + "\n")
    return {"train": (train, np.array(labels)), "test": (np.stack(test), np.array(test_labels))}


def _table(path, rows, header=None):
    lines = ([str(len(rows)), header] if header else []) + rows
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def celeba_files(tmp_path):
    """celeba/: img_align_celeba/000001.jpg … (178×218 JPEGs), list_attr_celeba.txt (count, 40 names, ±1 rows),
    list_eval_partition.txt (0 train, 1 valid, 2 test), identity_CelebA.txt, list_bbox_celeba.txt and
    list_landmarks_align_celeba.txt. Each face is one flat colour, which JPEG keeps within a few levels."""
    folder = tmp_path / "celeba"
    (folder / "img_align_celeba").mkdir(parents=True)
    names = [f"{i + 1:06d}.jpg" for i in range(10)]
    colours = [(20 * i + 10, 200 - 15 * i, 100 + 9 * i) for i in range(10)]
    for name, colour in zip(names, colours):
        Image.fromarray(np.full((218, 178, 3), colour, dtype=np.uint8)).save(folder / "img_align_celeba" / name,
                                                                              quality=95)
    eyeglasses = ATTRIBUTES.index("Eyeglasses")
    attr_rows = []
    for name, glasses in zip(names, CELEBA_GLASSES):
        values = [-1] * 40
        values[eyeglasses] = 1 if glasses else -1
        values[ATTRIBUTES.index("Smiling")] = 1  # a second attribute, so a wrong column would show
        attr_rows.append(f"{name} " + " ".join(f"{v:2d}" for v in values))
    _table(folder / "list_attr_celeba.txt", attr_rows, " ".join(ATTRIBUTES) + " ")
    _table(folder / "list_eval_partition.txt", [f"{n} {p}" for n, p in zip(names, CELEBA_PARTITION)])
    _table(folder / "identity_CelebA.txt", [f"{n} {2880 + i}" for i, n in enumerate(names)])
    _table(folder / "list_bbox_celeba.txt", [f"{n}    95  71 226 313" for n in names],
           "image_id x_1 y_1 width height")
    _table(folder / "list_landmarks_align_celeba.txt", [f"{n} 69  109  106  113   77  142   73  152  108  154"
                                                        for n in names],
           "lefteye_x lefteye_y righteye_x righteye_y nose_x nose_y leftmouth_x leftmouth_y rightmouth_x rightmouth_y")
    return {"colours": np.array(colours), "glasses": np.array(CELEBA_GLASSES), "partition": np.array(CELEBA_PARTITION)}
