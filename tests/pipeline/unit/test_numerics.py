"""The numerics mode (featlearn.pipeline.numerics): pinned kernels for the same bits, or the machine's own for speed,
chosen in the config, carried to every job, recorded in every store and in the experiments' stamps."""

import json
from pathlib import Path

import pytest
import yaml

from featlearn.pipeline import deps, numerics, planning

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def env(monkeypatch):
    """This test's changes to the environment are undone after it."""
    for key in (*numerics.PINNED, numerics.MODE):
        monkeypatch.setenv(key, numerics.PINNED.get(key, "pinned"))
    return monkeypatch


def test_native_lifts_every_pin_and_jobs_accept_it(env):
    numerics.use("native")
    assert numerics.unpinned() == dict.fromkeys(numerics.PINNED)
    numerics.check()  # a native build's job computes as the machine does
    assert json.loads(numerics.describe(1))["mode"] == "native"


def test_a_pinned_build_refuses_a_job_without_the_pins(env):
    numerics.use("pinned")
    env.delenv("MKL_CBWR")
    with pytest.raises(RuntimeError, match="does not pin the CPU numerics"):
        numerics.check()


def test_an_unknown_mode_is_named(env):
    with pytest.raises(ValueError, match="numerics must be one of"):
        numerics.use("fast")


def test_a_switch_of_mode_rewrites_every_stamp_but_keeps_every_file_name(monkeypatch):
    monkeypatch.setattr(deps, "write_stamp", lambda *args: None)
    config = yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "smoke"}
    pinned, native = planning.Plan(config), planning.Plan(config | {"numerics": "native"})
    assert pinned.built_files() == native.built_files()
    stamps = [p for p in pinned.stamps() if p != planning.SCALE_STAMP]
    assert all(pinned.stamps()[p] != native.stamps()[p] for p in stamps)
    assert all('"numerics": "native"' in native.stamps()[p] for p in stamps)
