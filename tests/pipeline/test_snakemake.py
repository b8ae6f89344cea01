"""The whole DAG at smoke scale, in a temporary copy of the repository, through real Snakemake."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from featlearn import config as fc
from featlearn.figures import figure_numbers
from featlearn.pipeline import catalogue, deps, manifests, numerics, reproduction, sensitivity, twins
from featlearn.pipeline import experiments as fx
from featlearn.pipeline.jobs import LOADED_MODULES, load_tensors
from featlearn.pipeline.store import read_store, write_store

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
CORES = str(os.cpu_count() or 2)  # CI's 2; all of a larger machine's (the GPU one builds the smoke DAG in ~1.5 min)
# Every figure of the three papers, found from their modules as the Snakefile finds them: a new figure is tested here.
FIGURES = [f"figures/smoke/{paper}/fig{n}.pdf" for paper, numbers in figure_numbers().items() for n in numbers]

pytestmark = pytest.mark.pipeline




def _env(src: Path) -> dict[str, str]:
    """This environment with ``src`` first on PYTHONPATH: the copy's code, not the checkout's; packages that come
    through PYTHONPATH (a GPU bundle) stay behind it."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}


def _snakemake(repo: Path, *targets: str, options: tuple[str, ...] = (), check: bool = True, scale: str = "smoke",
               env: dict[str, str] | None = None, config: tuple[str, ...] = ()):
    env = _env(repo / "src") | (env or {})
    cmd = [str(SNAKEMAKE), *targets, *options, "--cores", CORES, "--config", f"scale={scale}", *config]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=2400)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


def _planned_rules(repo: Path, *targets: str, scale: str = "smoke", config: tuple[str, ...] = ()) -> list[str]:
    """The jobs a dry run would execute, as rule names."""
    proc = _snakemake(repo, *targets, options=("-n", "--quiet", "rules"), scale=scale, config=config)
    rules = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["total"]:
            break  # Snakemake 9 prints the job table twice; read the first
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "all"):
            rules += [parts[0]] * int(parts[1])
    return rules


@pytest.fixture(scope="module")
def built(tmp_path_factory, copy_repo):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    _snakemake(repo)
    return repo


def test_smoke_build_makes_every_figure_and_store(built):
    for figure in FIGURES:
        assert (built / figure).stat().st_size > 1000, figure
    stores = {p.name.split(".")[0] for p in (built / "results/smoke/metrics").glob("*.nc")}
    experiments = yaml.safe_load((built / "config.yaml").read_text())["experiments"]
    figure_stores = set(experiments) - {"tangent_mnist_author_code"}  # built on demand only
    assert stores == figure_stores  # no rounding twins at smoke scale (config.yaml's twins); asked for below


def test_second_call_does_nothing(built):
    assert _planned_rules(built) == []


def test_the_stores_page_is_what_the_smoke_stores_hold(built):
    """docs/stores.md is generated from these stores: a variable added, renamed or relabelled makes it stale."""
    page = catalogue.catalogue(catalogue.stores_in(built / "results/smoke/metrics"))
    assert page == (deps.ROOT / "docs/stores.md").read_text(encoding="utf-8"), (
        "docs/stores.md is stale: after a smoke build (snakemake --cores 2 --config scale=smoke), regenerate it with "
        "python -m featlearn.pipeline.catalogue results/smoke/metrics docs/stores.md")


# One unit of every network kind and trained family (MLPs under GD, SLO and SGD, VGG, GPT, ResNet, the collapse VGG and
# MLP), Deep RFM and the tangent networks: the part of the smoke DAG a second build repeats under other CPU settings.
REPRODUCED = ["chain_fig1", "adaptive_slo", "real_mlp", "vgg_cifar", "gpt_shakespeare", "collapse_resnet",
              "collapse_vgg", "collapse_mlp", "deep_rfm_relu", "tangent_mnist"]


def _unit_files(repo: Path) -> list[str]:
    """The first unit of each REPRODUCED experiment: its run (if trained) and its unit store."""
    cfg = yaml.safe_load((repo / "config.yaml").read_text()) | {"scale": "smoke"}
    files = []
    for name in REPRODUCED:
        unit_id, unit = next(iter(fx.units(cfg, name).items()))
        stem = f"{name}/{unit_id}.{fc.spec_hash(unit)}"
        files += [f"results/smoke/runs/{stem}.pt"] if fx.KINDS[unit["kind"]]["trained"] else []
        files.append(f"results/smoke/metrics/{stem}.nc")
    return files


def test_the_smoke_build_reproduces_the_published_manifest(built):
    """Every `all` ends with the reproduction check against reproduction/smoke.json. The published manifest was built
    on one CPU; MKL's reproducible branch is Intel's AVX2 one on Intel CPUs and its AUTO one elsewhere, so a CPU of
    the manifest's vendor must reproduce it bitwise, and any other must be told which machines differ."""
    text = (built / "results/smoke/reproduction/check.txt").read_text()
    published = json.loads((built / "reproduction/smoke.json").read_text())
    vendors = {n["vendor"] for n in published["numerics"]}
    here = json.loads(numerics.describe(1))["vendor"]
    if vendors == {here}:
        assert text.startswith("same verdicts on all") and "; reproduced bitwise:" in text, text
    else:
        assert "reproduced bitwise:" in text or "the published build ran on:" in text, text


def test_other_cpu_settings_reproduce_every_network_kind_bitwise(built, tmp_path, copy_repo):
    """MKL limited to AVX2 (what an AVX2-only CPU runs) gives the same runs and stores, bit for bit."""
    repo = copy_repo(tmp_path)
    files = _unit_files(repo)
    _snakemake(repo, *files, env={"MKL_ENABLE_INSTRUCTIONS": "AVX2"})
    for f in files:
        ours, theirs = reproduction.variables(built / f), reproduction.variables(repo / f)
        assert ours.keys() == theirs.keys(), f
        for name in ours:
            assert np.array_equal(ours[name], theirs[name], equal_nan=ours[name].dtype.kind == "f"), (f, name)


def _tangent_manifest(repo: Path) -> dict:
    """The manifest of the tangent paper's part of a smoke build: its runs and stores (twins with them), its claims."""
    results = repo / "results/smoke"
    files = [p for pattern in ("runs/tangent_*/*.pt", "metrics/tangent_*.nc", "metrics/tangent_*/*.nc")
             for p in results.glob(pattern)]
    return reproduction.manifest(results, files, [results / "claims/tangent.json"], "smoke")


def test_another_rounding_path_is_classified_within_or_beyond_rounding_and_keeps_its_verdicts(built, tmp_path,
                                                                                                copy_repo):
    """`numerics: native` computes the tangent paper's part of the smoke DAG on the machine's own kernels, with its
    rounding twins: on an AVX-512 CPU another rounding path than the pinned AVX2 one (on this AMD EPYC the pins decide
    every bit). The check classifies each file of the pinned build by the native build's twin gaps and says so in its
    first line; no verdict contradicts."""
    repo = copy_repo(tmp_path)
    shutil.copytree(built / "results/smoke/data", repo / "results/smoke/data")
    _snakemake(repo, "results/smoke/claims/tangent.json", config=("numerics=native", "twins=true"))
    stores = list((repo / "results/smoke/metrics").glob("tangent_mnist/*.nc"))
    assert stores and all(json.loads(read_store(p).attrs["numerics"])["mode"] == "native" for p in stores)
    pinned, native = _tangent_manifest(built), _tangent_manifest(repo)
    twinned = native["files"].keys() - pinned["files"].keys()
    assert twinned and all(twins.SUFFIX in f for f in twinned)  # otherwise the same names, held to each other
    report = manifests.check(native, pinned, "the native build", "the pinned build")
    first = report.summary.splitlines()[0]
    verdicts = [sensitivity.classify(f, native["files"][f], pinned["files"][f], measured)
                for f, measured in ((f, sensitivity.merged(sensitivity.sensitivity(native["files"]),
                                                           sensitivity.sensitivity(pinned["files"])).get(f))
                                    for f in sorted(pinned["files"]))]
    counts = {v: sum(x.verdict == v for x in verdicts) for v in (sensitivity.BITWISE, sensitivity.WITHIN,
                                                                  sensitivity.BEYOND)}
    assert (f"of {len(verdicts)} runs and stores, {counts[sensitivity.BITWISE]} bitwise, "
            f"{counts[sensitivity.WITHIN]} within rounding, {counts[sensitivity.BEYOND]} beyond it") in first, first
    assert counts[sensitivity.BITWISE] < len(verdicts)  # the native kernels did round otherwise
    assert any(v.measured for v in verdicts if "tangent_mnist" in v.path)  # held to what its twin measured
    for claim, was in pinned["claims"].items():
        now = native["claims"][claim]["status"]
        assert now == was["status"] or "fragile" in (now, was["status"]), (claim, was["status"], now)
    assert report.ok and first.startswith("same verdicts on"), first


def test_the_thread_count_is_part_of_every_result(built):
    """Another thread count splits sums otherwise: every training and measurement is planned anew, under other names."""
    unit_stores = list((built / "results/smoke/metrics").glob("*/*.nc"))
    runs = list((built / "results/smoke/runs").glob("*/*.pt"))
    planned = _planned_rules(built, config=("threads=2",))
    assert planned.count("measure") == len(unit_stores) and planned.count("train") == len(runs)
    assert "real_data" not in planned  # data jobs compute with one thread, whatever the config
    assert _planned_rules(built) == []


def test_compare_names_the_perturbed_store_variable_and_difference(built, tmp_path):
    other = tmp_path / "smoke"
    shutil.copytree(built / "results/smoke", other)
    (store,) = (other / "metrics").glob("chain_fig1.*.nc")
    ds = read_store(store)
    ds["uc_nfc"][(0,) * ds["uc_nfc"].ndim] += 1e-3
    write_store(ds, store, ds.attrs)
    proc = subprocess.run([sys.executable, "-m", "featlearn.pipeline.reproduction", "compare",
                           str(built / "results/smoke"), str(other)], capture_output=True, text=True, cwd=built,
                          env=_env(built / "src"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"| metrics/{store.name} | uc_nfc | 0.001 |" in proc.stdout, proc.stdout
    assert proc.stdout.count("| ✗ |") == 1


def test_a_clone_running_another_checkouts_featlearn_stops_before_any_job(built, tmp_path, copy_repo):
    clone = copy_repo(tmp_path)
    proc = subprocess.run([str(SNAKEMAKE), "-n", "--config", "scale=smoke"], cwd=clone, capture_output=True, text=True,
                          env=_env(built / "src"))
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert f"Snakefile is in {clone}, but Python imports featlearn from {built / 'src/featlearn'}" in said
    assert "Job stats" not in proc.stdout


def test_shortcut_target_builds_from_the_alignment_figure(built):
    _snakemake(built, "figures/fig4.pdf", "figures/collapse/fig3.pdf")
    assert (built / "figures/fig4.pdf").read_bytes() == (built / "figures/smoke/alignment/fig4.pdf").read_bytes()
    shortcut, drawn = built / "figures/collapse/fig3.pdf", built / "figures/smoke/collapse/fig3.pdf"
    assert shortcut.read_bytes() == drawn.read_bytes()


def test_scales_coexist_and_switching_back_only_redraws(built):
    """Another scale's results and figures live in their own folders: building one of its figures touches no smoke
    result or figure, and back at smoke scale nothing reruns: the figures/figN.pdf shortcuts still show the smoke
    figures (the scale stamp is rewritten with the content they were copied under, and Snakemake compares it)."""
    (smoke_store,) = (built / "results/smoke/metrics").glob("tangent_penalties.*.nc")
    smoke_figure = built / "figures/smoke/tangent/fig2.pdf"
    before = smoke_store.stat().st_mtime_ns, smoke_figure.stat().st_mtime_ns
    _snakemake(built, "figures/quick/tangent/fig2.pdf", scale="quick")
    assert list((built / "results/quick/metrics").glob("tangent_penalties.*.nc"))
    assert (smoke_store.stat().st_mtime_ns, smoke_figure.stat().st_mtime_ns) == before
    shortcut = built / "figures/tangent/fig2.pdf"
    copied = shortcut.stat().st_mtime_ns
    # A real call, not a dry run: a dry run writes no stamp, so it lists the readers of the stale scale stamp (the
    # shortcuts) that the real call, comparing the rewritten stamp's content, leaves alone.
    _snakemake(built)
    assert shortcut.stat().st_mtime_ns == copied and _planned_rules(built) == []
    assert _planned_rules(built, "figures/quick/tangent/fig2.pdf", scale="quick") == []  # both scales' figures kept


def _job_table(repo: Path) -> list[dict[str, str]]:
    """Snakemake's own record of every built file: rule, log and input files (`--detailed-summary`)."""
    lines = _snakemake(repo, options=("--detailed-summary",)).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("output_file\t"))
    header = lines[start].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[start + 1:] if line.count("\t") == len(header) - 1]


def _loaded_code(repo: Path, log: str) -> set[str]:
    """The source files of the featlearn modules a job loaded, from the line its log ends with (jobs.start)."""
    line = next(x for x in (repo / log).read_text().splitlines() if LOADED_MODULES in x)
    files = set()
    for name in line.split(LOADED_MODULES)[1].split():
        base = repo / "src" / name.replace(".", "/")
        path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
        files.add(str(path.relative_to(repo)))
    return files


def test_every_job_depends_on_exactly_the_code_it_ran(built):
    """The code inputs featlearn.pipeline.deps computed for each job are exactly the modules it really loaded, less
    those that
    cannot change a result (deps.INERT), and after an edit of every module Snakemake replans each job naming exactly
    its code inputs: an edit reruns precisely the jobs whose code runs the edited file, however it is reached
    (dispatch tables included)."""
    jobs = {row["log-file(s)"]: row for row in _job_table(built) if row["log-file(s)"] not in ("-", "")}
    code = {log: _sources(row["input-file(s)"].split(",")) for log, row in jobs.items()}
    inert = {str(deps.module_file(m).relative_to(deps.ROOT)) for m in deps.INERT}
    for log in jobs:
        loaded = _loaded_code(built, log) - inert
        assert loaded == code[log], (f"{log}: ran but not code inputs {sorted(loaded - code[log])}; code inputs it "
                                     f"never ran {sorted(code[log] - loaded)}")
    sources = sorted((built / "src/featlearn").rglob("*.py"))
    originals = {path: path.read_text() for path in sources}
    try:
        for path in sources:
            _edit(path)
        # one rule at a time: a job whose upstream reruns is listed as "updated by another job" only, so each rule is
        # planned alone (--allowed-rules), which makes every job name all of its own edited inputs
        by_rule: dict[str, list[str]] = {}
        for row in jobs.values():
            by_rule.setdefault(row["rule"], []).append(row["output_file"])
        planned = "\n".join(_snakemake(built, *outputs, options=("-n", "--allowed-rules", rule)).stdout
                            for rule, outputs in sorted(by_rule.items()))
    finally:
        for path, text in originals.items():
            path.write_text(text)
    replanned, fields = {}, {}
    # one block per job: `rule X:`, then `key: value` lines (indented once more in a group job)
    for line in [*(raw.strip() for raw in planned.splitlines()), "rule end:"]:
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            if "log" in fields:
                updated = fields.get("reason", "").partition("Updated input files: ")[2].split(";")[0]
                replanned[fields["log"]] = _sources(p.strip() for p in updated.split(","))
            fields = {}
        elif ": " in line:
            key, value = line.split(": ", 1)
            fields[key] = value
    for log in jobs:
        assert replanned.get(log) == code[log], log
    assert _planned_rules(built) == []


def _sources(inputs) -> set[str]:
    """The featlearn source files whose code stamps (featlearn.pipeline.deps.code_stamp) are among a job's inputs."""
    return {deps.source_of(p) for p in inputs if p.startswith(f"{deps.STAMPS}/src/")}


def _edit(path: Path) -> None:
    """A real code edit: a comment or docstring would change no stamp, and Snakemake 9 ignores a newer mtime when a
    small file's checksum is unchanged."""
    path.write_text(path.read_text() + "\n_EDITED_BY_THE_TEST = True\n")


def test_editing_a_figure_module_reruns_that_figure_only(built):
    _edit(built / "src/featlearn/figures/alignment/fig8.py")
    planned = _snakemake(built, options=("-n",)).stdout
    # figures/fig8.pdf and figures/alignment/fig8.pdf follow
    assert sorted(_planned_rules(built)) == ["alignment_shortcut", "figure", "figure_shortcut"], planned
    assert "output: figures/smoke/alignment/fig8.pdf" in planned
    _snakemake(built)
    assert _planned_rules(built) == []


def test_editing_a_metric_module_reruns_metrics_and_figures_never_training(built):
    """Planned, not run (every store again would be half the smoke build); undoing the edit leaves nothing to do, as
    code inputs are the modules' syntax trees, not their dates."""
    path = built / "src/featlearn/metrics/measure.py"
    original = path.read_text()
    _edit(path)
    try:
        planned = set(_planned_rules(built))
    finally:
        path.write_text(original)
    assert {"measure", "combine", "figure"} <= planned
    assert not planned & {"train", "synthetic_data", "real_data"}
    assert _planned_rules(built) == []


def test_comments_and_docstrings_rerun_nothing_and_a_real_edit_reruns(tmp_path, copy_repo):
    """Code inputs are fingerprints of each module's syntax tree without docstrings: a docstring and a comment edit
    in modules every built job runs leave nothing to do; a real edit to one plans its jobs again."""
    repo = copy_repo(tmp_path)
    targets = ("figures/smoke/alignment/fig1.pdf", "figures/smoke/alignment/fig3.pdf")
    _snakemake(repo, *targets)
    for name in ("config.py", "train.py", "metrics/nfa.py"):
        path = repo / "src/featlearn" / name
        text = path.read_text()
        assert text.startswith('"""'), name
        path.write_text('"""Reworded by the test. ' + text.removeprefix('"""') + "\n# a comment added by the test\n")
    assert _planned_rules(repo, *targets) == []
    _edit(repo / "src/featlearn/metrics/nfa.py")
    assert {"measure", "combine", "figure"} <= set(_planned_rules(repo, *targets))


def test_bad_config_stops_before_any_job_with_a_clear_message(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    cfg = yaml.safe_load((repo / "config.yaml").read_text())
    cfg["experiments"]["init_sweep"]["train"]["lr"] = -0.1
    cfg["experiments"]["slo_sweep"]["model"]["activation"] = "tanh"
    (repo / "config.yaml").write_text(yaml.safe_dump(cfg))
    proc = _snakemake(repo, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "config.yaml: experiments.init_sweep.train.lr must be > 0 (got -0.1)" in out
    assert "experiments.slo_sweep.model.activation must be one of ['relu', 'quadratic'] (got 'tanh')" in out
    assert not (repo / "results").exists() and not (repo / "figures").exists()


def test_unknown_figure_target_names_the_available_ones(tmp_path, copy_repo):
    repo = copy_repo(tmp_path)
    proc = _snakemake(repo, "figures/smoke/alignment/fig99.pdf", options=("-n",), check=False)
    assert proc.returncode != 0
    assert "figures/smoke/alignment/fig99.pdf is not a figure this pipeline builds" in proc.stdout + proc.stderr


def test_report_shows_every_figure_and_the_claims(built):
    _snakemake(built, options=("--report", "report.html"))
    html = (built / "report.html").read_text(errors="replace")
    assert "claims.html" in html
    for figure in ("figures/smoke/alignment/fig2.pdf", "figures/smoke/collapse/fig7.pdf",
                   "figures/smoke/tangent/fig3.pdf"):
        assert figure in html, figure
    # one category per paper, one subcategory per figure, and captions naming the stores each figure was drawn from
    assert '"alignment": {' in html and '"Fig 01": ["figures/smoke/alignment/fig1.pdf"]' in html
    (store,) = (built / "results/smoke/metrics").glob("chain_fig1.*.nc")
    assert f'literal\\">{store.relative_to(built)}</tt>' in html  # in the caption's HTML, escaped as a JS string


# Both devices run the networks in float32 with TF32 off and do the NFC and NC algebra in float64, but CUDA's kernels
# sum in other orders: gradients differ by a few float32 ulps. On an H200 (2026-11-26) the largest difference was
# 1.4e-6 (the GPT's UC-NFC, over its T·V logits), all others ≤ 6e-7; the bound leaves a margin of 7.
DEVICE_TOL = 1e-5
# φ = (log NC1_in − log NC1_right) / (log NC1_in − log NC1_left) is derived from the store's own nc1 stages, which are
# compared; early in training its denominator nearly cancels and multiplies their ulps (3.5e-5 seen on the H200).
DERIVED = {"phi"}


@pytest.mark.gpu
def test_smoke_stores_agree_on_cpu_and_gpu(built):
    """Every per-run measurement and every Deep RFM dataset of the smoke build (computed on the CPU: `auto` asks
    for no GPU at smoke scale) is recomputed on CUDA from the same run and data files; values agree to DEVICE_TOL.
    Every difference is reported at once."""
    cfg = yaml.safe_load((built / "config.yaml").read_text()) | {"scale": "smoke"}
    checked, stored, failures = set(), set(), []
    for name in cfg["experiments"]:
        exp = fc.experiment(cfg, name)
        if not fx.KINDS[exp["kind"]]["device"]:
            continue
        folder = built / "results/smoke/metrics" / name
        stored |= {f"{name}/{p.name.removesuffix('.nc')}" for p in folder.glob("*.nc")}
        kind = fx.kind_of(exp["kind"])
        for unit_id, unit in fx.units(cfg, name).items():
            data = [load_tensors(built / f"results/smoke/data/{fc.dataset_key(p)}.pt") for p in kind.datasets(unit)]
            stem = f"{name}/{unit_id}.{fc.spec_hash(unit)}"
            run = built / f"results/smoke/runs/{stem}.pt"
            gpu = kind.measure(unit, data, load_tensors(run) if run.exists() else None, torch.device("cuda"))
            failures += _differences(read_store(built / f"results/smoke/metrics/{stem}.nc"), gpu, stem)
            checked.add(stem)
    assert checked == stored and len(checked) >= 20, sorted(stored ^ checked)
    assert not failures, "\n".join(failures)


def _differences(cpu, gpu, what: str) -> list[str]:
    """Each numeric variable of ``cpu`` whose NaNs differ or whose values differ by more than DEVICE_TOL on ``gpu``."""
    found = []
    for var in cpu.data_vars:
        if var == "seconds" or var in DERIVED or not np.issubdtype(cpu[var].dtype, np.number):
            continue
        a, b = cpu[var].values.astype(float), gpu[var].values.astype(float)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            found.append(f"{what}: {var} is NaN in different places")
            continue
        err = (np.abs(a - b) / np.maximum(1.0, np.abs(a)))[~np.isnan(a)]  # NaN where both are (checked above)
        if err.max(initial=0.0) > DEVICE_TOL:
            found.append(f"{what}: {var} differs by {err.max():.2e} on CUDA")
    return found


def test_no_figure_has_overlapping_text(built, tmp_path, monkeypatch):
    """Every figure, drawn in-process from the smoke stores of the built tree, has no two texts (titles, legends,
    footer, axis and tick labels, annotations) on top of each other: the layout of a figure cannot regress."""
    import importlib

    from matplotlib.figure import Figure

    from featlearn.figures.style import text_overlaps

    saved: list[Figure] = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (saved.append(fig), savefig(fig, *a, **k))[1])
    overlaps = {}
    for figure in FIGURES:
        paper, name = Path(figure).parent.name, Path(figure).stem
        module = importlib.import_module(f"featlearn.figures.{paper}.{name}")
        stores = {}
        for experiment in module.EXPERIMENTS:
            (path,) = (built / "results/smoke/metrics").glob(f"{experiment}.*.nc")
            stores[experiment] = read_store(path)
        module.render(stores, tmp_path / paper / f"{name}.pdf")
        overlaps[figure] = text_overlaps(saved[-1])
    assert {f: o for f, o in overlaps.items() if o} == {}
