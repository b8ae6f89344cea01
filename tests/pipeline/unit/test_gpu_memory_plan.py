"""GPU memory planned from the start: every GPU job of the paper scale declares its need, no card is overcommitted
(24, 40, 80 and 141 GB cards, simulated), and a job no card holds is refused before any job runs."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from featlearn.config import experiment
from featlearn.pipeline import experiments as fx
from featlearn.pipeline import resources as fr

ROOT = Path(__file__).resolve().parents[3]
CARDS_GB = (24, 40, 80, 141)
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.fixture(scope="module")
def paper_needs() -> dict[str, int]:
    """{'<stage> <experiment>/<unit>': MB} of every job that asks for a GPU at the paper scale under device: cuda,
    through the functions the Snakefile's job_request calls."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    needs = {}
    for name in config["experiments"]:
        exp = experiment(config, name)
        kind = fx.kind_of(exp["kind"])
        for uid, unit in kind.units(name, exp).items():
            for stage in ("train", "measure"):
                res = fr.job_resources("cuda", "paper", stage, exp["kind"], None, 1, unit, kind.datasets(unit))
                if res["gpu"]:
                    needs[f"{stage} {name}/{uid}"] = res["gpu_mem_mb"]
    return needs


def test_every_deep_rfm_and_network_job_declares_its_gpu_memory(paper_needs):
    kinds = {name: e["kind"] for name, e in yaml.safe_load((ROOT / "config.yaml").read_text())["experiments"].items()}
    heavy = {job for job in paper_needs if kinds[job.split()[1].split("/")[0]] in ("deep_rfm", "network")}
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "paper"}
    fits = sum(len(fx.kind_of("deep_rfm").units(n, experiment(config, n))) for n, k in kinds.items() if k == "deep_rfm")
    assert fits >= 6 and sum(job.startswith("measure deep_rfm") for job in heavy) == fits  # every dataset's fit
    assert sum(job.startswith("train ") for job in heavy) >= 40
    assert all(need > fr.CUDA_CONTEXT_MB for need in paper_needs.values()), paper_needs
    deep_rfm = [need for job, need in paper_needs.items() if "deep_rfm" in job]
    assert min(deep_rfm) > 4 * 50000**2 / 1e6, "Deep RFM's N×N float64 kernel alone is 20 GB at N = 50,000"


@pytest.mark.parametrize("gb", CARDS_GB)
def test_each_card_size_plans_every_job_it_holds_and_refuses_the_others(paper_needs, gb):
    """A simulated card: the global gpu_mem_mb Snakemake shares out is the card, so jobs sharing it never hold more
    at once, and every job larger than it is refused, all named, before any job runs (never capped silently)."""
    cards = fr.gpu_cards(gb * 1000, True, [])
    assert cards.card_mb == gb * 1000
    too_big = {job for job, need in paper_needs.items() if need > cards.card_mb}
    if too_big:
        with pytest.raises(fr.GpuMemoryError) as err:
            fr.check_cards(paper_needs, cards)
        assert all(f"{job} needs {paper_needs[job]:,} MB" in str(err.value) for job in too_big)
    else:
        fr.check_cards(paper_needs, cards)
    assert all(job.startswith("measure deep_rfm") for job in too_big), too_big  # every network fits 24 GB
    if gb >= 80:
        assert not too_big
        largest = max(paper_needs.values())
        print(f"{gb} GB: largest job {largest:,} MB, {cards.card_mb // largest} of them at once")


def _intervals(folder: Path) -> list[tuple[float, float, int]]:
    rows = [p.read_text().split() for p in folder.glob("*.txt")]
    return [(float(start), float(end), int(need)) for start, end, need in rows]


def test_snakemake_shares_a_found_card_by_memory_and_never_overcommits_it(tmp_path):
    """A card found here (simulated: 24 GB) becomes the global gpu_mem_mb as common.smk sets it; Snakemake then runs
    jobs side by side up to the card but never two 15 GB jobs, with six GPU slots and six cores free."""
    (tmp_path / "Snakefile").write_text(textwrap.dedent('''
        from featlearn.pipeline import resources as fr

        CARDS = fr.gpu_cards(workflow.global_resources.get("gpu_mem_mb").value, workflow.local_exec, [24000])
        workflow.register_resource("gpu_mem_mb", CARDS.total_mb)
        NEEDS = [15000, 15000, 15000, 8000, 8000, 8000]

        rule all:
            input: expand("ran/{i}.txt", i=range(len(NEEDS)))

        rule job:
            output: "ran/{i}.txt"
            resources: gpu=1, gpu_mem_mb=lambda w: NEEDS[int(w.i)]
            params: need=lambda w: NEEDS[int(w.i)]
            shell: "s=$(date +%s.%N); sleep 0.6; echo $s $(date +%s.%N) {params.need} > {output}"
        '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([SNAKEMAKE, "--cores", "6", "--resources", "gpu=6", "--workflow-profile", "none",
                           "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = _intervals(tmp_path / "ran")
    assert len(runs) == 6
    held = [sum(need for s, e, need in runs if s <= t < e) for t, _, _ in runs]
    assert 15000 < max(held) <= 24000, runs  # jobs did share the card, never beyond it
    big = [(s, e) for s, e, need in runs if need == 15000]
    assert all(e1 <= s2 or e2 <= s1 for i, (s1, e1) in enumerate(big) for s2, e2 in big[i + 1:]), runs


@pytest.mark.pipeline
def test_a_paper_dry_run_on_a_simulated_24_gb_card(tmp_path, copy_repo):
    """The acceptance check: `snakemake -n --config scale=paper device=cuda` with a 24 GB card lists every Deep RFM
    and network job it plans with its GPU memory, none above the card; a job the card cannot hold stops the plan
    with its name and need (today's Deep RFM at N = 50,000, until it needs less)."""
    repo = copy_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [SNAKEMAKE, "-n", "--cores", "16", "--resources", "gpu=3", "gpu_mem_mb=24000", "--config", "scale=paper",
           "device=cuda"]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    planned = re.findall(r"rule (train|measure):.*?wildcards: experiment=(\w+), unit=([^,]+),.*?resources: ([^\n]+)",
                         out, re.S)
    gpu = {f"{stage} {e}/{u}": int(re.search(r"gpu_mem_mb=(\d+)", r)[1]) for stage, e, u, r in planned
           if "gpu=1" in r}
    assert gpu and all(fr.CUDA_CONTEXT_MB < need <= 24000 for need in gpu.values()), gpu
    refused = re.search(r"GpuMemoryError: .*?: (.*?)\. Build", out)
    if proc.returncode == 0:
        assert sum("deep_rfm" in job for job in gpu) == 6 and sum(job.startswith("train") for job in gpu) >= 40
    else:
        assert refused, out[-3000:]
        named = re.findall(r"(\w+ \w+/\w+) needs ([\d,]+) MB", refused[1])
        assert named and all("deep_rfm" in job and int(need.replace(",", "")) > 24000 for job, need in named), out
