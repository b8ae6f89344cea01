import importlib
import json
import subprocess
import sys

import pytest

from featlearn import optim
from featlearn.data.synthetic import make_dataset
from featlearn.pipeline import deps
from featlearn.pipeline.jobs import save_tensors

ROOT = deps.ROOT
OPTIMIZERS = deps.dispatch("featlearn.optim")
# one optimizer per distinct train job code (its module, and the metric it steers by)
ONE_PER_CODE = sorted({(OPTIMIZERS[n], optim.metrics(n)): n for n in reversed(list(optim.DISPATCH))}.values())


def _run(code: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_planning_checks_every_optimizer_without_torch():
    """The Snakefile validates config.yaml, each optimizer's check included, before any job: every optimizer module
    has the interface and loads without torch."""
    code = ("import importlib, json, sys, yaml\nfrom featlearn import optim\n"
            "from featlearn.pipeline import validation\n"
            "validation.validate(yaml.safe_load(open('config.yaml')), 'workflow/schemas/config.schema.yaml')\n"
            "modules = [optim.module(name) for name in optim.DISPATCH]\n"
            "missing = [m.__name__ for m in modules for f in ('make', 'check', 'state_copies')\n"
            "           if not callable(getattr(m, f, None))]\n"
            "print(json.dumps([missing, 'torch' in sys.modules]))")
    assert json.loads(_run(code)) == [[], False]


@pytest.mark.parametrize("name", ONE_PER_CODE)
def test_a_run_loads_exactly_its_own_optimizer(name, tmp_path):
    """What the smoke build checks from job logs, per optimizer: a run loads exactly the train job's code (script,
    architecture, its optimizer, the metric it steers by; less deps.INERT), so no other optimizer's module."""
    train = {"optimizer": name, "lr": 0.01, "momentum": 0.9, "steps": 2, "measure_every": 1,
             "slo": {"speeds": [1.0, 1.0], "eps": 0.1}, "slo_adaptive": {"s": 2.0, "eps": 0.1}}
    spec = {"experiment": "t", "sweep": {}, "seed": 0,
            "data": {"task": "chain_monomial", "r": 2, "d": 3, "n": 8, "n_test": 0, "alpha": None, "seed": 0},
            "model": {"widths": [4], "activation": "relu", "init_scales": [1.0], "init_convention": "torch_std",
                      "readout_scale": 1.0},
            "train": train, "measure": {}}
    save_tensors(make_dataset(spec["data"]), tmp_path / "data.pt")
    metric = optim.metrics(name)
    code = ("import json, sys\nfrom featlearn.pipeline.jobs import load_tensors\nfrom featlearn.train import train\n"
            + (f"from {metric} import hidden_layer_nfcs as f\n" if metric else "f = None\n")
            + f"train(json.loads({json.dumps(spec)!r}), load_tensors({str(tmp_path / 'data.pt')!r}), "
            f"{str(tmp_path / 'r.pt')!r}, {str(tmp_path / 'c')!r}, layer_nfcs=f)\n"
            "print(' '.join(m for m in sys.modules if m.startswith('featlearn') and m not in sys.argv[1:]))")
    loaded = {str(deps.module_file(m).relative_to(ROOT)) for m in _run(code, *deps.INERT).split()}
    job = deps.job_sources("train", "featlearn.models.mlp", OPTIMIZERS[name], *([metric] if metric else []))
    assert loaded == set(job[1:])


def test_an_unknown_optimizer_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown train.optimizer 'lbfgs'; choose one of \('gd', 'sgd'"):
        optim.module("lbfgs")


def test_each_optimizer_says_how_much_state_it_keeps():
    """A training job's memory request counts the optimizer's state as its module says (resources.training_bytes):
    Adam's and AdamW's two moments, one copy for the others; no table keyed by optimizer name elsewhere."""
    copies = {name: optim.module(name).state_copies({"optimizer": name}) for name in optim.DISPATCH}
    assert copies == {"gd": 1, "sgd": 1, "adam": 2, "adamw": 2, "slo": 1, "slo_adaptive": 1}


def test_an_optimizer_says_the_metric_that_steers_it():
    """The train script hands an optimizer the metric its table entry names (the entry's stamp covers the choice); no
    other table is keyed by optimizer name (the script has none)."""
    steered = {name: optim.metrics(name) for name in optim.DISPATCH if optim.metrics(name)}
    assert steered == {"slo_adaptive": "featlearn.metrics.nfa"}
    assert callable(getattr(importlib.import_module(steered["slo_adaptive"]), "hidden_layer_nfcs", None))
    assert "DISPATCH" not in (ROOT / "workflow/scripts/train.py").read_text()
    with pytest.raises(ValueError, match="unknown train.optimizer 'lbfgs'"):
        optim.metrics("lbfgs")
