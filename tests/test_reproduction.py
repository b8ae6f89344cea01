"""Manifests, the reproduction check and the comparison of two results trees, on small trees written here."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import xarray as xr

from featlearn.pipeline import numerics
from featlearn.pipeline.jobs import save_tensors
from featlearn.pipeline.manifests import check, read_manifest
from featlearn.pipeline.reproduction import GPU_RTOL, compare, main, manifest
from featlearn.pipeline.store import write_store


def _store(path: Path, uc: np.ndarray, seconds: float, device: str = "cpu") -> None:
    ds = xr.Dataset(
        {"uc_nfc": (("step",), uc, {"long_name": "uncentered NFC", "units": "1"}),
         "seconds": ((), seconds, {"long_name": "wall-clock time", "units": "s"})},
        coords={"step": ("step", np.arange(len(uc)), {"long_name": "step", "units": "steps"})},
    )
    described = json.loads(numerics.describe(1)) | {"device": device}
    write_store(ds, path, {"numerics": json.dumps(described), "created": str(seconds)})


def _tree(root: Path, uc: np.ndarray, seconds: float = 1.0, device: str = "cpu") -> Path:
    """A results/<tag> tree: one run, its unit store and the experiment's store, and a claims file."""
    _store(root / "metrics/exp/seed-0.abc.nc", uc, seconds, device)
    _store(root / "metrics/exp.def.nc", uc, seconds, device)
    save_tensors({"losses": torch.tensor(uc), "snapshots": {"3": {"w": torch.ones(2, 2)}}, "seconds": seconds},
                 root / "runs/exp/seed-0.abc.pt")
    claims = {"checks": [{"paper": "p", "figure": "1", "statement": "it holds", "status": "passed",
                          "measured": f"{uc.mean():.3g}"}]}
    (root / "claims").mkdir(parents=True, exist_ok=True)
    (root / "claims/p.json").write_text(json.dumps(claims))
    return root


def _manifest(root: Path) -> dict:
    files = sorted([*root.glob("metrics/**/*.nc"), *root.glob("runs/**/*.pt")])
    return manifest(root, files, [root / "claims/p.json"], "smoke")


def test_a_build_reproduces_itself_whatever_its_clock(tmp_path):
    a = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5), seconds=1.0))
    b = _manifest(_tree(tmp_path / "b", np.linspace(0, 1, 5), seconds=7.5))  # other wall-clock seconds and created
    text, ok = check(b, a, "b")
    assert ok and "reproduced bitwise: 2 of 2 stores, 1 of 1 runs" in text
    assert "claims: no verdict changed" in text


def test_check_names_the_differing_file_variable_and_verdict(tmp_path):
    uc = np.linspace(0, 1, 5)
    published = _manifest(_tree(tmp_path / "a", uc))
    built = _manifest(_tree(tmp_path / "b", uc * (1 + 1e-3)))
    built["claims"]["p fig 1: it holds"]["status"] = "failed"
    text, ok = check(built, published, "b")
    assert not ok
    assert "differs: bitwise equal 0 of 2 stores, 0 of 1 runs" in text
    assert "| metrics/exp/seed-0.abc.nc | uc_nfc | 0.001 (its " in text
    assert "| runs/exp/seed-0.abc.pt | losses |" in text and "snapshots" not in text  # the equal entry is not listed
    assert "p fig 1: it holds: passed → failed" in text
    assert "this build ran on:" in text


def test_compare_names_the_store_variable_and_difference(tmp_path, capsys):
    a = _tree(tmp_path / "a", np.linspace(0, 1, 5))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    uc = np.linspace(0, 1, 5)
    uc[2] += 2e-4
    _store(b / "metrics/exp.def.nc", uc, 3.0)
    text, ok = compare(a, b)
    assert not ok
    assert "3 files in both: 2 bitwise equal, 2 within the tolerance" in text
    assert "| metrics/exp.def.nc | uc_nfc | 0.0002 | 0.0002 | ✗ |" in text
    assert main(["compare", str(a), str(a)]) == 0
    assert "3 bitwise equal" in capsys.readouterr().out


def test_a_gpu_store_is_held_to_the_gpu_tolerance_and_the_same_card_to_bitwise(tmp_path):
    uc = np.linspace(0.5, 1, 5)
    cpu = _tree(tmp_path / "cpu", uc)
    gpu = _tree(tmp_path / "gpu", uc * (1 + GPU_RTOL / 10), device="cuda (NVIDIA H100 80GB HBM3)")
    text, ok = compare(cpu, gpu)
    assert ok and "within the tolerance" in text and f"≤ {GPU_RTOL:g}" in text
    other = _tree(tmp_path / "gpu2", uc, device="cuda (NVIDIA H100 80GB HBM3)")
    text, ok = compare(gpu, other)
    assert not ok and "held to bitwise" in text


def test_a_hand_edited_manifest_is_refused(tmp_path):
    path = tmp_path / "smoke.json"
    built = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5)))
    path.write_text(json.dumps(built))
    assert read_manifest(path)["scale"] == "smoke"
    built["claims"]["p fig 1: it holds"]["status"] = "passed!"
    path.write_text(json.dumps(built))
    with pytest.raises(ValueError, match="edited after it was written.*publish_manifest"):
        read_manifest(path)


def test_numerics_are_pinned_here_and_recorded():
    assert numerics.unpinned() == {}
    numerics.check()
    described = json.loads(numerics.describe(3, torch.device("cpu")))
    assert described["threads"] == 3 and described["pinned"] == numerics.PINNED and described["device"] == "cpu"
    assert described["aten_capability"] == torch.backends.cpu.get_cpu_capability()


def test_an_unpinned_job_and_a_late_pin_are_refused(monkeypatch):
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    with pytest.raises(RuntimeError, match="does not pin the CPU numerics.*MKL_CBWR"):
        numerics.check()
    with pytest.raises(RuntimeError, match="ran after torch loaded"):  # torch is loaded in the tests
        numerics.pin()


def test_a_gpu_job_asks_for_deterministic_algorithms():
    """In a fresh process (the setting is global): deterministic algorithms, warnings where torch has none."""
    import subprocess
    import sys

    code = ("from featlearn.pipeline import numerics; numerics.deterministic_cuda(); import os, torch; "
            "print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),"
            " os.environ['CUBLAS_WORKSPACE_CONFIG'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", ":4096:8"]
