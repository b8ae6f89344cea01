"""A flipped byte inside tensor data or store values is caught (torch and netCDF alone load such files silently), and
a result that cannot land is rescued with the other outputs of its job, so that put back it is not computed again."""

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import xarray as xr

from featlearn.pipeline import usage
from featlearn.pipeline.integrity import ResultKept, dataset_digest, rescued, tensors_digest
from featlearn.pipeline.jobs import load_tensors, save_tensors
from featlearn.pipeline.store import read_store, write_store


def _flip_inside(path, needle: bytes) -> None:
    """Flip one byte in the middle of ``needle``'s bytes in the file: data, not a header."""
    raw = bytearray(path.read_bytes())
    at = raw.find(needle)
    assert at >= 0
    raw[at + len(needle) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_tensor_digest_ignores_dict_order_and_sees_every_value():
    a = {"w": torch.arange(6.0).reshape(2, 3), "meta": {"step": 3, "name": "x"}, "l": [torch.ones(2), None]}
    b = {"l": [torch.ones(2), None], "meta": {"name": "x", "step": 3}, "w": torch.arange(6.0).reshape(2, 3)}
    assert tensors_digest(a) == tensors_digest(b)
    b["w"][0, 0] = 1e-30
    assert tensors_digest(a) != tensors_digest(b)
    assert tensors_digest({"w": torch.zeros(2, 3)}) != tensors_digest({"w": torch.zeros(3, 2)})


@pytest.mark.parametrize("what", ["run record", "dataset cache", "checkpoint"])
def test_a_flipped_byte_in_a_tensor_file_is_reported_with_its_path(tmp_path, what):
    values = torch.linspace(0, 1, 5000)
    path = tmp_path / "results" / f"{what.replace(' ', '_')}.pt"
    save_tensors({"x_train": values, "status": "completed"}, path)
    assert torch.equal(load_tensors(path)["x_train"], values)
    _flip_inside(path, values.numpy().tobytes()[8000:8064])
    assert torch.load(path, weights_only=False)["x_train"].ne(values).any()  # torch alone takes it
    with pytest.raises(OSError, match=rf"{path} is corrupted .*delete it and rerun snakemake"):
        load_tensors(path)


def test_a_truncated_tensor_file_is_reported_with_its_path(tmp_path):
    path = tmp_path / "run.pt"
    save_tensors({"w": torch.randn(100, 100)}, path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(OSError, match=rf"{path} is unreadable"):
        load_tensors(path)


def _store() -> xr.Dataset:
    return xr.Dataset(
        {"uc_nfc": (("step", "layer"), np.linspace(0.1, 0.9, 400).reshape(200, 2),
                    {"long_name": "uncentered NFC", "units": "1"}),
         "diverged": ((), 0, {"long_name": "1 if the run diverged", "units": "1"})},
        coords={"step": ("step", np.arange(200), {"long_name": "optimizer step", "units": "steps"}),
                "layer": ("layer", [1, 2], {"long_name": "layer", "units": "1"}),
                "convention": ("convention", ["cosine", "pearson"], {"long_name": "correlation convention"})},
    )


def test_store_digest_survives_the_netcdf_round_trip(tmp_path):
    ds = _store()
    write_store(ds, tmp_path / "s.nc", {"scale": "smoke"})
    back = read_store(tmp_path / "s.nc")
    assert dataset_digest(back) == dataset_digest(ds)
    assert "sha256" not in back.attrs and back.attrs["scale"] == "smoke"


def test_a_flipped_byte_in_a_store_is_reported_with_its_path(tmp_path):
    ds, path = _store(), tmp_path / "results" / "metrics" / "sweep.nc"
    write_store(ds, path, {"scale": "smoke"})
    _flip_inside(path, ds["uc_nfc"].values.tobytes()[1600:1664])
    with xr.open_dataset(path) as silently:
        assert not silently["uc_nfc"].equals(ds["uc_nfc"])  # netCDF alone takes it
    with pytest.raises(OSError, match=rf"metric store {path} is corrupted .*delete it and rerun snakemake"):
        read_store(path)


def test_a_truncated_store_is_reported_with_its_path(tmp_path):
    path = tmp_path / "sweep.nc"
    write_store(_store(), path, {"scale": "smoke"})
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(OSError, match=rf"metric store {path} is unreadable"):
        read_store(path)


def _refuse_writes_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Renames into ``folder`` fail as on a read-only mount (tests/pipeline/test_faults.py mounts one for real)."""
    real_replace = os.replace

    def refused(src, dst):
        if Path(dst).parent == folder:
            raise OSError(30, "Read-only file system", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refused)


def _put_back(err: OSError, cwd: Path) -> list[str]:
    """Run each command the error says puts a rescued file back; returns their destinations."""
    commands = re.findall(r"\((mkdir -p '[^']+' && mv '[^']+' '[^']+')\)", str(err))
    for command in commands:
        subprocess.run(command, shell=True, cwd=cwd, check=True)
    return [re.findall(r"'([^']+)'", c)[-1] for c in commands]


def test_a_rescued_run_takes_its_usage_record_along(tmp_path, monkeypatch):
    monkeypatch.setenv("FEATLEARN_RESCUE_DIR", str(tmp_path / "rescued"))
    run, record = tmp_path / "runs" / "r.pt", tmp_path / "usage" / "r.json"
    _refuse_writes_in(run.parent, monkeypatch)
    with pytest.raises(ResultKept) as raised, usage.recorded(record, "cpu", [run], n=3):
        save_tensors({"w": torch.arange(4.0)}, run)
    assert set(rescued(raised.value)) == {run, record} and not record.exists()
    monkeypatch.undo()
    assert _put_back(raised.value, tmp_path) == [str(run), str(record)]
    assert json.loads(record.read_text())["output_bytes"] == run.stat().st_size > 0
    assert torch.equal(load_tensors(run)["w"], torch.arange(4.0))


def test_a_usage_record_that_cannot_land_takes_the_landed_outputs_along(tmp_path, monkeypatch):
    monkeypatch.setenv("FEATLEARN_RESCUE_DIR", str(tmp_path / "rescued"))
    run, record = tmp_path / "runs" / "r.pt", tmp_path / "usage" / "r.json"
    save_tensors({"w": torch.arange(4.0)}, run)
    _refuse_writes_in(record.parent, monkeypatch)
    with pytest.raises(ResultKept, match=rf"could not write {record} .*kept at \S+; once") as raised:
        usage.write(record, "cpu", [run])
    run.unlink()  # Snakemake deletes the outputs of the failed job
    monkeypatch.undo()
    assert _put_back(raised.value, tmp_path) == [str(record), str(run)]
    assert torch.equal(load_tensors(run)["w"], torch.arange(4.0)) and json.loads(record.read_text())["device"] == "cpu"


def test_an_error_of_a_result_not_rescued_is_left_as_it_is(tmp_path):
    record = tmp_path / "r.json"
    with pytest.raises(ValueError, match="^not a write$"), usage.recorded(record, "cpu", [tmp_path / "r.pt"]):
        raise ValueError("not a write")
    assert not record.exists()
