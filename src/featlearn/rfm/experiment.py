"""One Deep RFM experiment store (collapse paper Figs 1, 3–6; spec ../shared/specs/collapse.md §2.3, §4, §5).

An experiment fixes the activation (ReLU or cos RFF) and runs ``deep_rfm`` once per dataset, one job each. The data
stage prepares each dataset (``featlearn.experiments.deep_rfm.data_block``: the first N training images, standardized per
feature over those N, ±1 one-hot, flattened, sorted by class; real files at paper scale, the labelled offline
stand-ins at quick scale), ``deep_rfm_dataset`` runs one, and ``combine_datasets`` stacks them along ``dataset``.
"""

from __future__ import annotations

import logging
import zlib

import torch
import xarray as xr

from featlearn.rfm.deep_rfm import deep_rfm

log = logging.getLogger(__name__)


def deep_rfm_dataset(cfg: dict, name: str, data: dict, device: torch.device | str = "cpu") -> xr.Dataset:
    """Run experiment ``cfg`` on one prepared dataset (``featlearn.experiments.deep_rfm.data_block``), in float64 on ``device``
    (the job's: the paper's N = 50,000 needs one GPU). The random features come from a CPU generator, so a seed draws
    the same features on every device."""
    model = cfg["model"]
    x, labels = data["x_train"].to(device=device, dtype=torch.float64), data["labels_train"]  # deep_rfm moves labels
    kernel = model["kernel"][name]
    generator = torch.Generator().manual_seed(zlib.crc32(f"deep_rfm/{name}/{cfg['seed']}".encode()))
    log.info("deep_rfm %s: N = %d, d = %d, kernel %s, %s width %d, on %s", name, *x.shape, kernel,
             model["activation"], model["width"], device)
    ds = deep_rfm(
        x, labels, generator, depth=model["depth"], kernel=kernel, bandwidth=model["bandwidth"],
        ridge=model["ridge"], activation=model["activation"], width=model["width"], gamma=model["gamma"],
        normalize_agop=model["normalize_agop"], gram_layers=tuple(cfg["gram"]["layers"]),
        gram_per_class=cfg["gram"]["per_class"],
    )
    nc1 = ds.nc1.sel(stage="X")
    log.info("deep_rfm %s: NC1(X) layer 1 %.3g, layer %d %.3g; %.1f s", name, float(nc1.isel(layer=0)),
             model["depth"], float(nc1.isel(layer=-1)), float(ds.seconds.sum()))
    return ds.assign_attrs(dataset=name, kernel=kernel, data_source=data["source"])


def combine_datasets(cfg: dict, parts: list[xr.Dataset]) -> xr.Dataset:
    """Stack ``deep_rfm_dataset`` results along ``dataset``, in the experiment's order.

    Attributes: the run's hyper-parameters (kernel per dataset in ``kernel_<dataset>``) and ``data_source``, the
    datasets' source strings, one line each (stand-ins named as such).
    """
    model = cfg["model"]
    # i, j index the class-sorted subsample per dataset; position-based so datasets stack
    runs = [part.drop_vars(["i", "j"]).drop_attrs() for part in parts]
    store = xr.concat(runs, dim="dataset", coords="different", compat="equals", join="outer")
    store = store.assign_coords(dataset=[part.attrs["dataset"] for part in parts])
    store.attrs.update({
        "activation": model["activation"], "bandwidth": model["bandwidth"], "ridge": model["ridge"],
        "width": model["width"], "gamma": model["gamma"], "normalize_agop": int(model["normalize_agop"]),
        "n_samples": cfg["data"]["n"], "seed": cfg["seed"],
        **{f"kernel_{part.attrs['dataset']}": part.attrs["kernel"] for part in parts},
        "data_source": ";\n".join(part.attrs["data_source"] for part in parts),  # one line each in figure footers
    })
    return store
