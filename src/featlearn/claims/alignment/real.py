"""The checks that Figs 2, 13, 14 and 15 run alike on the real-data stores (MLP, VGG, GPT): C-NFC against UC-NFC
(Pearson, as the authors), their gap, and how far the weights moved."""

from __future__ import annotations

import xarray as xr

from featlearn.claims.alignment.common import PEARSON, final_seed_mean
from featlearn.claims.reading import NotMeasured, convention, final, first, fmt, seed_mean, values
from featlearn.claims.terms import Outcome, StoreCheck, above, at_least, fact


def c_above_uc(ds: xr.Dataset) -> Outcome:
    """Share of (time, layer, dataset, ...) points where the seed-mean C-NFC ≥ UC-NFC."""
    c, uc = (seed_mean(convention(ds[v], PEARSON)) for v in ("c_nfc", "uc_nfc"))
    measured = (c.notnull() & uc.notnull()).values  # epochs past a shorter run's end are NaN padding
    if not measured.any():
        raise NotMeasured("C-NFC, UC-NFC: no finite value in the store")
    higher = c.values[measured] >= uc.values[measured]
    share = float(higher.mean())
    facts = {"share": fact(share, "share of measured points where the seed-mean C-NFC ≥ UC-NFC (Pearson)",
                           "c_nfc, uc_nfc"),
             "points": fact(higher.size, "measured (time, layer, ...) points", "c_nfc, uc_nfc")}
    return Outcome(f"C ≥ UC at {100 * share:.0f}% of {higher.size} points", (at_least("share of points", share, 0.9),),
                   share, facts)


def c_high_early(ds: xr.Dataset) -> Outcome:
    """Seed-mean C-NFC at the first measurement where it exists, averaged over layers (and datasets)."""
    c = seed_mean(convention(ds.c_nfc, PEARSON))
    v = values(first(c), "C-NFC at the first measurement")
    return Outcome(f"mean {fmt(v.mean())}, min {fmt(v.min())}", (at_least("mean C-NFC", v.mean(), 0.8),),
                   float(v.mean()))


def gap(ds: xr.Dataset) -> xr.DataArray:
    """The seed-mean C − UC gap (Pearson)."""
    return seed_mean(convention(ds.c_nfc, PEARSON) - convention(ds.uc_nfc, PEARSON))


def gap_early_and_deep(depth: str) -> StoreCheck:
    """The C − UC gap is larger early than late, and larger in the deepest layer (block) than the first."""

    def check(ds: xr.Dataset) -> Outcome:
        g = gap(ds)
        early = values(first(g), "early C − UC").mean()
        late = values(final(g), "late C − UC").mean()
        over_time = g.mean("step")
        shallow = values(over_time.isel({depth: 0}), "first-layer gap").mean()
        deepest = values(over_time.isel({depth: -1}), "deepest-layer gap").mean()
        return Outcome(f"gap early {fmt(early)} vs late {fmt(late)}; "
                       f"{depth} first {fmt(shallow)} vs last {fmt(deepest)}",
                       (above("early − late gap", early - late, 0),
                        above(f"last − first {depth}'s gap", deepest - shallow, 0)),
                       float(early - late))

    return check


def weights_move(ds: xr.Dataset) -> Outcome:
    """Final seed-mean ‖W − W₀‖/‖W‖, smallest over layers (and datasets, blocks, projections)."""
    v = values(final_seed_mean(ds.dw_rel), "‖ΔW‖/‖W‖")
    facts = {"min": fact(v.min(), "smallest final seed-mean ‖W − W₀‖/‖W‖ over layers", "dw_rel"),
             "max": fact(v.max(), "largest final seed-mean ‖W − W₀‖/‖W‖ over layers", "dw_rel")}
    return Outcome(f"min {fmt(v.min())}, max {fmt(v.max())} over {v.size} layers",
                   (at_least("smallest ‖ΔW‖/‖W‖", v.min(), 0.1),), float(v.min()), facts)
