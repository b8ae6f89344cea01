"""Manifests, the reproduction check and the comparison of two results trees, on small trees written here."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import xarray as xr

from featlearn.pipeline import numerics
from featlearn.pipeline.jobs import save_tensors
from featlearn.pipeline.manifests import (
    REBUILD,
    SEAL,
    ManifestError,
    check,
    published_manifest,
    read_manifest,
    seal,
)
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
    report = check(b, a, "b", "smoke.json")
    assert report.ok
    first = report.summary.splitlines()[0]
    assert first == "same verdicts on all 1 claims; reproduced bitwise: 2 of 2 stores, 1 of 1 runs"


def test_check_leads_with_one_line_and_tables_the_differing_variables_apart(tmp_path):
    uc = np.linspace(0, 1, 5)
    published = _manifest(_tree(tmp_path / "a", uc))
    built = _manifest(_tree(tmp_path / "b", uc * (1 + 1e-3)))
    built["claims"]["p fig 1: it holds"]["status"] = "failed"
    report = check(built, published, "b", "smoke.json", "b/reproduction/check-details.md")
    first = report.summary.splitlines()[0]
    assert not report.ok
    assert first.startswith("same verdicts on 0 of 1 claims, 0 fragile in one build and decided in the other, "
                            "1 contradicted")
    assert first.endswith("of 3 runs and stores, 0 bitwise, 0 within rounding, 3 beyond it (listed below; 3 of them "
                          "with no rounding twin to measure rounding by)")
    assert "  p fig 1: it holds: passed → failed" in report.summary
    assert "  exp: 2 stores, 1 run; " in report.summary and "this build ran on:" in report.summary
    assert report.summary.rstrip().endswith("b/reproduction/check-details.md")
    assert "| metrics/exp/seed-0.abc.nc | beyond rounding | uc_nfc | 0.001 | " in report.details
    assert "| runs/exp/seed-0.abc.pt | beyond rounding | losses |" in report.details
    assert "snapshots" not in report.details  # the equal entry is not listed


def test_a_fragile_verdict_against_a_decided_one_is_no_contradiction(tmp_path):
    published = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5)))
    built = json.loads(json.dumps(published))
    built["claims"]["p fig 1: it holds"]["status"] = "fragile"
    report = check(built, published, "b", "smoke.json")
    assert report.ok
    assert report.summary.startswith("same verdicts on 0 of 1 claims, 1 fragile in one build and decided in the "
                                     "other, 0 contradicted")


def test_a_manifest_of_another_scale_is_refused_with_both_scales(tmp_path):
    published = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5)))
    built = json.loads(json.dumps(published)) | {"scale": "quick"}
    with pytest.raises(ManifestError, match="of scale 'quick', but smoke.json is of scale 'smoke'.*reproduction/"
                                            "quick.json"):
        check(built, published, "b", "smoke.json")


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


def test_a_hand_edited_manifest_is_restored_from_git_not_republished(tmp_path):
    path = tmp_path / "smoke.json"
    built = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5)))
    path.write_text(json.dumps(built))
    assert read_manifest(path)["scale"] == "smoke"
    built["claims"]["p fig 1: it holds"]["status"] = "passed!"
    path.write_text(json.dumps(built))
    with pytest.raises(ManifestError, match=f"edited after it was written.*restore it from git: `git checkout -- "
                                            f"{path}`.*not the fix") as refused:
        read_manifest(path)
    assert "snakemake publish_manifest" not in str(refused.value)


def test_a_truncated_manifest_is_named_as_damaged(tmp_path):
    path = tmp_path / "smoke.json"
    path.write_text(json.dumps(_manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5))))[:100])
    with pytest.raises(ManifestError, match=f"{path} is damaged \\(not valid JSON.*git checkout -- {path}"):
        read_manifest(path)
    with pytest.raises(ManifestError, match="is damaged.*delete it and rerun snakemake"):
        read_manifest(path, REBUILD)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_a_deleted_published_manifest_says_how_to_restore_it(tmp_path, monkeypatch):
    _git(tmp_path, "init", "-q")
    (tmp_path / "reproduction").mkdir()
    (tmp_path / "reproduction/smoke.json").write_text(json.dumps(_manifest(_tree(tmp_path / "a", np.ones(3)))))
    _git(tmp_path, "add", "reproduction/smoke.json")
    _git(tmp_path, "commit", "-q", "-m", "publish")
    monkeypatch.chdir(tmp_path)
    assert published_manifest(Path("reproduction/smoke.json"))["scale"] == "smoke"
    assert published_manifest(Path("reproduction/paper.json")) is None  # never published: nothing to hold to
    Path("reproduction/smoke.json").unlink()
    with pytest.raises(ManifestError, match="reproduction/smoke.json is missing.*`git checkout -- reproduction/"
                                            "smoke.json`.*only to set a new reference on purpose"):
        published_manifest(Path("reproduction/smoke.json"))
    _git(tmp_path, "commit", "-q", "-am", "delete")
    with pytest.raises(ManifestError, match="`git checkout [0-9a-f]+~1 -- reproduction/smoke.json`"):
        published_manifest(Path("reproduction/smoke.json"))


def _sealed(manifest: dict) -> dict:
    return manifest | {SEAL: seal(manifest)}


def test_check_manifest_holds_another_build_to_the_published_one_of_its_scale(tmp_path, monkeypatch, capsys):
    published = _manifest(_tree(tmp_path / "a", np.linspace(0, 1, 5)))
    (tmp_path / "reproduction").mkdir()
    (tmp_path / "reproduction/smoke.json").write_text(json.dumps(published))
    other = _manifest(_tree(tmp_path / "b", np.linspace(0, 1, 5) * (1 + 1e-3)))
    (tmp_path / "other.json").write_text(json.dumps(other))
    monkeypatch.chdir(tmp_path)
    assert main(["check-manifest", "other.json", "--details", "details.md"]) == 0  # same verdicts
    assert capsys.readouterr().out.startswith("same verdicts on all 1 claims; of 3 runs and stores, 0 bitwise")
    assert "| runs/exp/seed-0.abc.pt | beyond rounding | losses |" in Path("details.md").read_text()
    other["claims"]["p fig 1: it holds"]["status"] = "failed"
    Path("other.json").write_text(json.dumps(_sealed(other)))
    assert main(["check-manifest", "other.json"]) == 1  # a contradicted verdict
    Path("quick.json").write_text(json.dumps(_sealed(published | {"scale": "quick"})))
    assert main(["check-manifest", "other.json", "--published", "quick.json"]) == 2
    assert "of scale 'smoke', but quick.json is of scale 'quick'" in capsys.readouterr().err


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
