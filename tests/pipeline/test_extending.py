"""The extension table of docs/extending.md, done: in a copy of the repository a user adds an optimizer, an
architecture, the measurement family that reads it, an experiment kind, a figure and its claims, each touching exactly
the files its row counts; then two experiments use them on offline MNIST, validation accepts the new names, a dry run
plans their jobs (the paper's claims job reading the new store and the new claims module), the new figure is built for
real at the smoke scale and the new claims evaluated on its store."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SNAKEMAKE = Path(sys.executable).with_name("snakemake")
EXTENDING = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
FIGURE = "figures/smoke/alignment/fig18.pdf"
CLAIMS = "results/smoke/claims/alignment.json"
S = "src/featlearn"

pytestmark = pytest.mark.pipeline

RMSPROP = '''"""RMSprop, PyTorch's, at the run's learning rate."""

from __future__ import annotations


def make(model, train):
    import torch

    return torch.optim.RMSprop(model.parameters(), lr=train["lr"])


def state_copies(train):
    return 1


def check(exp, where, name):
    return []
'''

TANH_NET = '''"""A fully connected tanh network with biases, drawn as nn.Linear's default with zero biases."""

from __future__ import annotations

import math

import torch
from torch import nn


class TanhNet(nn.Module):
    def __init__(self, d, widths, out):
        super().__init__()
        dims = [d, *widths, out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        x = x.flatten(1)
        for layer in self.layers[:-1]:
            x = torch.tanh(layer(x))
        return self.layers[-1](x)


def build(m, shape, out, generator):
    model = TanhNet(math.prod(shape), m["widths"], out)
    with torch.no_grad():
        for layer in model.layers:
            bound = 1 / math.sqrt(layer.weight.shape[1])
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.zero_()
    return model
'''

WEIGHT_NORMS = '''"""Family weight_norms: each weight matrix's Frobenius norm and its change since initialization."""

from __future__ import annotations

import numpy as np
import xarray as xr


def _matrices(model):
    return [p.detach() for p in model.parameters() if p.dim() == 2]


class Measurement:
    def __init__(self, spec, data, init, device):
        self.init = _matrices(init)

    def snapshot(self, step, model):
        now = _matrices(model)
        return {"weight_norm": np.array([float(w.norm()) for w in now]),
                "weight_change": np.array([float((w - w0).norm() / w0.norm()) for w, w0 in zip(now, self.init)])}

    def dataset(self, values, time_labels):
        layers = np.arange(1, values["weight_norm"].shape[1] + 1)
        return time_labels.assign(
            weight_norm=(("step", "layer"), values["weight_norm"], {"long_name": "‖W_l‖_F", "units": "1"}),
            weight_change=(("step", "layer"), values["weight_change"],
                           {"long_name": "‖W_l − W_l(0)‖_F / ‖W_l(0)‖_F", "units": "1"}),
        ).assign_coords(layer=("layer", layers, {"long_name": "weight matrix l (1 = the first)", "units": "1"}))

    def extras(self):
        return xr.Dataset()
'''

INIT_NORMS = '''"""Kind init_norms: each weight matrix's norm at initialization over seeds, for an architecture on a
dataset's shapes; one job, no training."""

from __future__ import annotations

from featlearn.pipeline.experiments.single import check, combine, units

KIND = {"trained": False, "device": False, "heavy": False, "repeats": {}}

__all__ = ["check", "combine", "datasets", "entries", "measure", "units"]


def datasets(unit):
    return [unit["data"]]


def entries(unit):
    return [("featlearn.models", unit["model"]["arch"])]


def measure(unit, data, run, device):
    import numpy as np
    import xarray as xr

    from featlearn.models import build_model

    norms = [[float(p.norm()) for p in build_model({"model": unit["model"], "seed": seed}, data[0]).parameters()
              if p.dim() == 2] for seed in unit["seeds"]]
    layers = np.arange(1, len(norms[0]) + 1)
    return xr.Dataset(
        {"init_norm": (("seed", "layer"), np.array(norms), {"long_name": "‖W_l(0)‖_F", "units": "1"})},
        coords={"seed": ("seed", unit["seeds"], {"long_name": "seed of the draw", "units": "1"}),
                "layer": ("layer", layers, {"long_name": "weight matrix l (1 = the first)", "units": "1"})},
        attrs={"data_source": data[0].get("source", "?")},
    )
'''

INIT_NORMS_SCHEMA = """
  init_norms:
    type: object
    additionalProperties: false
    required: [kind, data, model, seeds]
    properties:
      kind: {const: init_norms}
      scales: {type: object}
      data: {$ref: "#/$defs/network/properties/data"}
      model: {$ref: "#/$defs/network/properties/model"}
      seeds: {type: array, minItems: 1, items: {type: integer, minimum: 0}}
"""

FIG18 = '''"""Fig 18: each layer's weight norm while RMSprop trains a tanh network, and at initialization over seeds."""

from __future__ import annotations

from featlearn.figures.style import apply_style, figure, finish, grid, ordered_colors

EXPERIMENTS = ("ext_norms", "ext_init_norms")


def render(stores, out):
    apply_style()
    trained, init = stores["ext_norms"], stores["ext_init_norms"]
    fig = figure(7.0, 3.0, [trained, init])
    left, right = grid(fig, 1, 2)[0]
    norm = trained["weight_norm"].isel(seed=0)
    for layer, color in zip(norm.layer.values, ordered_colors(norm.sizes["layer"])):
        left.plot(norm.step.values, norm.sel(layer=layer).values, color=color, label=f"layer {layer}")
    left.set(xlabel="step", ylabel="weight norm", title="trained (RMSprop)")
    left.legend(fontsize=6, frameon=False)
    right.errorbar(init.layer.values, init["init_norm"].mean("seed").values, init["init_norm"].std("seed").values,
                   marker="o")
    right.set(xlabel="layer", ylabel="weight norm", title="at initialization")
    finish(fig, out)
'''

FIG18_CLAIMS = '''"""Claims of Fig 18: a tanh network's weights start nonzero."""

from __future__ import annotations

from featlearn.claims.core import Claim
from featlearn.claims.reading import values
from featlearn.claims.terms import Outcome, above

STORES = ("ext_init_norms",)


def nonzero(ds):
    least = float(values(ds.init_norm, "‖W_l(0)‖_F").min())
    return Outcome(f"least ‖W_l(0)‖_F {least:.3g}", (above("least ‖W_l(0)‖_F", least, 0),), least)


CLAIMS = [Claim("fig18.init_nonzero", "18", "Every weight matrix starts nonzero.", "", "least ‖W_l(0)‖_F > 0",
                STORES, nonzero, needs_training=False)]
'''

# Run in the copy after its figure is built: the alignment claims as the claims job evaluates them, on the new store
# alone (every other store absent: not measured).
EVALUATE = """
import glob

from featlearn.claims import core
from featlearn.claims.registry import claims_of
from featlearn.pipeline.store import read_store

stores = {"ext_init_norms": read_store(glob.glob("results/smoke/metrics/ext_init_norms.*.nc")[0])}
for check in core.evaluate_all(claims_of("alignment"), "alignment", stores):
    print(f"{check.id}\t{check.status}")
"""


def _insert(path: Path, anchor: str, line: str) -> None:
    """One line written right after ``anchor``, which must occur once: a table's opening line."""
    text = path.read_text()
    assert text.count(anchor) == 1, f"{path}: {anchor!r} occurs {text.count(anchor)} times"
    path.write_text(text.replace(anchor, anchor + line))


def _add_optimizer(repo: Path) -> None:
    (repo / S / "optim/rmsprop.py").write_text(RMSPROP)
    _insert(repo / S / "optim/__init__.py", "DISPATCH = {\n", '    "rmsprop": "featlearn.optim.rmsprop",\n')


def _add_architecture(repo: Path) -> None:
    (repo / S / "models/tanh_net.py").write_text(TANH_NET)
    _insert(repo / S / "models/__init__.py", "DISPATCH = {\n",
            '    "tanh_net": {"module": "featlearn.models.tanh_net", "family": "weight_norms", "keys": ["widths"]},\n')


def _add_family(repo: Path) -> None:
    (repo / S / "metrics/weight_norms.py").write_text(WEIGHT_NORMS)
    _insert(repo / S / "metrics/measure.py", "DISPATCH = {\n",
            '    "weight_norms": "featlearn.metrics.weight_norms",\n')


def _add_kind(repo: Path) -> None:
    (repo / S / "pipeline/experiments/init_norms.py").write_text(INIT_NORMS)
    schema = repo / "workflow/schemas/config.schema.yaml"
    schema.write_text(schema.read_text() + INIT_NORMS_SCHEMA)  # $defs is the schema's last block


def _add_figure(repo: Path) -> None:
    (repo / S / "figures/alignment/fig18.py").write_text(FIG18)


def _add_claims(repo: Path) -> None:
    (repo / S / "claims/alignment/fig18.py").write_text(FIG18_CLAIMS)


# extension table row -> (the addition, the files it touches)
ADDITIONS = {
    "an optimizer": (_add_optimizer, {f"{S}/optim/rmsprop.py", f"{S}/optim/__init__.py"}),
    "an architecture": (_add_architecture, {f"{S}/models/tanh_net.py", f"{S}/models/__init__.py"}),
    "a measurement family": (_add_family, {f"{S}/metrics/weight_norms.py", f"{S}/metrics/measure.py"}),
    "an experiment kind": (_add_kind, {f"{S}/pipeline/experiments/init_norms.py",
                                       "workflow/schemas/config.schema.yaml"}),
    "a figure": (_add_figure, {f"{S}/figures/alignment/fig18.py"}),
    "a figure's claims": (_add_claims, {f"{S}/claims/alignment/fig18.py"}),
}


def _table_counts() -> dict[str, int]:
    """Each row of the extension table: what to add -> the files it takes."""
    section = EXTENDING.read_text(encoding="utf-8")
    return {m[1]: int(m[2]) for m in re.finditer(r"^\| ([a-z' ]+?) \| (\d+) \|", section, re.M)}


def _files(repo: Path) -> dict[str, bytes]:
    """What a user edits: every file under src/ and workflow/ (bytecode aside), by repository-relative path."""
    return {str(p.relative_to(repo)): p.read_bytes() for top in ("src", "workflow") for p in (repo / top).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _use(repo: Path) -> None:
    """The user's experiments: RMSprop training the tanh network (family weight_norms) on 32 offline MNIST digits
    for 4 steps, and the new kind drawing it at 3 seeds on the same data."""
    data = {"dataset": "mnist", "source": "offline", "n": 32, "n_test": 16, "standardize": "channel",
            "targets": "shifted", "flatten": True}
    model = {"arch": "tanh_net", "widths": [8, 8]}
    path = repo / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["experiments"]["ext_norms"] = {
        "kind": "network", "data": data, "model": model, "sweep": {"seed": [0]}, "measure": {"family": "weight_norms"},
        "train": {"optimizer": "rmsprop", "lr": 1.0e-3, "batch_size": 16, "steps": 4, "measure_every": 2}}
    cfg["experiments"]["ext_init_norms"] = {"kind": "init_norms", "data": data, "model": model, "seeds": [0, 1, 2]}
    path.write_text(yaml.safe_dump(cfg))


def _snakemake(repo: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo / "src"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([str(SNAKEMAKE), *args, "--cores", "1", "--config", "scale=smoke"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


@pytest.fixture(scope="module")
def extended(tmp_path_factory, copy_repo):
    """The copy with every addition made, one after another, and the files each one changed."""
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    original = before = _files(repo)
    changed = {}
    for row, (add, _) in ADDITIONS.items():
        add(repo)
        after = _files(repo)
        changed[row] = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        before = after
    _use(repo)
    return repo, changed, sorted(before.keys() - original.keys())


@pytest.mark.parametrize("row", ADDITIONS)
def test_each_addition_takes_the_files_its_table_row_counts(extended, row):
    _, changed, _ = extended
    assert changed[row] == ADDITIONS[row][1]
    assert len(changed[row]) == _table_counts()[row], f"docs/extending.md: {row} takes {_table_counts()[row]} files"


def test_the_new_names_validate_plan_and_build_the_new_figure(extended):
    """Validation (before any planning) knows the new names from their tables; every new module is a code input of
    the jobs that run it, so editing it reruns them."""
    repo, _, added = extended
    plan = _snakemake(repo, FIGURE, CLAIMS, "-n")
    for output in ("results/smoke/runs/ext_norms/", "results/smoke/metrics/ext_norms.",
                   "results/smoke/metrics/ext_init_norms/all.", "results/smoke/metrics/ext_init_norms.", FIGURE):
        assert output in plan, f"the dry run plans no job writing {output}:\n{plan[-4000:]}"
    for module in added:
        assert f"results/code/{module}.ast" in plan, f"no job lists {module} as code:\n{plan[-4000:]}"

    _snakemake(repo, FIGURE)
    assert (repo / FIGURE).stat().st_size > 1000


def test_the_new_claims_are_planned_and_evaluated(extended):
    """The paper's claims job reads the new figure's store and runs its claims module, found from their file names;
    evaluated as that job does, the new claim passes on the store the figure was built from."""
    repo, _, _ = extended
    plan = _snakemake(repo, CLAIMS, "-n")
    job = plan[re.search(r"^(local)?rule claims:$", plan, re.M).start():].split("\n\n")[0]
    assert "results/smoke/metrics/ext_init_norms." in job, job
    assert f"results/code/{S}/claims/alignment/fig18.py.ast" in job, job

    if not (repo / FIGURE).exists():  # this test run alone: the store the figure reads
        _snakemake(repo, FIGURE)
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    out = subprocess.run([sys.executable, "-c", EVALUATE], cwd=repo, env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    statuses = dict(line.split("\t") for line in out)
    assert list(statuses)[-1] == "fig18.init_nonzero" and statuses.pop("fig18.init_nonzero") == "passed", out
    assert statuses and set(statuses.values()) == {"not measured"}, out
