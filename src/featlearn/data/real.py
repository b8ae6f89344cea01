"""Real image datasets through torchvision's own classes, preprocessed as the papers say, cached as one .pt file.

torchvision does the parsing (and, with ``download=True``, the fetching); this module adds what the papers need on
top: the first n points, resizing to one side length, the CelebA Eyeglasses balanced subset (docs/figures/
alignment.md, Figs 2, 16; collapse.md, Data), standardization with training statistics, regression targets, and
an error that says what is missing, where, and how to fix it before anything is written.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torchvision import datasets, transforms
from torchvision.datasets.utils import extract_archive

from featlearn import hooks
from featlearn.data.missing import DatasetMissingError


@dataclass(frozen=True)
class Dataset:
    """What the pipeline needs to know about one torchvision dataset.

    ``files`` maps each split to the entries torchvision requires under ``folder`` (relative to ``data_dir``);
    an entry lists alternatives, and a trailing ``/`` marks a directory. ``n_train`` is the spec's training-set size,
    ``sizes`` the images each split holds (train, test), which a stand-in at the real size reproduces.
    """

    title: str
    classes: int
    channels: int
    size: int
    folder: str
    files: dict[str, tuple[tuple[str, ...], ...]]
    note: str = ""
    n_train: int = 50_000
    sizes: tuple[int, int] = (50_000, 10_000)


_MNIST = tuple((f, f + ".gz") for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
_CIFAR10 = tuple((f,) for f in (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch", "batches.meta"))
_CIFAR100 = (("train",), ("test",), ("meta",))
_STL10 = tuple((f,) for f in ("train_X.bin", "train_y.bin", "unlabeled_X.bin", "test_X.bin", "test_y.bin"))
_CELEBA = (("img_align_celeba/", "img_align_celeba.zip"), ("list_attr_celeba.txt",), ("list_eval_partition.txt",),
           ("identity_CelebA.txt",), ("list_bbox_celeba.txt",), ("list_landmarks_align_celeba.txt",))
_MD5 = " torchvision compares each file's MD5 sum with the original's."

DATASETS: dict[str, Dataset] = {
    "mnist": Dataset("MNIST", 10, 1, 28, "MNIST/raw", {"train": _MNIST, "test": _MNIST},
                     " Both splits' files are required; .gz files are unpacked in place.", sizes=(60_000, 10_000)),
    "cifar10": Dataset("CIFAR-10", 10, 3, 32, "cifar-10-batches-py", {"train": _CIFAR10, "test": _CIFAR10},
                       " As unpacked from cifar-10-python.tar.gz;" + _MD5),
    "cifar100": Dataset("CIFAR-100", 100, 3, 32, "cifar-100-python", {"train": _CIFAR100, "test": _CIFAR100},
                        " As unpacked from cifar-100-python.tar.gz;" + _MD5),
    "svhn": Dataset("SVHN", 10, 3, 32, "svhn", {"train": (("train_32x32.mat",),), "test": (("test_32x32.mat",),)},
                    " The cropped-digit .mat files;" + _MD5, sizes=(73_257, 26_032)),
    "gtsrb": Dataset("GTSRB", 43, 3, 32, "gtsrb",
                     {"train": (("GTSRB/Training/",),),
                      "test": (("GTSRB/Final_Test/Images/",), ("GT-final_test.csv",))},
                     " GTSRB/Training/00000/ … 00042/ hold the .ppm images, as unpacked from GTSRB-Training_fixed.zip;"
                     " the test split comes from GTSRB_Final_Test_Images.zip and GTSRB_Final_Test_GT.zip.",
                     sizes=(26_640, 12_630)),
    "stl10": Dataset("STL-10", 10, 3, 32, "stl10_binary", {"train": _STL10, "test": _STL10},
                     " As unpacked from stl10_binary.tar.gz; unlabeled_X.bin is required too;" + _MD5,
                     sizes=(5_000, 8_000)),
    "celeba": Dataset("CelebA", 2, 3, 64, "celeba", {"train": _CELEBA, "valid": _CELEBA, "test": _CELEBA},
                      " CelebA's download goes through Google Drive (it needs `pip install gdown`) and often fails on"
                      " the Drive's daily quota; then place by hand the files listed: img_align_celeba/ (the 202,599"
                      " aligned JPEGs) or img_align_celeba.zip (unpacked here), and the five .txt files from the CelebA"
                      " page's Anno and Eval folders;" + _MD5, n_train=7_500, sizes=(162_770, 19_962)),
}


class TooFewImages(ValueError):
    """A split holds fewer images than the configuration asks for."""


def load(name: str, root: str | Path, split: str = "train", download: bool = False, n: int | None = None,
         size: int | None = None, at_most: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n`` images of a split (all if None) as float (N, C, size, size) in [0, 1], and int64 labels (N,).

    Asking for more than the split holds is an error, unless ``at_most`` (the spec's default count: "the first 50,000
    points", all of GTSRB's 26,640).
    ``root`` is torchvision's root (the pipeline's ``data_dir``). ``size`` defaults to the spec's side: 28 for MNIST,
    32 for the rest (STL-10 96 → 32, GTSRB's varied sizes → 32), 64 for CelebA. CelebA returns a class-balanced subset
    of the Eyeglasses attribute instead: n/2 without and n/2 with glasses, the first of each in file order.
    """
    spec = _spec(name, split)
    side = size or spec.size
    if name == "celeba":  # the 178×218 faces keep their aspect ratio: shorter side to ``side``, then a centre crop
        resize = [transforms.Resize(side), transforms.CenterCrop(side)]
    else:
        resize = [transforms.Resize((side, side))]
    with _readable(name, Path(root)):
        ds = _open(name, Path(root), split, download, transforms.Compose([*resize, transforms.PILToTensor()]))
        if name == "celeba":
            glasses = ds.attr[:, ds.attr_names.index("Eyeglasses")]
            index = _balanced(glasses, n)
            labels = glasses[index]
            images = [ds[i][0] for i in index.tolist()]
        else:
            if n is not None and n > len(ds) and not at_most:
                raise TooFewImages(f"{DATASETS[name].title} ({split}) holds {len(ds):,} images under {root}; n = "
                                   f"{n:,} asks for more: lower data.n / data.n_test or use n: all")
            pairs = [ds[i] for i in range(len(ds) if n is None else min(n, len(ds)))]
            images = [image for image, _ in pairs]
            labels = torch.tensor([label for _, label in pairs], dtype=torch.int64)
    return torch.stack(images).float().div_(255), labels


@contextlib.contextmanager
def _readable(name: str, root: Path) -> Iterator[None]:
    """Files that exist but do not parse (truncated, or not the originals: torchvision fails with a bare assert,
    a pickle or .mat error, or PIL's) become a DatasetMissingError that names the folder and the fix."""
    try:
        yield
    except (DatasetMissingError, TooFewImages):
        raise
    except Exception as err:
        spec = DATASETS[name]
        folder = root / spec.folder
        raise DatasetMissingError(
            spec.title, folder, f"files in {folder} could not be read ({type(err).__name__}: {err}); they are "
            "truncated or not the original files, so delete them first", _layout(spec, folder), spec.note) from err


def check(name: str, root: str | Path, split: str = "train") -> None:
    """Raise DatasetMissingError if a file torchvision needs for ``split`` is absent (existence only, no MD5)."""
    spec = _spec(name, split)
    folder = Path(root) / spec.folder
    missing = [" or ".join(entry) for entry in spec.files[split] if not any(_exists(folder, f) for f in entry)]
    if missing:
        raise DatasetMissingError(spec.title, folder, f"not found in {folder} (missing: {', '.join(missing)})",
                                  _layout(spec, folder), spec.note)


def present(name: str, root: str | Path) -> bool:
    """Whether the files of every split of ``name`` are under ``root`` (existence only): a rehearsal reads the real
    dataset where it is, and a stand-in at its size where it is not."""
    try:
        for split in _spec(name, "train").files:
            check(name, root, split)
    except DatasetMissingError:
        return False
    return True


def split_points(name: str, split: str, n: int | str | None) -> int:
    """The images the data stage takes from a real split for a requested ``n``: n itself, the spec's count (None:
    "the first 50,000" for training, the whole test split) or the whole split ('all'), never more than the split holds
    (the spec's 50,000 take all of GTSRB's 26,640)."""
    spec = _spec(name, split)
    size = spec.sizes[0 if split == "train" else 1]
    if n == "all":
        return size
    return min(size, n if n is not None else spec.n_train if split == "train" else size)


def preprocess(train: tuple[torch.Tensor, torch.Tensor], test: tuple[torch.Tensor, torch.Tensor] | None,
               classes: int, *, standardize: str = "channel", targets: str = "shifted", flatten: bool = False,
               sort_by_class: bool = False) -> dict[str, torch.Tensor]:
    """Training tensors (and test tensors, standardized with the training statistics).

    standardize: "channel" (one mean/std per channel, alignment Fig 2), "feature" (per pixel and channel: collapse
    §1 and alignment Fig 17; constant features become 0), or "none" (CelebA's [0, 1] pixels). Population std.
    targets: "shifted" (one-hot minus 1/C, alignment), "signed" (±1 one-hot, collapse), "scalar" (the 0/1 label
    as one output, Fig 16). flatten: (N, C·H·W) in channel-major order for MLPs. sort_by_class: classes contiguous,
    dataset order within a class (collapse's Gram plots).
    """
    dims = {"channel": (0, 2, 3), "feature": (0,), "none": None}
    if standardize not in dims:
        raise ValueError(f"standardize must be one of {sorted(dims)} (got {standardize!r})")
    x = train[0]
    if dims[standardize] is None:
        mean, std = torch.zeros(1, x.shape[1], 1, 1), torch.ones(1, x.shape[1], 1, 1)
    else:
        mean = x.mean(dim=dims[standardize], keepdim=True)
        std = x.std(dim=dims[standardize], keepdim=True, correction=0)
    scale = torch.where(std > 0, 1 / std, torch.zeros_like(std))  # the collapse code's NaN → 0 for MNIST's border
    out = {"mean": mean, "std": std}
    for split, pair in (("train", train), ("test", test)):
        if pair is None:
            continue
        x, labels = pair
        if sort_by_class:
            order = torch.argsort(labels, stable=True)
            x, labels = x[order], labels[order]
        x = (x - mean) * scale
        out[f"x_{split}"] = x.reshape(len(x), -1) if flatten else x
        out[f"y_{split}"] = _targets(labels, classes, targets)
        out[f"labels_{split}"] = labels
    return out


# The preprocessing options a ``data`` block may set, for real images and their stand-ins alike
PREPROCESSING = ("n_test", "size", "standardize", "targets", "flatten", "sort_by_class")


def block_options(data: dict) -> dict[str, Any]:
    """The preprocessing options a ``data`` block sets, as keywords of ``prepare`` (and ``standins.prepare``)."""
    return {k: data[k] for k in PREPROCESSING if k in data}


def from_block(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The tensors of a ``data`` block with ``source: real`` (the signature ``featlearn.data.prepare`` calls)."""
    return prepare(data["dataset"], data_dir, download=download, n_train=data.get("n"), **block_options(data))


def prepare(name: str, data_dir: str | Path, *, download: bool = False, n_train: int | str | None = None,
            n_test: int | None = 10_000, size: int | None = None, **options: Any) -> dict[str, Any]:
    """Load the real files (from ``data_dir``, fetched with ``download``) and preprocess (``finish``'s ``options``).

    ``n_train`` defaults to the spec's count (50,000; CelebA 7,500 = 3,750 per class), ``"all"`` takes the whole
    split, and asking for more than a split holds is an error; ``n_test=0`` skips the test split. For CelebA's
    Fig 16 pass ``n_test=0, standardize="none", targets="scalar"``. Missing files raise DatasetMissingError before
    any loading.
    """
    default, n_train = n_train is None, train_points(name, n_train)
    splits = ["train", "test"] if n_test != 0 else ["train"]
    if not download:
        for split in splits:
            check(name, data_dir, split)
    pairs = {s: load(name, data_dir, s, download, n, size, at_most=default or s == "test")
             for s, n in zip(splits, (n_train, n_test))}
    counts = " / ".join(f"{len(y):,} {s}" for s, (_, y) in pairs.items())
    subset = ", balanced Eyeglasses subset" if name == "celeba" else ""
    source = f"{DATASETS[name].title}: real, via torchvision.datasets ({counts}{subset})"
    return finish(name, pairs, source, size=size, **options)


def train_points(name: str, n_train: int | str | None) -> int | None:
    """The training images to load for a requested ``n_train``: the spec's count for None, all (None) for 'all'."""
    return _spec(name, "train").n_train if n_train is None else None if n_train == "all" else n_train


def finish(name: str, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], source: str, *, size: int | None = None,
           offline: bool = False, seed: int = 0, standardize: str = "channel", targets: str = "shifted",
           flatten: bool = False, sort_by_class: bool = False) -> dict[str, Any]:
    """The loaded (images, labels) of each split, real or stand-in, as a run reads them: the tensors of
    ``preprocess`` plus ``name``, ``source`` (for store attributes and figure footers) and ``preprocessing`` (the
    options and the counts actually loaded, as JSON)."""
    options = {"standardize": standardize, "targets": targets, "flatten": flatten, "sort_by_class": sort_by_class,
               "size": size or DATASETS[name].size, "n_train": len(pairs["train"][1]),
               "n_test": len(pairs["test"][1]) if "test" in pairs else 0, "offline": offline, "seed": seed}
    data = preprocess(pairs["train"], pairs.get("test"), DATASETS[name].classes, standardize=standardize,
                      targets=targets, flatten=flatten, sort_by_class=sort_by_class)
    return data | {"name": name, "source": source, "preprocessing": json.dumps(options, sort_keys=True)}


def cache(out: str | Path, name: str, data_dir: str | Path, **options: Any) -> dict[str, Any]:
    """``prepare(name, data_dir, **options)`` written to one .pt file (temporary file, then rename).

    Training reads this file, never the raw files. Nothing is written when the data are missing.
    """
    data = prepare(name, data_dir, **options)
    hooks.current().save(data, out)
    return data


def _spec(name: str, split: str) -> Dataset:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}")
    spec = DATASETS[name]
    if split not in spec.files:
        raise ValueError(f"{spec.title} has no split {split!r}; choose one of {sorted(spec.files)}")
    return spec


def _exists(folder: Path, entry: str) -> bool:
    return (folder / entry).is_dir() if entry.endswith("/") else (folder / entry).is_file()


def _layout(spec: Dataset, folder: Path) -> str:
    entries = dict.fromkeys(" or ".join(e) for files in spec.files.values() for e in files)
    return f"{folder}/{{{', '.join(entries)}}}"


def _open(name: str, root: Path, split: str, download: bool, transform: transforms.Compose) -> Any:
    """torchvision's dataset object, its "not found or corrupted" errors turned into DatasetMissingError."""
    spec = DATASETS[name]
    folder = root / spec.folder
    if not download:
        check(name, root, split)
        _unpack(name, folder)
    try:
        if name == "mnist":
            return datasets.MNIST(root, train=split == "train", transform=transform, download=download)
        if name == "cifar10":
            return datasets.CIFAR10(root, train=split == "train", transform=transform, download=download)
        if name == "cifar100":
            return datasets.CIFAR100(root, train=split == "train", transform=transform, download=download)
        if name == "svhn":
            return datasets.SVHN(folder, split=split, transform=transform, download=download)
        if name == "gtsrb":
            return datasets.GTSRB(root, split=split, transform=transform, download=download)
        if name == "stl10":
            return datasets.STL10(root, split=split, transform=transform, download=download)
        return datasets.CelebA(root, split=split, target_type="attr", transform=transform, download=download)
    except (RuntimeError, OSError) as err:
        if download:
            raise DatasetMissingError(spec.title, folder, f"download into {folder} failed ({err})",
                                      _layout(spec, folder), spec.note, downloaded=True) from err
        if "not found" not in str(err):
            raise
        raise DatasetMissingError(spec.title, folder, f"files in {folder} failed torchvision's check ({err})",
                                  _layout(spec, folder), spec.note) from err


def _unpack(name: str, folder: Path) -> None:
    """Unpack archives placed by hand, as torchvision's own download step would, each through a temporary name."""
    if name == "mnist":  # torchvision reads the IDX files uncompressed
        for archive in folder.glob("*-ubyte.gz"):
            target = archive.with_suffix("")
            if not target.exists():
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                try:
                    with gzip.open(archive, "rb") as src, open(tmp, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.replace(tmp, target)
                finally:
                    tmp.unlink(missing_ok=True)
    images = folder / "img_align_celeba"
    if name == "celeba" and not images.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".img_align_celeba."))
        try:
            extract_archive(str(folder / "img_align_celeba.zip"), str(tmp))
            os.replace(tmp / "img_align_celeba", images)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _balanced(flag: torch.Tensor, n: int | None) -> torch.Tensor:
    """Indices of the first k points with flag 0 and the first k with flag 1, in file order (k = n/2 or the most)."""
    negative, positive = (flag == 0).nonzero()[:, 0], (flag == 1).nonzero()[:, 0]
    k = min(len(negative), len(positive), len(flag) if n is None else n // 2)
    return torch.cat([negative[:k], positive[:k]]).sort().values


def _targets(labels: torch.Tensor, classes: int, kind: str) -> torch.Tensor:
    onehot = torch.nn.functional.one_hot(labels, classes).float()
    if kind == "shifted":
        return onehot - 1 / classes
    if kind == "signed":
        return 2 * onehot - 1
    if kind == "scalar":
        return labels.float()[:, None]
    raise ValueError(f"targets must be one of ['scalar', 'shifted', 'signed'] (got {kind!r})")
