"""The paper scale rehearsed: every job of the paper DAG, through the same rules and code, at the paper's shapes,
for a cut budget (``--config scale=paper rehearse=true``).

One rule cuts an experiment: every *repetition* goes down to the least that still times each code path after a
warm-up, every *shape* stays. Repetitions are

* the sweep's seed axis: its first seed (seeds repeat whole jobs of the same shapes);
* the optimizer steps: ``STEPS`` of them (``rehearse_steps`` sets more, for a longer timing window), measured at
  init and at the end (``train.budget``, read by the loop);
* a kind's own repetition counts, named in its ``KINDS`` entry (``repeats``: Deep RFM's layers, Monte-Carlo nets,
  path points): a count goes down to the number given there, a list to its first entries.

Shapes (widths, depths of networks, batch and input sizes, dataset sizes, measurement sets, Deep RFM's N and feature
width) are the paper's, except where ``rehearse_max_n`` caps a machine too small for them: every count of points
(``N_KEYS``) above the cap is lowered to it, and the unit records the paper's value (``rehearsal.capped``) for the
projection to scale back with the order it measured.
"""

from __future__ import annotations

import copy
from pathlib import Path

STEPS = 4  # optimizer steps of a rehearsed run by default: one warm-up step, three timed
TAG = "rehearsal"
# Counts of points that the size cap lowers, by block: training points, test points, measurement points.
N_KEYS = {"data": ("n", "n_test", "n_train", "n_kernel"), "measure": ("n_measure",)}


def scale_tag(scale: str, rehearse: bool) -> str:
    """The label of a build: its results folder under results/, its figures' folder, its stores' ``scale``."""
    return f"{scale}-{TAG}" if rehearse else scale


def cut(exp: dict, repeats: dict[str, int], max_n: int | None = None, steps: int = STEPS) -> dict:
    """The rehearsal of one resolved experiment: repetitions cut, shapes kept (capped at ``max_n`` points)."""
    out = copy.deepcopy(exp)
    sweep = out.get("sweep", {})
    if "seed" in sweep:
        sweep["seed"] = sweep["seed"][:1]
    for path, least in repeats.items():
        *parents, leaf = path.split(".")
        block = out
        for name in parents:
            block = block[name]
        value = block[leaf]
        block[leaf] = value[:least] if isinstance(value, list) else min(value, least)
    capped = {}
    if max_n is not None:
        for name, keys in N_KEYS.items():
            block = out.get(name, {})
            for k in keys:
                if isinstance(block.get(k), int) and block[k] > max_n:
                    capped[f"{name}.{k}"] = block[k]
                    block[k] = max_n
    out[TAG] = {"steps": steps, "repeats": repeats, "max_n": max_n, "capped": capped}
    return out


def present(dataset: str, data_dir: str | Path) -> bool:
    """Whether the real files of ``dataset`` lie under ``data_dir`` (Shakespeare-char's input.txt or a torchvision
    dataset's files; existence only)."""
    from featlearn.data import text

    if dataset == "shakespeare_char":
        return (Path(data_dir) / text.FOLDER / "input.txt").is_file()
    from featlearn.data import real

    return real.present(dataset, data_dir)


def cut_units(units: dict[str, dict], data_dir: str | Path, steps: int = STEPS) -> dict[str, dict]:
    """The units of a cut experiment as a rehearsal runs them: every trained run stops after ``steps`` optimizer
    steps (``train.budget``), and every real dataset that ``data_dir`` lacks is replaced by its labelled stand-in at
    the real size (``source: standin``): the real files where they are, their sizes where they are not."""
    out = {}
    for uid, unit in units.items():
        unit = copy.deepcopy(unit)
        if "train" in unit:
            unit["train"]["budget"] = {"steps": steps}
        data = unit.get("data", {})
        dataset = data.get("dataset", unit.get("dataset"))
        if data.get("source") == "real" and dataset and not present(dataset, data_dir):
            data["source"] = "standin"
        out[uid] = unit
    return out


def without_seed(unit_id: str) -> str:
    """A unit's id without its seed: the rehearsed unit that times a paper unit is the one of the same id and the
    first seed (runs of other seeds have the same shapes). Ids are '_'-joined 'key-value' pairs (``config.key``)."""
    return "_".join(part for part in unit_id.split("_") if not part.startswith("seed-"))
