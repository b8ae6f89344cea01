import os
import shutil
from pathlib import Path

from featlearn.pipeline import numerics

numerics.pin()  # before torch loads: the tests compute with the bits a job does

import pytest  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from featlearn.pipeline.jobs import install_hooks  # noqa: E402

install_hooks()  # the science answered as in a job: usage meter, memory checks, digest-checked files

torch.set_num_threads(1)
os.environ["MPLBACKEND"] = "Agg"  # tests draw headless, as the render job does (featlearn sets no backend on import)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked `gpu` where torch sees no CUDA device, so that they run, unchanged, on a GPU machine."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (marker gpu); torch sees none here")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def copy_repo():
    """A function copying what Snakemake needs (Snakefile, config, workflow, src) into a folder: the pipeline tests
    build there, with that copy's code on PYTHONPATH, and never touch the checkout."""
    root = Path(__file__).resolve().parents[1]

    def copy(dest: Path) -> Path:
        for name in ("Snakefile", "config.yaml", "workflow", "src", "reproduction"):
            src = root / name
            if not src.exists():
                continue
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
        return dest

    return copy


@pytest.fixture(scope="session")
def long_training_run():
    """A function making chain_fig1's smoke run long enough to interrupt (``steps``, checkpoints every half second)
    in a copied repo; it returns the run's target and its log, both relative to the repo."""
    from featlearn.config import spec_hash
    from featlearn.pipeline import experiments as fx

    def lengthen(repo: Path, steps: int = 20000, measure_every: int = 5000) -> tuple[str, str]:
        path = repo / "config.yaml"
        cfg = yaml.safe_load(path.read_text())
        cfg["experiments"]["chain_fig1"]["scales"]["smoke"].update(
            model={"widths": [256, 256]},
            train={"steps": steps, "measure_every": measure_every, "checkpoint_seconds": 0.5})
        path.write_text(yaml.safe_dump(cfg))
        run, unit = next(iter(fx.units(cfg | {"scale": "smoke"}, "chain_fig1").items()))
        name = f"{run}.{spec_hash(unit)}"
        return f"results/smoke/runs/chain_fig1/{name}.pt", f"results/smoke/logs/train/chain_fig1/{name}.log"

    return lengthen
