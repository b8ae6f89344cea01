"""Metric stores: netCDF via xarray, with provenance, written atomically.

Every store carries, as global attributes, the experiment's resolved config (JSON), the
scale, where its data came from (real or stand-in), the git commit and dirty flag, the
package versions, the creation time and the producing rule. A write goes to a temporary
file first and is renamed into place, so a killed job never leaves a store that looks done;
a digest of the values (attribute ``sha256``) lets every reader detect a corrupted store.
"""

from __future__ import annotations

import datetime
import logging
import os
import subprocess
from importlib import metadata
from pathlib import Path

import netCDF4
import xarray as xr

from featlearn.integrity import DIGEST_KEY, dataset_digest

log = logging.getLogger(__name__)
PACKAGES = ("torch", "numpy", "xarray", "netCDF4", "snakemake", "featlearn")


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


def provenance(config_json: str, scale: str, rule: str, data_source: str) -> dict[str, str | int]:
    """The global attributes every store carries."""
    commit, dirty = git_state()
    return {
        "experiment_config": config_json,
        "scale": scale,
        "data_source": data_source,
        "git_commit": commit,
        "git_dirty": int(dirty),
        "packages": package_versions(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "rule": rule,
    }


def write_store(ds: xr.Dataset, path: str | Path, attrs: dict[str, str | int]) -> None:
    """Write ``ds`` with ``attrs`` and a digest of its values to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        ds.assign_attrs(attrs).to_netcdf(tmp, engine="netcdf4")
        # the digest of the values as every reader decodes them (netCDF may change dtypes on the way)
        with xr.open_dataset(tmp, engine="netcdf4") as written:
            digest = dataset_digest(written.load())
        with netCDF4.Dataset(tmp, "a") as nc:
            nc.setncattr(DIGEST_KEY, digest)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_store(path: str | Path) -> xr.Dataset:
    """Load a store fully into memory (and close the file), checking its digest; errors name the path and the fix."""
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
    return ds
