import errno
import re
from pathlib import Path

import pytest
import torch
import xarray as xr

from featlearn.metrics.axes import step_axis
from featlearn.pipeline import memory
from featlearn.pipeline.jobs import save_tensors
from featlearn.pipeline.store import write_store


def _cgroup_tree(root: Path, folders: dict[str, dict[str, str]]) -> None:
    for rel, files in folders.items():
        (root / rel).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (root / rel / name).write_text(text)


def test_cpu_memory_is_at_most_what_the_kernel_calls_available():
    have = memory.available_bytes("cpu")
    meminfo = int(re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text())[1]) * 1024
    assert 0 < have <= meminfo * 1.01  # MemAvailable moves between the two reads


def test_a_slurm_jobs_cgroup_limit_above_its_step_bounds_the_cpu(tmp_path, monkeypatch):
    """v2: the step's cgroup has no limit ("max"); the job's, one level up, has 4 GB with 3 GB charged, 0.5 GB of
    it page cache the kernel would drop: 1.5 GB are left."""
    _cgroup_tree(tmp_path, {
        "": {},
        "job_7": {"memory.max": f"{4 * 2**30}\n", "memory.current": f"{3 * 2**30}\n",
                  "memory.stat": f"anon 1\nactive_file {2**28}\ninactive_file {2**28}\n"},
        "job_7/step_0": {"memory.max": "max\n", "memory.current": f"{3 * 2**30}\n"},
    })
    (tmp_path / "self").write_text("0::/job_7/step_0\n")
    monkeypatch.setattr(memory, "CGROUP", tmp_path)
    monkeypatch.setattr(memory, "SELF_CGROUP", tmp_path / "self")
    assert memory._cgroup_headrooms() == [int(1.5 * 2**30)]
    assert memory.available_bytes("cpu") <= 1.5 * 2**30


def test_a_v1_memory_cgroup_is_read_too(tmp_path, monkeypatch):
    _cgroup_tree(tmp_path, {"memory/box": {"memory.limit_in_bytes": "1000\n", "memory.usage_in_bytes": "600\n",
                                           "memory.stat": "total_inactive_file 100\n"}})
    (tmp_path / "self").write_text("4:memory:/box\n3:cpu,cpuacct:/box\n0::/\n")
    monkeypatch.setattr(memory, "CGROUP", tmp_path)
    monkeypatch.setattr(memory, "SELF_CGROUP", tmp_path / "self")
    assert memory._cgroup_headrooms() == [500]


def test_check_fits_passes_what_fits_and_names_need_device_and_fix_otherwise(monkeypatch):
    memory.check_fits(1, "cpu", "a byte", "nothing")
    monkeypatch.setattr(memory, "available_bytes", lambda device: 2 * 10**9)
    with pytest.raises(memory.MemoryNeedError) as err:
        memory.check_fits(43.2e9, torch.device("cpu"), "a Deep RFM layer at N = 50,000", "run on a GPU")
    assert isinstance(err.value, MemoryError)
    assert str(err.value) == ("a Deep RFM layer at N = 50,000 needs 43.2 GB of memory, but cpu (host memory: "
                              "MemAvailable and this job's cgroup limit) has 2 GB available; run on a GPU")


def test_free_disk_of_a_folder_not_made_yet_is_its_parents(tmp_path):
    assert abs(memory.free_disk_bytes(tmp_path / "results" / "runs") - memory.free_disk_bytes(tmp_path)) < 2**26
    memory.check_disk(tmp_path / "results", 1, "one byte")
    with pytest.raises(memory.DiskNeedError) as err:
        memory.check_disk(tmp_path / "results", 1e18, "the runs of slo_sweep")
    assert err.value.errno == errno.ENOSPC
    assert f"the runs of slo_sweep needs 1e+09 GB at {tmp_path / 'results'}, but its filesystem has" in str(err.value)
    assert "move results/ to a larger disk" in str(err.value)


@pytest.mark.parametrize("err", [OSError(errno.ENOSPC, "No space left on device"),
                                 RuntimeError("file write failed")])
def test_a_failed_write_is_a_full_disk_by_its_errno_or_the_space_left(tmp_path, monkeypatch, err):
    tmp, target = tmp_path / ".r.pt.1.tmp", tmp_path / "r.pt"
    tmp.write_bytes(b"partial")
    if isinstance(err, RuntimeError):
        memory.raise_if_disk_full(err, tmp, target)  # plenty of space: not blamed on the disk
        tmp.write_bytes(b"partial")
        monkeypatch.setattr(memory, "free_disk_bytes", lambda path: 0)
    with pytest.raises(memory.DiskNeedError, match=rf"the disk holding {tmp_path} is full") as raised:
        memory.raise_if_disk_full(err, tmp, target)
    assert raised.value.__cause__ is err and not tmp.exists()


def _store() -> xr.Dataset:
    return step_axis([0, 1]).assign(loss=("step", [1.0, 0.5], {"long_name": "loss", "units": "1"}))


def test_a_store_written_to_a_full_disk_says_so_and_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "metrics" / "s.nc"
    write_store(_store(), path, {"scale": "smoke"})
    before = path.read_bytes()

    def hdf_error(ds, tmp, **kwargs):
        Path(tmp).write_bytes(b"half a store")
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", hdf_error)
    with pytest.raises(RuntimeError, match="^NetCDF: HDF error$"):  # space left: not blamed on the disk
        write_store(_store(), path, {"scale": "smoke"})
    monkeypatch.setattr(memory, "free_disk_bytes", lambda p: 0)
    with pytest.raises(memory.DiskNeedError) as err:
        write_store(_store(), path, {"scale": "smoke"})
    assert err.value.errno == errno.ENOSPC and isinstance(err.value.__cause__, RuntimeError)
    assert (f"the disk holding {path.parent} is full (0 GB free now) while writing s.nc; nothing was lost: the "
            "partial file is removed and s.nc is as it was before; free space there, or move results/ to a larger "
            "disk") in str(err.value)
    assert path.read_bytes() == before and list(path.parent.iterdir()) == [path]


def test_tensors_saved_to_a_full_disk_say_so_and_leave_no_partial_file(tmp_path, monkeypatch):
    def write_failed(obj, tmp):
        Path(tmp).write_bytes(b"half a run")
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(torch, "save", write_failed)
    monkeypatch.setattr(memory, "free_disk_bytes", lambda p: 0)
    with pytest.raises(memory.DiskNeedError, match=rf"the disk holding {tmp_path / 'runs'} is full"):
        save_tensors({"x": torch.zeros(3)}, tmp_path / "runs" / "r.pt")
    assert list((tmp_path / "runs").iterdir()) == []
