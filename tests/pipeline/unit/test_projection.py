"""featlearn.pipeline.projection: a paper job's hours and memory from its rehearsal's record; requests from one."""

import pytest

from featlearn.pipeline import projection
from featlearn.pipeline.resources import job_resources, projected

RECORD = {"unit": "step", "units_run": 4, "seconds_per_unit": 0.5, "per_unit_from": "after warm-up", "seconds": 10.0,
          "peak_rss_mb": 1500.0, "rss_start_mb": 500.0, "cuda_peak_mb": None, "output_bytes": 2**20, "device": "cpu"}


def _job(**kw):
    fields = dict(stage="train", experiment="e", unit="seed-1", figures=("alignment/fig1",), kind="training",
                  units_paper={"step": 1000, "job": 1}, n_ratio=1.0, usage="", same_job=False, outputs_ratio=2.0)
    return projection.Job(**(fields | kw))


def test_projection_adds_the_overhead_to_the_paper_units():
    row = projection.project(_job(), RECORD)
    assert row.hours == pytest.approx((10 - 0.5 * 4 + 0.5 * 1000) / 3600)
    assert row.status == "extrapolated" and "first seed" in row.how and row.disk_mb == pytest.approx(2.0)


def test_capped_points_scale_with_the_stage_order():
    row = projection.project(_job(stage="measure", kind="deep_rfm", units_paper={"step": 1000, "job": 1},
                                  n_ratio=10.0), RECORD | {"unit": "layer"})
    assert "time order 2" in row.how
    assert row.peak_mb == pytest.approx(500 + 1000 * 100)  # the memory above the start grows as N²


def test_a_rehearsal_that_is_the_paper_job_is_measured():
    row = projection.project(_job(same_job=True, units_paper={"job": 1}), RECORD | {"unit": "job", "units_run": 1})
    assert row.status == "measured"


def test_requests_grow_with_the_attempt_and_ignore_another_device():
    row = {"hours": "1.0", "peak_mb": "2000", "cuda_peak_mb": "", "device": "cpu"}
    assert projected(row, 0, 1) == {"runtime": 90, "mem_mb": 3000}
    assert projected(row, 0, 2) == {"runtime": 180, "mem_mb": 6000}
    assert projected(row, 1, 1) == {}  # a CPU rehearsal does not size a GPU job
    assert job_resources("auto", "paper", "train", "training", row, 2)["mem_mb"] == 6000
    assert job_resources("auto", "paper", "train", "network", None, 2)["mem_mb"] == 2 * job_resources(
        "auto", "paper", "train", "network")["mem_mb"]


def test_markdown_totals_each_figure_and_the_whole():
    rows = [projection.project(_job(unit=f"seed-{i}", figures=f), RECORD)
            for i, f in enumerate((("alignment/fig1",), ("alignment/fig1", "alignment/fig2")))]
    md = projection.to_markdown(rows, "t")
    assert "| alignment/fig1 | 2 |" in md and "| alignment/fig2 | 1 |" in md and "| **all 2** | 2 |" in md
    assert projection.read_csv is not None and projection.to_csv(rows).count("\n") == 3


def test_a_build_stops_up_front_when_results_lacks_the_projected_disk(tmp_path, monkeypatch):
    from featlearn.pipeline import memory, resources

    projection = {"train/e/u": {"disk_mb": "100"}}
    resources.check_disk(projection, tmp_path / "results")  # a real disk holds 100 MB
    monkeypatch.setattr(memory, "free_disk_bytes", lambda path: 10 * 2**20)
    with pytest.raises(memory.DiskNeedError, match="0.105 GB in all"):
        resources.check_disk(projection, tmp_path / "results")
