"""Kind ``deep_rfm``: Deep Recursive Feature Machines, one unit per dataset (docs/figures/collapse.md).

An experiment fixes the activation (ReLU or cos RFF). A unit reads the data stage's prepared dataset (``data_block``:
the first N training images, standardized per feature over those N, ±1 one-hot, flattened, sorted by class; real
files at paper scale, the labelled offline stand-ins at quick scale) and fits ``rfm.DeepRFM`` on the job's device,
whose ``dataset_`` is the unit's store; the experiment's store stacks the datasets along ``dataset``.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

# The kind's flags (featlearn.pipeline.experiments): what its units go through and where they compute.
KIND = {"trained": False, "device": True, "heavy": True, "repeats": {"model.depth": 2, "gram.layers": 1},
        "twin": True}

log = logging.getLogger(__name__)


def data_block(exp: dict, dataset: str) -> dict:
    """The data block of one dataset (docs/figures/collapse.md); the same block a network experiment holds, so the data
    rule prepares (and shares) it."""
    return {"dataset": dataset, "source": exp["data"]["source"], "n": exp["data"]["n"], "n_test": 0,
            "standardize": "feature", "targets": "signed", "flatten": True, "sort_by_class": True}


def units(name: str, exp: dict) -> dict[str, dict]:
    return {d: {**exp, "experiment": name, "dataset": d} for d in exp["data"]["datasets"]}


def datasets(unit: dict) -> list[dict]:
    return [data_block(unit, unit["dataset"])]


def entries(unit: dict) -> list[tuple[str, str]]:
    return []


def check(exp: dict, where: str) -> list[str]:
    from featlearn.data.offline import offline_size_errors  # a check: no code input of the measure and combine jobs

    problems = offline_size_errors(data_block(exp, exp["data"]["datasets"][0]), where)
    if max(exp["gram"]["layers"]) > exp["model"]["depth"]:
        problems.append(f"{where}.gram.layers go past model.depth ({exp['model']['depth']})")
    return problems


def measure(unit: dict, data: list[dict], run: None, device: Any) -> Any:
    """Deep RFM on the unit's dataset, in float64 on ``device`` (the job's: the paper's N = 50,000 needs 21.7 GB of
    it, ``rfm.memory.run_bytes``). The run gets the prepared data as it is and makes its own float64 copy on
    ``device``, the only one there. The random features come from a CPU generator, so a seed draws the same features
    on every device. The store's ``solve`` attribute names the solve the run took (``rfm.memory.SOLVES``)."""
    import torch

    from featlearn.rfm.deep_rfm import DeepRFM

    model, name, prepared = unit["model"], unit["dataset"], data[0]
    x = prepared["x_train"]
    for _ in range(unit.get("nudge", 0)):  # a rounding twin (featlearn.pipeline.twins): inputs one ulp up
        x = torch.nextafter(x, torch.full_like(x, float("inf")))
    kernel = model["kernel"][name]
    log.info("deep_rfm %s: N = %d, d = %d, kernel %s, %s width %d, on %s", name, *x.shape, kernel,
             model["activation"], model["width"], device)
    rfm = DeepRFM(
        depth=model["depth"], kernel=kernel, bandwidth=model["bandwidth"], ridge=model["ridge"],
        activation=model["activation"], width=model["width"], gamma=model["gamma"],
        normalize_agop=model["normalize_agop"], gram_layers=tuple(unit["gram"]["layers"]),
        gram_per_class=unit["gram"]["per_class"], dtype=torch.float64, device=device,
        random_state=zlib.crc32(f"deep_rfm/{name}/{unit['seed']}".encode()), predictor=False,
    ).fit(x, prepared["labels_train"])
    nc1 = rfm.metrics_["nc1"][:, 0]  # NC1 of X_l
    log.info("deep_rfm %s: NC1(X) layer 1 %.3g, layer %d %.3g; %.1f s; solve %s", name, nc1[0], model["depth"],
             nc1[-1], rfm.seconds_.sum(), rfm.solve_)
    return rfm.dataset_.assign_attrs(dataset=name, kernel=kernel, data_source=prepared["source"])


def combine(exp: dict, parts: dict[str, tuple[dict, Any]]) -> Any:
    """The datasets stacked along ``dataset``, in the experiment's order. Attributes: the run's hyper-parameters
    (kernel per dataset in ``kernel_<dataset>``) and ``data_source``, one line per dataset (stand-ins named)."""
    import xarray as xr

    model = exp["model"]
    stores = [parts[d][1] for d in exp["data"]["datasets"]]
    # i, j index the class-sorted subsample per dataset; position-based so datasets stack
    runs = [part.drop_vars(["i", "j"]).drop_attrs(deep=False) for part in stores]  # keep long_name, units
    store = xr.concat(runs, dim="dataset", coords="different", compat="equals", join="outer")
    store = store.assign_coords(dataset=("dataset", [part.attrs["dataset"] for part in stores],
                                         {"long_name": "dataset (stand-ins named in data_source)"}))
    store.attrs.update({
        "activation": model["activation"], "bandwidth": model["bandwidth"], "ridge": model["ridge"],
        "width": model["width"], "gamma": model["gamma"], "normalize_agop": int(model["normalize_agop"]),
        "n_samples": exp["data"]["n"], "seed": exp["seed"],
        **{f"kernel_{part.attrs['dataset']}": part.attrs["kernel"] for part in stores},
        **{f"solve_{part.attrs['dataset']}": part.attrs["solve"] for part in stores},  # rfm.memory.SOLVES
        "data_source": ";\n".join(part.attrs["data_source"] for part in stores),  # one line each in figure footers
    })
    return store
