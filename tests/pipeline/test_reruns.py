"""An edit reruns exactly what it changes: checked on Snakemake's own plan of the whole smoke DAG."""

import pytest
import yaml

from featlearn.pipeline import deps, planning
from featlearn.pipeline.reruns import downstream, planned_jobs, rerun_by

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def plan(tmp_path_factory, copy_repo):
    """The smoke DAG's jobs, and the smoke config its units come from."""
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    config = yaml.safe_load((repo / "config.yaml").read_text()) | {"scale": "smoke"}
    return planned_jobs(repo, "smoke"), config


def _runs(config: dict, keep) -> set[str]:
    """The run files (results/smoke/runs/…) of every trained unit, rounding twins' included, whose spec ``keep``
    accepts."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(deps, "write_stamp", lambda *args: None)
        plan = planning.Plan(config)
    return {plan.run_path(name, unit) for name in plan.trained for unit, spec in plan.units[name].items()
            if keep(spec)}


def _producing(jobs, paths: set[str]) -> set[int]:
    return {i for i, (_, outputs) in enumerate(jobs) if outputs & paths}


def test_an_edit_to_slo_reruns_only_the_slo_runs_and_what_reads_them(plan):
    jobs, config = plan
    slo = _runs(config, lambda spec: spec["train"]["optimizer"].startswith("slo"))
    assert slo, "the smoke DAG trains no SLO run"
    assert rerun_by(jobs, "src/featlearn/optim/slo.py") == downstream(jobs, _producing(jobs, slo))


def test_an_edit_to_the_text_corpus_reruns_only_the_gpt_chain(plan):
    jobs, config = plan
    gpt = _runs(config, lambda spec: spec["model"].get("arch") == "gpt")
    rerun = rerun_by(jobs, "src/featlearn/data/text.py")
    corpus = {i for i in rerun if any(p.startswith("results/smoke/data/") for p in jobs[i][1])}
    assert len(corpus) == 1, "one corpus file"
    assert rerun == downstream(jobs, corpus)
    trained = {p for i in rerun for p in jobs[i][1] if p.startswith("results/smoke/runs/")}
    assert trained == gpt


def test_no_module_but_the_package_root_and_the_job_glue_reruns_every_job(plan):
    """The job glue: how a job loads and saves (jobs, integrity, the hooks through which the science reaches them)
    and the CPU settings that decide its bits (numerics), which every job checks."""
    jobs, _ = plan
    sources = sorted(str(p.relative_to(deps.ROOT)) for p in (deps.SRC / "featlearn").rglob("*.py"))
    everything = [s for s in sources if len(rerun_by(jobs, s)) == len(jobs)]
    glue = {f"src/featlearn/{name}.py" for name in ("__init__", "hooks", "pipeline/__init__", "pipeline/jobs",
                                                     "pipeline/integrity", "pipeline/numerics")}
    assert set(everything) <= glue
