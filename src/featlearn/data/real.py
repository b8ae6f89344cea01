"""Real image datasets through torchvision's own classes, as the registry describes them, cached as one .pt file.

torchvision does the parsing (and, with ``download=True``, the fetching); ``featlearn.data.registry`` says which class
reads each dataset, where its files lie and what the papers take of it. This module adds what the papers need on top:
the first n points, resizing to one side length, a class-balanced subset of a binary attribute (CelebA's Eyeglasses:
docs/figures/alignment.md, Figs 2, 16; collapse.md, Data), then ``preprocessing``; and an error that says what is
missing, where, and how to fix it before anything is written.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torchvision import datasets, transforms
from torchvision.datasets.utils import extract_archive

from featlearn import hooks
from featlearn.data import registry
from featlearn.data.missing import DatasetMissingError
from featlearn.data.preprocessing import block_options, finish


class TooFewImages(ValueError):
    """A split holds fewer images than the configuration asks for."""


def load(name: str, root: str | Path, split: str = "train", download: bool = False, n: int | None = None,
         size: int | None = None, at_most: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n`` images of a split (all if None) as float (N, C, size, size) in [0, 1], and int64 labels (N,).

    Asking for more than the split holds is an error, unless ``at_most`` (the spec's default count: "the first 50,000
    points", all of GTSRB's 26,640).
    ``root`` is torchvision's root (the pipeline's ``data_dir``). ``size`` defaults to the registry's side: 28 for
    MNIST, 32 for the rest (STL-10 96 → 32, GTSRB's varied sizes → 32), 64 for CelebA. A dataset labelled by an
    attribute (CelebA's Eyeglasses) returns a class-balanced subset instead: n/2 without and n/2 with it, the first of
    each in file order.
    """
    spec = registry.image(name, split)
    side = size or spec.size
    if spec.resize == "crop":  # CelebA's 178×218 faces keep their aspect ratio: shorter side to ``side``, then crop
        resize = [transforms.Resize(side), transforms.CenterCrop(side)]
    else:
        resize = [transforms.Resize((side, side))]
    with _readable(spec, Path(root)):
        ds = _open(spec, Path(root), split, download, transforms.Compose([*resize, transforms.PILToTensor()]))
        if spec.attribute is not None:
            flag = ds.attr[:, ds.attr_names.index(spec.attribute)]
            index = _balanced(flag, n)
            labels = flag[index]
            images = [ds[i][0] for i in index.tolist()]
        else:
            if n is not None and n > len(ds) and not at_most:
                raise TooFewImages(f"{spec.title} ({split}) holds {len(ds):,} images under {root}; n = "
                                   f"{n:,} asks for more: lower data.n / data.n_test or use n: all")
            pairs = [ds[i] for i in range(len(ds) if n is None else min(n, len(ds)))]
            images = [image for image, _ in pairs]
            labels = torch.tensor([label for _, label in pairs], dtype=torch.int64)
    return torch.stack(images).float().div_(255), labels


@contextlib.contextmanager
def _readable(spec: registry.Image, root: Path) -> Iterator[None]:
    """Files that exist but do not parse (truncated, or not the originals: torchvision fails with a bare assert,
    a pickle or .mat error, or PIL's) become a DatasetMissingError that names the folder and the fix."""
    try:
        yield
    except (DatasetMissingError, TooFewImages):
        raise
    except Exception as err:
        folder = root / spec.folder
        raise DatasetMissingError(
            spec.title, folder, f"files in {folder} could not be read ({type(err).__name__}: {err}); they are "
            "truncated or not the original files, so delete them first", _layout(spec, folder), spec.note) from err


def check(name: str, root: str | Path, split: str = "train") -> None:
    """Raise DatasetMissingError if a file torchvision needs for ``split`` is absent (existence only, no MD5)."""
    spec = registry.image(name, split)
    folder = Path(root) / spec.folder
    missing = [" or ".join(entry) for entry in spec.required(split) if not any(_exists(folder, f) for f in entry)]
    if missing:
        raise DatasetMissingError(spec.title, folder, f"not found in {folder} (missing: {', '.join(missing)})",
                                  _layout(spec, folder), spec.note)


def present(name: str, root: str | Path) -> bool:
    """Whether the files of every split of ``name`` are under ``root`` (existence only): a rehearsal reads the real
    dataset where it is, and a stand-in at its size where it is not."""
    try:
        for split in registry.image(name).splits:
            check(name, root, split)
    except DatasetMissingError:
        return False
    return True


def from_block(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The tensors of a ``data`` block with ``source: real`` (the signature ``featlearn.data.prepare`` calls)."""
    return prepare(data["dataset"], data_dir, download=download, n_train=data.get("n"), **block_options(data))


def prepare(name: str, data_dir: str | Path, *, download: bool = False, n_train: int | str | None = None,
            n_test: int | None = registry.N_TEST, size: int | None = None, **options: Any) -> dict[str, Any]:
    """Load the real files (from ``data_dir``, fetched with ``download``) and preprocess (``finish``'s ``options``).

    ``n_train`` defaults to the registry's count (50,000; CelebA 7,500 = 3,750 per class), ``"all"`` takes the whole
    split, and asking for more than a split holds is an error; ``n_test=0`` skips the test split. For CelebA's
    Fig 16 pass ``n_test=0, standardize="none", targets="scalar"``. Missing files raise DatasetMissingError before
    any loading.
    """
    default, n_train = n_train is None, registry.train_points(name, n_train)
    splits = ["train", "test"] if n_test != 0 else ["train"]
    if not download:
        for split in splits:
            check(name, data_dir, split)
    pairs = {s: load(name, data_dir, s, download, n, size, at_most=default or s == "test")
             for s, n in zip(splits, (n_train, n_test))}
    spec = registry.image(name)
    counts = " / ".join(f"{len(y):,} {s}" for s, (_, y) in pairs.items())
    subset = f", balanced {spec.attribute} subset" if spec.attribute is not None else ""
    source = f"{spec.title}: real, via torchvision.datasets ({counts}{subset})"
    return finish(name, pairs, source, size=size, **options)


def cache(out: str | Path, name: str, data_dir: str | Path, **options: Any) -> dict[str, Any]:
    """``prepare(name, data_dir, **options)`` written to one .pt file (temporary file, then rename).

    Training reads this file, never the raw files. Nothing is written when the data are missing.
    """
    data = prepare(name, data_dir, **options)
    hooks.current().save(data, out)
    return data


def _exists(folder: Path, entry: str) -> bool:
    return (folder / entry).is_dir() if entry.endswith("/") else (folder / entry).is_file()


def _layout(spec: registry.Image, folder: Path) -> str:
    entries = dict.fromkeys(" or ".join(e) for split in spec.splits for e in spec.required(split))
    return f"{folder}/{{{', '.join(entries)}}}"


def _open(spec: registry.Image, root: Path, split: str, download: bool, transform: transforms.Compose) -> Any:
    """torchvision's dataset object, as the registry's ``torchvision`` entry says to build it, its "not found or
    corrupted" errors turned into DatasetMissingError."""
    folder = root / spec.folder
    if not download:
        check(spec.name, root, split)
        for entry in spec.required(split):
            _unpack(folder, entry)
    how = spec.torchvision
    where = folder if how["root"] == "folder" else root
    which = {"train": split == "train"} if how["split"] == "train" else {"split": split}
    try:
        return getattr(datasets, how["class"])(where, **which, **how["options"], transform=transform,
                                               download=download)
    except (RuntimeError, OSError) as err:
        if download:
            raise DatasetMissingError(spec.title, folder, f"download into {folder} failed ({err})",
                                      _layout(spec, folder), spec.note, downloaded=True) from err
        if "not found" not in str(err):
            raise
        raise DatasetMissingError(spec.title, folder, f"files in {folder} failed torchvision's check ({err})",
                                  _layout(spec, folder), spec.note) from err


def _unpack(folder: Path, entry: tuple[str, ...]) -> None:
    """Unpack an archive placed by hand into the entry torchvision reads (its first alternative), as torchvision's own
    download step would, through a temporary name: ``.gz`` holds one file (MNIST's IDX files), any other archive
    the folder of that name (CelebA's img_align_celeba.zip)."""
    target = folder / entry[0].rstrip("/")
    archive = next((folder / a for a in entry[1:] if (folder / a).is_file()), None)
    if archive is None or _exists(folder, entry[0]):
        return
    if archive.suffix == ".gz":
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with gzip.open(archive, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return
    unpacked = Path(tempfile.mkdtemp(dir=folder, prefix=f".{target.name}."))
    try:
        extract_archive(str(archive), str(unpacked))
        os.replace(unpacked / target.name, target)
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def _balanced(flag: torch.Tensor, n: int | None) -> torch.Tensor:
    """Indices of the first k points with flag 0 and the first k with flag 1, in file order (k = n/2 or the most)."""
    negative, positive = (flag == 0).nonzero()[:, 0], (flag == 1).nonzero()[:, 0]
    k = min(len(negative), len(positive), len(flag) if n is None else n // 2)
    return torch.cat([negative[:k], positive[:k]]).sort().values
