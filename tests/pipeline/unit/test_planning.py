"""The build's plan (featlearn.pipeline.planning) without Snakemake: what common.smk hands the rules."""

from pathlib import Path

import pytest
import yaml

from featlearn import config as fc
from featlearn.data import prepare
from featlearn.pipeline import deps, planning
from featlearn.pipeline import resources as fr

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def no_stamps(monkeypatch):
    """Code inputs are computed, but no stamp is written into the checkout's results/."""
    monkeypatch.setattr(deps, "write_stamp", lambda *args: None)
    deps.code_stamp.cache_clear()
    deps.entry_stamp.cache_clear()


def plan(scale: str = "smoke", **config) -> planning.Plan:
    return planning.Plan(yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": scale} | config)


def test_the_plan_holds_every_experiments_units_and_the_data_they_read():
    p = plan()
    assert (p.tag, p.results, p.figures, p.threads) == ("smoke", "results/smoke", "figures/smoke", 1)
    assert set(p.units) == set(p.experiments) == set(p.planned)
    assert all(u["threads"] == 1 for units in p.units.values() for u in units.values())
    assert set(p.trained) < set(p.experiments)
    blocks = {fc.dataset_key(b) for e, units in p.units.items() for u in units.values() for b in p.kind[e].datasets(u)}
    assert blocks == set(p.datasets) == set(p.synthetic_data) | set(p.real_data)
    assert len(p.all_figures) == len(p.figure_table) == len(p.shortcuts) - len(p.figure_numbers["alignment"])


def test_a_rehearsal_has_its_own_tag_and_no_shortcuts():
    p = plan("paper", rehearse=True)
    assert (p.tag, p.shortcuts, p.projection) == ("paper-rehearsal", [], {})
    assert p.planned_units != p.units


def test_experiments_whose_data_is_absent_are_unreachable_and_their_claims_not_measured(tmp_path):
    p = plan("paper", data_dir=str(tmp_path))
    assert p.unreachable and p.unreachable <= set(p.experiments)
    assert not p.unreachable & {e for stores in p.claim_stores.values() for e in stores}
    assert not plan("paper", data_dir=str(tmp_path), download=True).unreachable


def test_file_names_carry_the_spec_hash_and_another_hash_is_refused():
    p = plan()
    e = p.trained[0]
    uid, unit = next(iter(p.units[e].items()))
    spec = fc.spec_hash(unit)
    assert p.run_path(e, uid) == f"results/smoke/runs/{e}/{uid}.{spec}.pt"
    assert p.unit(e, uid, spec) is unit
    with pytest.raises(ValueError, match=f"no unit of config.yaml has spec hash 0000000000 .*{spec}"):
        p.unit(e, uid, "0000000000")
    with pytest.raises(ValueError, match="has spec hash"):
        p.experiment(e, "0000000000")
    assert p.store_path(e) == f"results/smoke/metrics/{e}.{fc.spec_hash(p.experiments[e])}.nc"


def test_built_files_are_the_runs_and_stores_the_figures_read():
    p = plan()
    built = p.built_files()
    assert all(f.startswith(("results/smoke/runs/", "results/smoke/metrics/")) for f in built)
    assert {p.store_path(e) for e in p.figure_experiments_of(None)} <= set(built)


def test_a_figure_that_is_not_built_or_reads_an_undefined_experiment_stops_the_plan():
    p = plan()
    assert p.figure_experiments_of("alignment/fig1") == p.figure_stores("alignment", "1")
    with pytest.raises(ValueError, match="not a figure this pipeline builds"):
        p.figure_stores("alignment", "99")
    e = p.figure_stores("alignment", "1")[0]
    del p.experiments[e]
    with pytest.raises(ValueError, match="which config.yaml does not define"):
        p.figure_stores("alignment", "1")


def test_each_job_lists_the_dispatch_entries_it_chooses():
    p = plan("quick")
    for e in p.trained:
        for unit in p.units[e].values():
            code = p.train_code(unit)
            optimizer, arch = unit["train"]["optimizer"], unit["model"].get("arch", "mlp")
            entries = {s for s in code if s.startswith(f"{deps.STAMPS}/dispatch/")}
            expected = {f"{deps.STAMPS}/dispatch/src/featlearn/optim/__init__.py/{optimizer}.ast",
                        f"{deps.STAMPS}/dispatch/src/featlearn/models/__init__.py/{arch}.ast"}
            assert entries == expected, unit
            # the only optimizer steered by a metric (its optim.DISPATCH entry says which) runs the metric's code
            steered = f"{deps.STAMPS}/src/featlearn/metrics/nfa.py.ast" in code
            assert steered == (optimizer == "slo_adaptive"), unit
            assert code[0] == f"{deps.STAMPS}/workflow/scripts/train.py.ast"
    for block in p.real_data.values():
        entries = [s for s in p.data_code(block) if s.startswith(f"{deps.STAMPS}/dispatch/")]
        assert entries == [f"{deps.STAMPS}/dispatch/src/featlearn/data/prepare.py/{prepare.choice(block)}.ast"]
    assert not [s for e in p.experiments for s in p.combine_code(e) if "/dispatch/" in s]


def test_stamps_are_rewritten_only_when_they_change(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = plan()
    p.write_stamps()
    spec = Path(p.spec_stamp(p.trained[0]))
    assert Path(planning.SCALE_STAMP).read_text() == "smoke\n"
    assert spec.read_text() == fc.spec_json(p.experiments[p.trained[0]]) + "\n"
    before = spec.stat().st_mtime_ns
    p.write_stamps()
    assert spec.stat().st_mtime_ns == before


def test_a_gpu_job_no_card_holds_is_refused_by_name():
    p = plan("paper", device="cuda")
    e = next(e for e in p.trained if p.experiments[e]["kind"] == "network")
    uid = next(iter(p.units[e]))
    res = p.job_resources("train", e, uid, 1, fr.GpuCards(None, None, "no card"))
    assert res["gpu"] == 1 and res["gpu_mem_mb"] > 0
    small = fr.GpuCards(1, None, "a 1 MB card")
    with pytest.raises(fr.GpuMemoryError, match=f"train {e}/{uid} needs"):
        p.job_resources("train", e, uid, 1, small)
    with pytest.raises(fr.GpuMemoryError, match="2 GPU job"):
        p.check_gpu_jobs([("train", e, uid), ("measure", e, uid)], small)


def test_projection_tables_cover_every_rehearsed_job():
    p = plan("paper", rehearse=True)
    experiments = p.figure_experiments_of(planning.projection_figure("/alignment/fig1"))
    tables = p.projection_tables(experiments)
    assert set(tables["planned"]) == set(experiments)
    assert all("alignment/fig1" in tables["figures"][e] for e in experiments)
    measured = {k for k in tables["usage"] if k.startswith("measure/")}
    assert measured == {f"measure/{e}/{u}" for e in experiments for u in p.units[e]}
    assert planning.projection_figure("") is None


def test_one_of_matches_exactly_the_names():
    assert planning.one_of(["a.b", "c"]) == r"a\.b|c"
    assert planning.one_of([]) == "NONE"
