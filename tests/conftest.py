import shutil
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def copy_repo():
    """A function copying what Snakemake needs (Snakefile, config, workflow, src) into a folder: the pipeline tests
    build there, with that copy's code on PYTHONPATH, and never touch the checkout."""
    root = Path(__file__).resolve().parents[1]

    def copy(dest: Path) -> Path:
        for name in ("Snakefile", "config.yaml", "workflow", "src"):
            src = root / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
        return dest

    return copy
