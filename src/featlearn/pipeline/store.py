"""Metric stores: netCDF via xarray, with provenance, written atomically.

Every store carries, as global attributes, the experiment's resolved config (JSON), the
scale, where its data came from (real or stand-in), the git commit and dirty flag, the
package versions, what decided its bits (pinned CPU settings, threads, CPU; ``numerics``),
the creation time and the producing rule. A write goes to a temporary
file first and is renamed into place, so a killed job never leaves a store that looks done;
a digest of the values (attribute ``sha256``) lets every reader detect a corrupted store.

Every store has one shape of time (docs/design.md, Stores): one dimension, ``step``, and
readers reduce and index along it by position (first, last finite, early) and plot against
the coordinate their figure is drawn against:

* step-counted runs (``train.steps``: the synthetic GD/SLO sweeps, GPT, SVHN SLO) label it by
  the dimension coordinate ``step``, optimizer steps since initialization. They have no
  ``epoch`` (an all-NaN one would be a coordinate no reader may use, so none at all);
* epoch-counted runs (``train.epochs``: the real-data MLP, VGG and CelebA nets, the collapse
  nets, tangent MNIST) label it by the coordinate ``epoch`` (dims ``("step",)``: epochs after
  the warm-up, 0 = its end; the initialization before a warm-up is the centering reference
  W₀, not a row) and record the optimizer step of every row in the variable ``step_of_epoch``
  (over every sweep dimension; NaN where a run has no such epoch). They have no ``step``
  coordinate: one sweep's datasets differ in steps per epoch, so no single step label names
  the same row of every run, while an epoch does. ``combine_runs`` aligns such runs on
  ``epoch``, padding a shorter run (MNIST's 50 epochs against 150) with NaN.

A run's loss of every optimizer step has its own dimension ``iteration`` (the loss at the
weights after that many steps), longer than any snapshot axis.

Every variable carries CF attributes: a ``long_name``, and ``units`` on every data variable
and every numeric coordinate ("1" when dimensionless, "steps", "epochs", "nats", "s");
``check_attributes`` refuses a store without them.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import subprocess
from importlib import metadata
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

from featlearn.config import check_spec
from featlearn.pipeline.integrity import DIGEST_KEY, dataset_digest, land

log = logging.getLogger(__name__)
PACKAGES = ("torch", "numpy", "xarray", "netCDF4", "snakemake", "featlearn")

def check_attributes(ds: xr.Dataset) -> None:
    """Raise ValueError naming every variable that lacks its CF attributes: a ``long_name`` on every variable, and
    ``units`` on every data variable and every numeric coordinate (a string label has none)."""
    missing = []
    for name, var in ds.variables.items():
        needs = ["long_name"]
        if name in ds.data_vars or np.issubdtype(var.dtype, np.number) or var.dtype == bool:
            needs.append("units")
        if lacking := [key for key in needs if key not in var.attrs]:
            missing.append(f"{name} ({', '.join(lacking)})")
    if missing:
        raise ValueError(f"store variables without CF attributes: {'; '.join(missing)}; set them where the Dataset "
                         "is built (units '1' for a dimensionless quantity)")


def git_state(repo: Path | None = None) -> tuple[str, bool]:
    """(commit, dirty) of the repository holding this code; ('unknown', True) outside git."""
    cwd = repo or Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown", True
    return commit.stdout.strip(), bool(status.stdout.strip())


def package_versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return " ".join(found)


CONFIG_EDITS = "FEATLEARN_CONFIG_EDITED"  # set by the Snakefile: the spec hashes of experiments not as committed


def provenance(config_json: str, scale: str, rule: str, data_source: str, numerics: str) -> dict[str, str | int]:
    """The global attributes every store carries; ``numerics`` is what decided its bits
    (``featlearn.pipeline.numerics``).

    ``git_dirty`` is 1 only for a difference that decides this store: the code (``src/``, ``workflow/``, the
    Snakefile) differs from the commit, or this spec came from an experiment whose section of the config that ran
    differs from the committed config.yaml. Which experiments those are the Snakefile records when it parses the
    config (``$FEATLEARN_CONFIG_EDITED``, ``featlearn.pipeline.reruns.edited_specs``): a config.yaml edited mid-build is
    not what ran. ``config_sha256`` is the hash of the spec that ran."""
    commit, tree_dirty = git_state()
    config_hash = hashlib.sha256(config_json.encode()).hexdigest()
    edits = os.environ.get(CONFIG_EDITS)
    config_edited = tree_dirty if edits is None else config_hash[:10] in json.loads(edits)
    return {
        "experiment_config": config_json,
        "config_sha256": config_hash,
        "config_edited": int(config_edited),
        "scale": scale,
        "data_source": data_source,
        "git_commit": commit,
        "git_dirty": int(config_edited or _code_dirty(commit)),
        "packages": package_versions(),
        "numerics": numerics,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "rule": rule,
    }


def _code_dirty(commit: str) -> bool:
    """Whether the code that computes (``src/``, ``workflow/``, the Snakefile) differs from ``commit``; other files
    (docs, tests, the config, checked per experiment) do not change a store."""
    if commit == "unknown":
        return True
    paths = [":(top)src", ":(top)workflow", ":(top)Snakefile"]
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=Path(__file__).resolve().parent,
                                capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return True
    return bool(status.stdout.strip())


def write_store(ds: xr.Dataset, path: str | Path, attrs: dict[str, str | int]) -> None:
    """Write ``ds`` with ``attrs`` and a digest of its values to ``path`` through a temporary file and a rename;
    every variable must carry its CF attributes (``check_attributes``). A destination that cannot take it keeps the
    store in a rescue folder (``featlearn.pipeline.integrity.land``): a full disk raises ``DiskNeedError``, any other
    failure ``ResultKept``, each naming where it is."""
    path = Path(path)
    try:
        check_attributes(ds)
    except ValueError as err:
        raise ValueError(f"metric store {path}: {err}") from None

    def write(tmp: Path) -> None:
        ds.assign_attrs(attrs).to_netcdf(tmp, engine="netcdf4")
        # the digest of the values as every reader decodes them (netCDF may change dtypes on the way)
        with xr.open_dataset(tmp, engine="netcdf4") as written:
            digest = dataset_digest(written.load())
        with netCDF4.Dataset(tmp, "a") as nc:
            nc.setncattr(DIGEST_KEY, digest)

    land(write, path)


def read_store(path: str | Path, expected: dict | None = None) -> xr.Dataset:
    """Load a store fully into memory (and close the file), checking its digest and, given the ``expected`` spec,
    that it was computed from that configuration; errors name the path and the fix."""
    fix = "delete it and rerun snakemake to rebuild it"
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            ds = ds.load()
    except (OSError, ValueError) as err:
        raise OSError(f"metric store {path} is unreadable ({err}); {fix}") from err
    digest = ds.attrs.pop(DIGEST_KEY, None)
    if digest is None:
        log.warning("metric store %s carries no digest (an older version wrote it); unverified", path)
    elif digest != dataset_digest(ds):
        raise OSError(f"metric store {path} is corrupted (its values no longer match the digest written with "
                      f"them); {fix}")
    if expected is not None:
        check_spec(path, str(ds.attrs.get("experiment_config", "{}")), expected)
    return ds
