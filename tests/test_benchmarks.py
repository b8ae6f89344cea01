"""Every script in benchmarks/ runs, in its tiny mode (seconds), so that a refactor cannot silently break one: each as
a subprocess from the repository root, as its docstring says to run it, its table's first words checked."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT = 300  # seconds per script: each takes a few on an idle core, more beside other jobs

# script, its tiny arguments, a line its output must hold
RUNS = {
    "blast_radius": (["--tiny"], "| module | smoke jobs (of "),
    "deep_rfm steps": (["--n", "200"], "Kernel system K A = Y"),
    "deep_rfm memory": (["--memory", "--n", "300", "--config", "ReLU + Gaussian"], "peak / 8N²"),
    "deep_rfm solves": (["--solves", "--n", "300", "--config", "ReLU + Gaussian"], "layers equal bit for bit: True"),
    "jacobians": (["--tiny"], "Jacobians + K + AGOP (float64): batched"),
    "k_sum": (["--rounds", "1", "--outputs", "2"], "| 2 | "),
    "measure_nfa": (["--tiny"], "resnet18, 2 inputs of 3×32×32, 2 outputs"),
    "numerics": (["--tiny", "--repeats", "1"], "| Deep RFM, N = 300, 2 layers | "),
}


def _run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert proc.returncode == 0, f"benchmarks/{script}.py {' '.join(args)} failed:\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_every_benchmark_script_is_run_here():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")}
    assert scripts == {name.split()[0] for name in RUNS} | {"stages"}, "add the new script's tiny run to RUNS"


@pytest.mark.parametrize("name", RUNS)
def test_a_benchmark_runs_in_its_tiny_mode(name):
    args, expected = RUNS[name]
    assert expected in _run(name.split()[0], *args)


def test_stages_reads_a_builds_benchmark_files(tmp_path):
    (tmp_path / "train/chain_fig1").mkdir(parents=True)
    (tmp_path / "train/chain_fig1/seed-0.tsv").write_text("s\th:m:s\tmax_rss\n12.5\t0:00:12\t300.0\n")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures/fig1.tsv").write_text("s\th:m:s\tmax_rss\n2.0\t0:00:02\t150.0\n")
    out = _run("stages", str(tmp_path))
    assert "| train | 1 | 12 | train/chain_fig1/seed-0 | 12.5 | 300 |" in out
    assert "| all | 2 | 14 |" in out
