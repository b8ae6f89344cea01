"""Bad input and interruptions through real Snakemake: each stops with a message naming what and where, writes
nothing that a later run would take as done, or (a diverged run) is recorded. The table of cases tried is
tests/BAD_INPUTS.md; add a row there with each new case here."""

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import yaml

from featlearn.pipeline.gpus import gpu_count
from featlearn.pipeline.store import read_store

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
MNIST_CACHE = ("results/paper/data/mnist/"
               "flatten-True_n-50000_n_test-10000_source-real_standardize-channel_targets-shifted.pt")

pytestmark = pytest.mark.pipeline




def _cmd(*args: str, scale: str = "smoke") -> list[str]:
    return [str(SNAKEMAKE), *args, "--cores", "1", "--config", f"scale={scale}"]


def _run(repo: Path, *args: str, scale: str = "smoke") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(_cmd(*args, scale=scale), cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def _edit_config(repo: Path, edit) -> None:
    path = repo / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    edit(cfg)
    path.write_text(yaml.safe_dump(cfg))


def _broken_yaml(repo):
    text = (repo / "config.yaml").read_text().replace("scale: quick ", "scale: [quick ", 1)
    (repo / "config.yaml").write_text(text)


def _unknown_key(repo):
    _edit_config(repo, lambda c: c["experiments"]["chain_fig1"]["train"].update(lrr=0.1))


def _results_is_a_file(repo):
    (repo / "results").write_text("not a directory\n")


def _mnist_with_wrong_files(repo):
    raw = repo / "data/MNIST/raw"
    raw.mkdir(parents=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        (raw / name).write_bytes(b"these are not MNIST's files\n")


def _as_shipped(repo):
    pass


def _duplicate_key(repo):
    with (repo / "config.yaml").open("a") as f:
        f.write("scale: quick\n")  # a second top-level `scale`, which YAML would let win silently


def _experiment_removed_store_left(repo):
    _edit_config(repo, lambda c: c["experiments"].pop("chain_fig1"))
    store = repo / "results/smoke/metrics/chain_fig1.0123456789.nc"
    store.parent.mkdir(parents=True)
    store.write_text("a store from before chain_fig1 was removed\n")


def _data_dir_is_a_file(repo):
    (repo / "datasets.tar").write_text("")
    _edit_config(repo, lambda c: c.update(data_dir="datasets.tar"))


def _experiment_name_too_long(repo):
    _edit_config(repo, lambda c: c["experiments"].update({"x" * 250: c["experiments"]["chain_fig1"]}))


def _unknown_dataset(repo):
    _edit_config(repo, lambda c: c["experiments"]["svhn_slo"]["data"].update(dataset="cifar-10"))


def _results_link_dangles(repo):
    (repo / "results").symlink_to(repo / "unmounted-disk" / "results")


def _quoted_lr(repo):
    _edit_config(repo, lambda c: c["experiments"]["chain_fig1"]["train"].update(lr="0.1"))


def _repeated_seed(repo):
    _edit_config(repo, lambda c: c["experiments"]["chain_fig1"]["scales"]["smoke"]["sweep"].update(seed=[0, 0]))


# (case, how the repo is broken, targets and scale, what the message must say, files that must not exist)
CASES = [
    ("malformed YAML", _broken_yaml, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"config\.yaml is not valid YAML: .* at line \d+, column \d+"], ["results", "figures"]),
    ("unknown config key", _unknown_key, ("figures/smoke/alignment/fig1.pdf",), "smoke",
     [r"experiments\.chain_fig1\.train.*lrr"], ["results", "figures"]),
    ("unknown figure target", _as_shipped, ("figures/smoke/collapse/fig13.pdf",), "smoke",
     [r"figures/smoke/collapse/fig13\.pdf is not a figure this pipeline builds"], ["results/smoke/metrics", "figures"]),
    ("results is not a directory", _results_is_a_file, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"results exists but is not a directory.*move or delete that file"], ["figures"]),
    ("duplicated key", _duplicate_key, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"key 'scale' appears twice in one mapping \(lines \d+ and \d+\)"], ["results", "figures"]),
    ("figure number with a leading zero", _as_shipped, ("figures/smoke/alignment/fig01.pdf",), "smoke",
     [r"figures/smoke/alignment/fig01\.pdf is not a figure this pipeline builds"],
     ["results/smoke/metrics", "figures"]),
    ("experiment removed, its old store left", _experiment_removed_store_left, ("figures/smoke/alignment/fig1.pdf",),
     "smoke",
     [r"fig1\.pdf reads experiment\(s\) \['chain_fig1'\], which config\.yaml does not define"],
     ["figures/smoke/alignment/fig1.pdf"]),
    ("data_dir is a file", _data_dir_is_a_file, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"data_dir 'datasets\.tar' is a file, not a folder"], ["results", "figures"]),
    ("experiment name too long for a file name", _experiment_name_too_long, ("figures/smoke/tangent/fig2.pdf",),
     "smoke", [r"experiments\.x{40}… is 250 bytes long; .* at most 215: shorten it"], ["results", "figures"]),
    ("unknown dataset", _unknown_dataset, ("figures/smoke/alignment/fig17.pdf",), "smoke",
     [r"experiments\.svhn_slo\.data\.dataset must be one of \['mnist', 'cifar10', .*'shakespeare_char'\] "
      r"\(got 'cifar-10'\)"], ["results", "figures"]),
    ("results is a dangling symbolic link", _results_link_dangles, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"results is a symbolic link to .*unmounted-disk/results, which does not exist .*mkdir -p .*rm 'results'"],
     ["figures", "unmounted-disk"]),
    ("a quoted number", _quoted_lr, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"experiments\.chain_fig1\.train\.lr must be of type number \(got '0\.1'\); the value is quoted, which "
      r"makes it a string: write 0\.1 without quotes"], ["results", "figures"]),
    ("a sweep value twice", _repeated_seed, ("figures/smoke/tangent/fig2.pdf",), "smoke",
     [r"experiments\.chain_fig1\.sweep\.seed lists 0 more than once \(got \[0, 0\]\); .*list each value once"],
     ["results", "figures"]),
    ("dataset absent (paper scale, no download)", _as_shipped, (MNIST_CACHE,), "paper",
     [r"MNIST not found in data/MNIST/raw", r"--config download=true"], [MNIST_CACHE]),
    ("dataset folder with the wrong files", _mnist_with_wrong_files, (MNIST_CACHE,), "paper",
     [r"MNIST files in data/MNIST/raw could not be read", r"not the original files"], [MNIST_CACHE]),
]


@pytest.mark.skipif(gpu_count() > 0, reason="checks a machine without a GPU")
def test_cuda_on_a_machine_without_a_gpu_stops_before_any_job_but_a_dry_run_plans(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    _edit_config(repo, lambda c: c.update(device="cuda"))
    assert _run(repo, "figures/smoke/tangent/fig2.pdf", "-n").returncode == 0  # planning for a GPU machine is fine
    proc = _run(repo, "figures/smoke/tangent/fig2.pdf")
    assert proc.returncode != 0 and "device is 'cuda' but this machine has no GPU" in proc.stdout + proc.stderr
    assert not (repo / "results/smoke/logs").exists() and not (repo / "figures/tangent").exists()


@pytest.mark.parametrize("case,breaks,targets,scale,messages,absent", CASES, ids=[c[0] for c in CASES])
def test_bad_input_stops_with_a_message_naming_what_and_where(tmp_path, case, breaks, targets, scale, messages,
                                                              absent, copy_repo):
    repo = copy_repo(tmp_path)
    breaks(repo)
    proc = _run(repo, *targets, scale=scale)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    for pattern in messages:
        assert re.search(pattern, out), f"{case}: no /{pattern}/ in:\n{out[-4000:]}"
    for path in absent:
        assert not (repo / path).exists(), f"{case}: {path} was written"


def test_a_read_only_mount_is_named_as_such(tmp_path, monkeypatch):
    """Not a permission problem to fix with chmod: the output folder's file system is mounted read-only."""
    from featlearn.config import ConfigError
    from featlearn.pipeline.validation import check_output_dirs

    (tmp_path / "results").mkdir()
    statvfs = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: os.statvfs_result((*statvfs(p)[:8], os.ST_RDONLY, 255)))
    with pytest.raises(ConfigError, match=r"results is on a read-only file system \(mounted read-only\).*remount"):
        check_output_dirs(tmp_path / "results")


def test_a_diverged_run_is_recorded_and_the_figure_still_builds(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    _edit_config(repo, lambda c: c["experiments"]["chain_fig1"]["scales"]["smoke"]["train"].update(lr=1.0e4))
    proc = _run(repo, "figures/smoke/alignment/fig1.pdf")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (path,) = (repo / "results/smoke/metrics").glob("chain_fig1.*.nc")
    store = read_store(path)
    assert int(store["diverged"].max()) == 1 and float(store["diverged_step"].min()) >= 0
    (log,) = (repo / "results/smoke/logs/train/chain_fig1").glob("*.log")
    assert "diverged at step" in log.read_text()


def _start(repo: Path, target: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(_cmd(target), cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, preexec_fn=_ctrl_c_as_in_a_terminal)


def _ctrl_c_as_in_a_terminal() -> None:
    """A suite started in the background of a non-interactive shell (`.ci/run &`) inherits SIGINT ignored, and so
    would Snakemake and its jobs; a terminal's Ctrl-C reaches a foreground build with the default handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_checkpoint(proc: subprocess.Popen, ckpt: Path) -> None:
    deadline = time.monotonic() + 300
    while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ckpt.exists(), proc.communicate()[0][-3000:]


@pytest.mark.parametrize("how", ["Ctrl-C on snakemake", "SIGKILL of the training job"])
def test_an_interrupted_build_leaves_nothing_taken_as_done_and_resumes(tmp_path, how, copy_repo, long_training_run):
    repo = copy_repo(tmp_path)
    target, log = long_training_run(repo)
    ckpt, log = repo / target.replace(".pt", ".ckpt"), repo / log
    proc = _start(repo, target)
    _wait_for_checkpoint(proc, ckpt)
    if how == "Ctrl-C on snakemake":
        os.killpg(proc.pid, signal.SIGINT)  # the terminal sends it to the whole foreground group
    else:
        job_pid = int(re.search(r"pid=(\d+)", log.read_text()).group(1))
        os.kill(job_pid, signal.SIGKILL)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, out[-3000:]
    assert not (repo / target).exists(), "an interrupted job left its output behind"
    plan = _run(repo, target, "-n")
    assert re.search(r"^train\s+1$", plan.stdout, re.M), plan.stdout[-2000:]  # planned again, not taken as done
    stopped_at = torch.load(ckpt, weights_only=False)["step"]
    rerun = _run(repo, target)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    assert f"at step {stopped_at}" in log.read_text()  # resumed from the checkpoint
    attempts = re.findall(r"pid=(\d+)", log.read_text())
    assert len(set(attempts)) == 2, attempts  # the interrupted attempt's lines stay beside the rerun's
    assert torch.load(repo / target, weights_only=False)["status"] == "completed"


def test_a_config_change_is_seen_even_without_snakemakes_metadata(tmp_path, copy_repo):
    """Runs and unit stores carry their spec's hash in their names: after `rm -rf .snakemake` (or in a fresh clone
    with copied results) a changed lr still retrains, where Snakemake alone said "Nothing to be done"."""
    repo = copy_repo(tmp_path)
    assert _run(repo, "figures/smoke/alignment/fig1.pdf").returncode == 0
    shutil.rmtree(repo / ".snakemake")
    _edit_config(repo, lambda c: c["experiments"]["chain_fig1"]["scales"]["smoke"]["train"].update(lr=0.3))
    planned = _run(repo, "figures/smoke/alignment/fig1.pdf", "-n").stdout
    assert "rule train:" in planned and "rule figure:" in planned, planned[-3000:]


def test_yaml_merge_keys_and_anchors_are_read_as_yaml_reads_them(tmp_path, copy_repo):
    """`<<: *anchor` was refused as "not valid YAML … spaces, not tabs" though yaml.safe_load reads it."""
    repo = copy_repo(tmp_path)
    cfg = yaml.safe_load((repo / "config.yaml").read_text())
    experiments = textwrap.indent(yaml.safe_dump(cfg.pop("experiments"), sort_keys=False), "  ")
    text = yaml.safe_dump(cfg) + "experiments:\n" + experiments.replace("  chain_fig1:\n", "  chain_fig1: &chain\n", 1)
    (repo / "config.yaml").write_text(text + "  chain_merged:\n    <<: *chain\n    sweep: {seed: [7]}\n")
    assert yaml.safe_load((repo / "config.yaml").read_text())["experiments"]["chain_merged"]["kind"] == "training"
    proc = _run(repo, "figures/smoke/tangent/fig2.pdf", "-n")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def _tmpfs_refused(folder: Path) -> str | None:
    """Why this machine cannot mount a tmpfs in a private mount namespace (root or CAP_SYS_ADMIN), or None."""
    if not shutil.which("unshare"):
        return "unshare (util-linux) is missing"
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(folder)],
                           capture_output=True, text=True)
    return (probe.stderr.strip() or f"exit status {probe.returncode}") if probe.returncode else None


def test_a_full_results_disk_stops_planning_naming_the_folder(tmp_path, copy_repo):
    """Planning writes its stamps under results/: a full disk was a raw InputFunctionException … Errno 28."""
    repo = copy_repo(tmp_path)
    (repo / "results").mkdir()
    if why := _tmpfs_refused(repo / "results"):
        pytest.skip(f"cannot mount a tmpfs here: {why}")
    call = " ".join(f"'{a}'" for a in _cmd("figures/smoke/tangent/fig2.pdf"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs results && exec {call}"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and re.search(r"the disk holding results/ is full \(.* MB free\)", out), out[-3000:]
    assert "move results/ to a larger disk" in out and "Errno 28" not in out
