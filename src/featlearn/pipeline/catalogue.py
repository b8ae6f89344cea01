"""What each store holds (docs/stores.md): every store's variables and coordinates with their dimensions, long_name
and units, read from a build's stores, so the page says what the code writes rather than what someone remembered.

The CF attributes come from where each store is written (``store.check_attributes`` refuses a store without them).
A smoke-build test rebuilds the page from the smoke stores and fails while docs/stores.md differs; after a build,
``python -m featlearn.pipeline.catalogue results/smoke/metrics docs/stores.md`` rewrites it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

import xarray as xr

from featlearn.pipeline.store import read_store
from featlearn.pipeline.twins import is_twin

HEADER = """# The stores: what each holds

Generated from the smoke build's stores by `python -m featlearn.pipeline.catalogue results/smoke/metrics
docs/stores.md` (`featlearn.pipeline.catalogue`); a smoke-build test fails while this page is stale. The other
scales' stores of an experiment are written by the same code, at other sizes. A store is
`results/<scale>/metrics/<experiment>.<spec hash>.nc`, read with `featlearn.pipeline.store.read_store` (or
`xarray.open_dataset`); its global attributes hold the experiment's config, the data source, the commit and the
numerics (`featlearn.pipeline.store.provenance`). How time is laid out (`step`, `epoch`, `step_of_epoch`,
`iteration`): `featlearn.pipeline.store`'s docstring. At the scales `twins` in `config.yaml` names (quick and paper),
each experiment that amplifies rounding has a rounding twin, `<experiment>_twin` (`featlearn.pipeline.twins`), whose
store holds the variables of the experiment it names.
"""


def _cell(text: object) -> str:
    """A markdown table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def describe(name: str, ds: xr.Dataset) -> str:
    """One store's section: its kind, then one row per data variable and one per coordinate."""
    kind = json.loads(str(ds.attrs.get("experiment_config", "{}"))).get("kind", "?")
    rows = [f"## `{name}`\n", f"Experiment kind `{kind}`.\n", "| variable | dimensions | long_name | units |",
            "|---|---|---|---|"]
    for label, variables in (("", ds.data_vars), ("coordinate ", ds.coords)):
        for var in variables:
            v = ds[var]
            rows.append(f"| {label}`{var}` | {_cell(', '.join(map(str, v.dims)) or '—')} | "
                        f"{_cell(v.attrs.get('long_name', ''))} | {_cell(v.attrs.get('units', ''))} |")
    return "\n".join(rows) + "\n"


def catalogue(stores: Mapping[str, xr.Dataset]) -> str:
    """The page: the header, one line naming the rounding twins (``featlearn.pipeline.twins``: each holds its
    experiment's variables, so a section of its own would repeat that one), then every experiment's store by name."""
    twins = sorted(name for name in stores if is_twin(name))
    listed = (f"\nRounding twins, each holding the variables of the experiment it names: "
              f"{', '.join(f'`{name}`' for name in twins)}.\n") if twins else ""
    return HEADER + listed + "".join(f"\n{describe(name, stores[name])}" for name in sorted(stores)
                                     if not is_twin(name))


def stores_in(metrics: Path) -> dict[str, xr.Dataset]:
    """Each experiment's combined store in a build's metrics folder (``<experiment>.<spec hash>.nc``; the per-unit
    stores in its subfolders are parts of these), by experiment name."""
    return {path.name.split(".", 1)[0]: read_store(path) for path in sorted(metrics.glob("*.nc"))}


def main(argv: list[str]) -> None:
    """``python -m featlearn.pipeline.catalogue <metrics folder> <page>``: rewrite the page from the stores."""
    if len(argv) != 2:
        raise SystemExit("usage: python -m featlearn.pipeline.catalogue results/smoke/metrics docs/stores.md")
    Path(argv[1]).write_text(catalogue(stores_in(Path(argv[0]))), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
