"""Claims of "Feature learning as alignment" (docs/figures/alignment.md, Claims), one check function per claim.

Correlations are the paper's ρ, the ``cosine`` convention, except Figs 2, 13 and 16 (the authors' Pearson).
Thresholds that the paper does not give are ours and stated in each claim's criterion.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from featlearn.claims.core import (
    ANY_SCALE,
    AT_PAPER,
    BELOW_PAPER,
    CONSTRUCTION,
    ON_STAND_IN,
    OPEN,
    Claim,
    Diagnosis,
    NotMeasured,
    Outcome,
    StoreCheck,
    above,
    at_least,
    at_most,
    convention,
    final,
    first,
    fmt,
    mean_sd,
    numbers,
    scalar,
    seed_mean,
    seeds,
    slash,
    values,
)

# The stores these claims read; workflow/rules/report.smk reads this literal without importing the module.
STORES = ("chain_fig1", "real_mlp", "vgg_cifar", "gpt_shakespeare", "reversing", "slo_sweep", "init_sweep",
          "first_order", "adaptive_slo", "celeba_glasses", "svhn_slo")

COSINE, PEARSON = "cosine", "pearson"


def _final_seed_mean(da: xr.DataArray) -> xr.DataArray:
    """Mean over the seeds that ran of each run's value at the end of its training."""
    return seed_mean(final(da))


def _early_index(da: xr.DataArray) -> int:
    """The first measurement after step 1 ("early" in training: step 10 of 800 at quick scale)."""
    return min(2, da.sizes["step"] - 1)


# ---- Fig 1: chain monomial, F vs Ḡ vs the corrupted AGOP ----

def _fig1_final(ds: xr.Dataset, var: str) -> xr.DataArray:
    return final(convention(ds[var], COSINE).sel(layer=1))


def fig1_rho_nfm_agop(ds: xr.Dataset) -> Outcome:
    v = values(_fig1_final(ds, "uc_nfc"), "ρ(F, Ḡ)")
    return Outcome(mean_sd(v), (at_most("|mean ρ(F, Ḡ) − 0.93|", abs(v.mean() - 0.93), 0.1),), float(v.mean()))


def fig1_corrupted_lower(ds: xr.Dataset) -> Outcome:
    rho = values(_fig1_final(ds, "uc_nfc"), "ρ(F, Ḡ)").mean()
    corrupted = values(ds.rho_nfm_corrupted, "ρ(F, WᵀQW)")
    return Outcome(f"{mean_sd(corrupted)} (vs ρ(F, Ḡ) {fmt(rho)})",
                   (at_least("ρ(F, Ḡ) − mean ρ(F, WᵀQW)", rho - corrupted.mean(), 0.1),), float(corrupted.mean()))


def fig1_k_dispersion(ds: xr.Dataset) -> Outcome:
    v = values(final(ds.k_dispersion.sel(layer=1)), "eig std/mean of K⁽⁰⁾")
    return Outcome(mean_sd(v), (at_most("|mean / 5.9 − 1|", abs(v.mean() / 5.9 - 1), 0.3),), float(v.mean()))


def fig1_egop_structure(ds: xr.Dataset) -> Outcome:
    f = values(final(ds.rho_nfm_egop), "ρ(F, EGOP)")
    g = values(final(ds.rho_agop_egop), "ρ(Ḡ, EGOP)")
    return Outcome(f"ρ(F, EGOP) {mean_sd(f)}, ρ(Ḡ, EGOP) {mean_sd(g)}",
                   (at_least("lower of mean ρ(F, EGOP), ρ(Ḡ, EGOP)", min(f.mean(), g.mean()), 0.8),),
                   float(min(f.mean(), g.mean())))


# ---- Figs 2, 13, 14, 15: real data, MLP / VGG / GPT (Pearson) ----

def c_above_uc(ds: xr.Dataset) -> Outcome:
    """Share of (time, layer, dataset, ...) points where the seed-mean C-NFC ≥ UC-NFC."""
    c, uc = (seed_mean(convention(ds[v], PEARSON)) for v in ("c_nfc", "uc_nfc"))
    measured = (c.notnull() & uc.notnull()).values  # epochs past a shorter run's end are NaN padding
    if not measured.any():
        raise NotMeasured("C-NFC, UC-NFC: no finite value in the store")
    higher = c.values[measured] >= uc.values[measured]
    share = float(higher.mean())
    return Outcome(f"C ≥ UC at {100 * share:.0f}% of {higher.size} points", (at_least("share of points", share, 0.9),),
                   share, {"share": share, "points": higher.size})


def c_high_early(ds: xr.Dataset) -> Outcome:
    """Seed-mean C-NFC at the first measurement where it exists, averaged over layers (and datasets)."""
    c = seed_mean(convention(ds.c_nfc, PEARSON))
    v = values(first(c), "C-NFC at the first measurement")
    return Outcome(f"mean {fmt(v.mean())}, min {fmt(v.min())}", (at_least("mean C-NFC", v.mean(), 0.8),),
                   float(v.mean()))


def _gap(ds: xr.Dataset) -> xr.DataArray:
    gap = convention(ds.c_nfc, PEARSON) - convention(ds.uc_nfc, PEARSON)
    return seed_mean(gap)


def gap_early_and_deep(depth: str) -> StoreCheck:
    """The C − UC gap is larger early than late, and larger in the deepest layer (block) than the first."""

    def check(ds: xr.Dataset) -> Outcome:
        gap = _gap(ds)
        early = values(first(gap), "early C − UC").mean()
        late = values(final(gap), "late C − UC").mean()
        over_time = gap.mean("step")
        shallow = values(over_time.isel({depth: 0}), "first-layer gap").mean()
        deepest = values(over_time.isel({depth: -1}), "deepest-layer gap").mean()
        return Outcome(f"gap early {fmt(early)} vs late {fmt(late)}; "
                       f"{depth} first {fmt(shallow)} vs last {fmt(deepest)}",
                       (above("early − late gap", early - late, 0),
                        above(f"last − first {depth}'s gap", deepest - shallow, 0)),
                       float(early - late))

    return check


def uc_rises_toward_c(ds: xr.Dataset) -> Outcome:
    """Share of (dataset, layer) curves whose final C − UC gap is below the initial one."""
    gap = _gap(ds)
    shrinks = values(final(gap), "final gap") < values(first(gap), "initial gap")
    share = float(shrinks.mean())
    return Outcome(f"gap shrinks in {int(shrinks.sum())} of {shrinks.size} (dataset, layer) curves",
                   (at_least("share of curves", share, 0.5),), share)


def weights_move(ds: xr.Dataset) -> Outcome:
    """Final seed-mean ‖W − W₀‖/‖W‖, smallest over layers (and datasets, blocks, projections)."""
    v = values(_final_seed_mean(ds.dw_rel), "‖ΔW‖/‖W‖")
    return Outcome(f"min {fmt(v.min())}, max {fmt(v.max())} over {v.size} layers",
                   (at_least("smallest ‖ΔW‖/‖W‖", v.min(), 0.1),), float(v.min()),
                   {"min": float(v.min()), "max": float(v.max())})


# ---- Fig 3: free-probability prediction vs observation on the alignment-reversing data ----

def fig3_prediction_tracks(ds: xr.Dataset) -> Outcome:
    pred, obs = values(ds.rho_predicted, "ρ_pred"), values(ds.rho_observed, "ρ_2nd")
    per_seed = float(np.abs(pred - obs).max())
    on_mean = float(np.abs(pred.mean(axis=-1) - obs.mean(axis=-1)).max())
    return Outcome(f"max |pred − obs| {fmt(per_seed)} per seed, {fmt(on_mean)} on the mean",
                   (at_most("max |pred − obs|", per_seed, 0.05),), per_seed)


def fig3_reversal(ds: xr.Dataset) -> Outcome:
    obs = ds.rho_observed.mean("data_seed", skipna=False).sortby("gamma")
    v = values(obs, "ρ_2nd seed mean")
    every = values(ds.rho_observed, "ρ_2nd")
    return Outcome(f"ρ_2nd {fmt(v[0])} at γ = {float(obs.gamma[0]):g}, {fmt(v[-1])} at γ = {float(obs.gamma[-1]):g}",
                   (at_most("ρ_2nd at the smallest γ", v[0], 0.9), at_least("rise of ρ_2nd over γ", v[-1] - v[0], 0.1)),
                   float(v[0]), {"rho_min": float(every.min()), "rho_max": float(every.max())})


# ---- Figs 4, 11: SLO vs GD across the first layer's init scale s₀ ----

def _by_s0(ds: xr.Dataset, var: str, optimizer: str, layer: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """(s₀ largest first, the final seed-mean value of var for each)."""
    da = convention(ds[var], COSINE).sel(optimizer=optimizer)
    if layer is not None and "layer" in da.dims:
        da = da.sel(layer=layer)
    da = _final_seed_mean(da).sortby("init_scale", ascending=False)
    return da.init_scale.values, values(da, f"{var} ({optimizer})")


def _series(s0: np.ndarray, v: np.ndarray) -> str:
    return slash(v) + f" at s₀ = {' / '.join(f'{s:g}' for s in s0)}"


def grows_as_s0_shrinks(var: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        s0, v = _by_s0(ds, var, "gd")
        drop = float(np.diff(v).min()) if v.size > 1 else 0.0
        return Outcome(_series(s0, v), (at_least("smallest step as s₀ shrinks", drop, -0.02),
                                        above("smallest s₀ − s₀ = 1", v[-1] - v[0], 0)), float(v[-1] - v[0]))

    return check


def fig4_slo_rc_one(ds: xr.Dataset) -> Outcome:
    s0, v = _by_s0(ds, "ratio_c_uc", "slo")
    return Outcome(_series(s0, v), (at_least("smallest R_C", v.min(), 0.9),), float(v.min()))


def fig4_slo_nfc_one(ds: xr.Dataset) -> Outcome:
    _, uc = _by_s0(ds, "uc_nfc", "slo")
    _, c = _by_s0(ds, "c_nfc", "slo")
    low = float(min(uc.min(), c.min()))
    runs = convention(ds.uc_nfc, COSINE).sel(optimizer="slo", layer=1)  # every (s₀, seed) run's trajectory
    ends, peaks = final(runs), runs.max("step")
    facts = {"uc_low": float(uc.min()), "uc_high": float(uc.max()), "c_low": float(c.min()), "c_high": float(c.max()),
             "low": low, "run_low": float(ends.min()), "run_high": float(ends.max()),
             "peak_low": float(peaks.min()), "peak_high": float(peaks.max()), "runs": int(ends.notnull().sum()),
             "settled": int(((peaks - ends) >= 0.01).sum()), "seed_lows": slash(ends.min("init_scale")),
             "gd_large": float(_by_s0(ds, "uc_nfc", "gd")[1][0])}
    return Outcome(f"UC {fmt(uc.min())}–{fmt(uc.max())}, C {fmt(c.min())}–{fmt(c.max())} over s₀",
                   (at_least("lowest UC or C", low, 0.95),), low, facts)


def fig4_slo_invariant(ds: xr.Dataset) -> Outcome:
    s0, uc = _by_s0(ds, "uc_nfc", "slo")
    spread = float(uc.max() - uc.min())
    return Outcome(f"UC {_series(s0, uc)}; spread {fmt(spread)}", (at_most("UC spread over s₀", spread, 0.1),),
                   spread)


def fig11_f_loses_faster(ds: xr.Dataset) -> Outcome:
    s0, f = _by_s0(ds, "rho_nfm_egop", "gd", None)
    _, g = _by_s0(ds, "rho_agop_egop", "gd", None)
    drop_f, drop_g = float(f[-1] - f[0]), float(g[-1] - g[0])
    return Outcome(f"ρ(F, EGOP) {_series(s0, f)}; ρ(Ḡ, EGOP) {slash(g)}",
                   (above("F's drop − Ḡ's drop", drop_f - drop_g, 0), above("ρ(Ḡ) − ρ(F) at s₀ = 1", g[0] - f[0], 0)),
                   drop_f - drop_g)


def fig11_small_init_egop(ds: xr.Dataset) -> Outcome:
    _, f = _by_s0(ds, "rho_nfm_egop", "gd", None)
    _, g = _by_s0(ds, "rho_agop_egop", "gd", None)
    low = float(min(f[-1], g[-1]))
    return Outcome(f"ρ(F, EGOP) {fmt(f[-1])}, ρ(Ḡ, EGOP) {fmt(g[-1])} at the smallest s₀",
                   (at_least("lower of the two", low, 0.8),), low)


def fig11_slo_invariant(ds: xr.Dataset) -> Outcome:
    s0, f = _by_s0(ds, "rho_nfm_egop", "slo", None)
    return Outcome(f"ρ(F, EGOP) {_series(s0, f)}", (at_least("lowest ρ(F, EGOP)", f.min(), 0.7),
                                                     at_most("spread over s₀", f.max() - f.min(), 0.1)), float(f.min()))


# ---- Figs 5, 6, 8–10: the init-scale sweep over three input spectra ----

def fig5_rdc_small_early(ds: xr.Dataset) -> Outcome:
    r = ds.ratio_dc_c.sel(spectrum="isotropic").sel(init_scale=ds.init_scale[ds.init_scale >= 0.1])
    early = seed_mean(r.isel(step=_early_index(r)))
    v = values(early, "R_DC early")
    return Outcome(f"R_DC at step {int(r.step[_early_index(r)])}: {fmt(v.min())}–{fmt(v.max())} "
                          "(s₀ ≥ 0.1, all layers)", (at_most("largest early R_DC", v.max(), 0.1),), float(v.max()))


def fig5_rdc_grows(ds: xr.Dataset) -> Outcome:
    r = seed_mean(ds.ratio_dc_c.sel(spectrum="isotropic"))
    early, late = values(r.isel(step=_early_index(r)), "R_DC early"), values(final(r), "R_DC final")
    return Outcome(f"final R_DC {fmt(late.min())}–{fmt(late.max())}, above its early value in "
                   f"{int((late > early).sum())} of {late.size} curves",
                   (above("least rise of R_DC", (late - early).min(), 0),
                    at_least("lowest final R_DC", late.min(), 0.3)),
                   float(late.min()))


def fig6_ptkc_decreases(ds: xr.Dataset) -> Outcome:
    spectra = [s for s in ("isotropic", "1/(1+k^2)") if s in ds.spectrum.values]
    if not spectra:
        raise NotMeasured("init_sweep has neither spectrum of Fig 6")
    p = seed_mean(convention(ds.ptkc_nfc, COSINE).sel(spectrum=spectra))
    start = values(p.isel(step=min(1, p.sizes["step"] - 1)), "PTK-centered NFC at step 1")
    end = values(final(p), "PTK-centered NFC final")
    share = float((end < start).mean())
    return Outcome(f"falls in {int((end < start).sum())} of {end.size} curves "
                   f"({fmt(start.mean())} → {fmt(end.mean())} on average)", (at_least("share of curves", share, 0.75),),
                   share)


def _spectrum(ds: xr.Dataset, spectrum: str) -> xr.Dataset:
    if spectrum not in ds.spectrum.values:
        present = ", ".join(map(str, ds.spectrum.values))
        raise NotMeasured(f"spectrum {spectrum} is not in this scale's sweep ({present})")
    return ds.sel(spectrum=spectrum)


def c_high_early_sweep(spectrum: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        c = seed_mean(convention(_spectrum(ds, spectrum).c_nfc, COSINE))
        v = values(c.isel(step=_early_index(c)), "early C-NFC")
        return Outcome(f"{fmt(v.min())}–{fmt(v.max())} at step {int(c.step[_early_index(c)])} (every s₀, layer)",
                       (at_least("lowest early C-NFC", v.min(), 0.75),), float(v.min()))

    return check


def c_more_robust(spectrum: str) -> StoreCheck:
    """Range over s₀ of the final seed-mean NFC, C against UC, per layer."""

    def check(ds: xr.Dataset) -> Outcome:
        run = _spectrum(ds, spectrum)
        c, uc = (_final_seed_mean(convention(run[v], COSINE)) for v in ("c_nfc", "uc_nfc"))
        c_range = values(c.max("init_scale") - c.min("init_scale"), "C range")
        uc_range = values(uc.max("init_scale") - uc.min("init_scale"), "UC range")
        facts = {f"{name}_range_{int(layer)}": float(r) for name, ranges in (("c", c_range), ("uc", uc_range))
                 for layer, r in zip(c.layer.values, ranges)}
        return Outcome(f"range over s₀: C {slash(c_range)}, UC {slash(uc_range)} "
                       "(per layer)", (above("least UC range − C range", (uc_range - c_range).min(), 0),),
                       float(c_range.max()), facts)

    return check


def uc_rises(spectrum: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        uc = seed_mean(convention(_spectrum(ds, spectrum).uc_nfc, COSINE))
        start, end = values(uc.isel(step=0), "UC-NFC at init"), values(final(uc), "UC-NFC final")
        rises = end > start
        flat = uc.isel(step=0).stack(curve=("init_scale", "layer")).curve.values[~rises.ravel()]
        exceptions = "; not at " + ", ".join(f"s₀ = {s:g} layer {int(layer)}" for s, layer in flat) if flat.size else ""
        return Outcome(f"rises in {int(rises.sum())} of {rises.size} (s₀, layer) curves, "
                       f"{fmt(start.mean())} → {fmt(end.mean())} on average{exceptions}",
                       (at_least("share of curves", rises.mean(), 0.75),), float(rises.mean()))

    return check


def small_s0_better(spectrum: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        run = _spectrum(ds, spectrum).sortby("init_scale", ascending=False)
        uc = values(_final_seed_mean(convention(run.uc_nfc, COSINE).sel(layer=1)), "final UC-NFC")
        loss = values(_final_seed_mean(run.test_loss), "final test loss")
        s0 = run.init_scale.values
        per_seed = final(run.test_loss)
        facts = {"uc_large": float(uc[0]), "uc_small": float(uc[-1]), "loss_large": float(loss[0]),
                 "loss_small": float(loss[-1]), "loss_large_seeds": slash(per_seed.isel(init_scale=0)),
                 "loss_small_seeds": slash(per_seed.isel(init_scale=-1))}
        if "train_loss" in run:
            train = _final_seed_mean(run.train_loss)
            facts.update(train_large=float(train.isel(init_scale=0)), train_small=float(train.isel(init_scale=-1)))
        return Outcome(f"UC {_series(s0, uc)}; test loss {slash(loss)}",
                       (above("UC gain at the smallest s₀", uc[-1] - uc[0], 0),
                        above("test loss saved at the smallest s₀", loss[0] - loss[-1], 0)),
                       float(loss[-1] - loss[0]), facts)

    return check


# ---- Fig 7: observed vs first-order prediction across the data decay α ----

def _has_dip(v: np.ndarray) -> bool:
    return v.size >= 3 and v[1:-1].min() < min(v[0], v[-1]) - 0.01


def fig7_dip(ds: xr.Dataset) -> Outcome:
    obs = ds.rho_observed.mean("net", skipna=False)
    curves = [(obs, "observed"), (ds.rho_predicted, "predicted")]
    dips = [_has_dip(values(da.sel(activation=a, task=t, width=w).sortby("alpha"), name))
            for da, name in curves for a in ds.activation.values for t in ds.task.values for w in ds.width.values]
    share = float(np.mean(dips))
    return Outcome(f"interior dip in {sum(dips)} of {len(dips)} curves", (at_least("share of curves", share, 0.75),),
                   share)


def fig7_quadratic_width(ds: xr.Dataset) -> Outcome:
    if "quadratic" not in ds.activation.values:
        raise NotMeasured("no quadratic activation in this store")
    q = ds.sel(activation="quadratic")
    gap = np.abs(q.rho_predicted - q.rho_observed.mean("net", skipna=False)).mean("alpha")
    narrow = values(gap.sel(width=q.width.min()), "gap at the smallest width")
    wide = values(gap.sel(width=q.width.max()), "gap at the largest width")
    return Outcome(f"mean |pred − obs| k = {int(q.width.max())}: {slash(wide)} vs k = {int(q.width.min())}: "
                   f"{slash(narrow)}", (above("least narrow − wide gap", (narrow - wide).min(), 0),), float(wide.max()))


def fig7_relu_qualitative(ds: xr.Dataset) -> Outcome:
    if "relu" not in ds.activation.values:
        raise NotMeasured("no ReLU activation in this store")
    r = ds.sel(activation="relu")
    gap = float(values(np.abs(r.rho_predicted - r.rho_observed.mean("net", skipna=False)), "ReLU gap").max())
    return Outcome(f"max |pred − obs| {fmt(gap)}", (at_most("max |pred − obs|", gap, 0.2),), gap)


# ---- Fig 12: adaptive SLO in a 3-hidden-layer net ----

def _fig12_facts(ds: xr.Dataset) -> dict[str, float | str]:
    """What a diagnosis of Fig 12 reads: per seed, SLO's lowest and GD's best final layer; final train losses."""
    ends = final(convention(ds.uc_nfc, COSINE))
    facts: dict[str, float | str] = {"slo_low_seeds": slash(ends.sel(optimizer="slo_adaptive").min("layer")),
                                     "gd_best_seeds": slash(ends.sel(optimizer="gd").max("layer"))}
    if "train_loss" in ds:
        train = _final_seed_mean(ds.train_loss)
        facts.update(slo_train=float(train.sel(optimizer="slo_adaptive")), gd_train=float(train.sel(optimizer="gd")))
    return facts


def fig12_equalizes_above_gd(ds: xr.Dataset) -> Outcome:
    uc = _final_seed_mean(convention(ds.uc_nfc, COSINE))
    slo, gd = values(uc.sel(optimizer="slo_adaptive"), "SLO UC-NFC"), values(uc.sel(optimizer="gd"), "GD UC-NFC")
    return Outcome(f"SLO {slash(slo)}, GD {slash(gd)} (per layer)",
                   (above("SLO's lowest − GD's best layer", slo.min() - gd.max(), 0),), float(slo.min() - gd.max()),
                   _fig12_facts(ds))


def fig12_test_lower(ds: xr.Dataset) -> Outcome:
    loss = _final_seed_mean(ds.test_loss)
    slo = scalar(loss.sel(optimizer="slo_adaptive"), "SLO test loss")
    gd = scalar(loss.sel(optimizer="gd"), "GD test loss")
    per_seed = final(ds.test_loss)
    facts = {**_fig12_facts(ds), "slo_seeds": slash(per_seed.sel(optimizer="slo_adaptive")),
             "gd_seeds": slash(per_seed.sel(optimizer="gd"))}
    return Outcome(f"SLO {fmt(slo)} vs GD {fmt(gd)}", (above("GD − SLO test loss", gd - slo, 0),), slo - gd, facts)


# ---- Fig 16: CelebA glasses; Fig 17: SVHN SLO ----

def fig16_diag_high(ds: xr.Dataset) -> Outcome:
    v = values(convention(ds.rho_diag_agop, PEARSON), "ρ(diag F, diag Ḡ)")
    return Outcome(mean_sd(v), (at_least("mean ρ(diag F, diag Ḡ)", v.mean(), 0.75),), float(v.mean()))


def fig16_corrupted_near_zero(ds: xr.Dataset) -> Outcome:
    good = values(convention(ds.rho_diag_agop, PEARSON), "ρ(diag F, diag Ḡ)").mean()
    bad = values(convention(ds.rho_diag_corrupted, PEARSON), "ρ(diag F, diag WᵀQW)")
    return Outcome(f"{mean_sd(bad)} (vs {fmt(good)})",
                   (at_most("|mean ρ(diag F, diag WᵀQW)|", abs(bad.mean()), 0.2),
                    at_least("ρ(diag F, diag Ḡ) − mean ρ(diag F, diag WᵀQW)", good - bad.mean(), 0.5)),
                   float(bad.mean()), {"corrupted": float(bad.mean()), "good": float(good)})


def fig17_slo_raises(ds: xr.Dataset) -> Outcome:
    parts, raised, terms = [], [], []
    for var, name in (("uc_nfc", "UC"), ("c_nfc", "C"), ("ratio_c_uc", "R_C")):
        da = _final_seed_mean(convention(ds[var], COSINE).sel(layer=1))
        slo, gd = scalar(da.sel(optimizer="slo"), f"SLO {name}"), scalar(da.sel(optimizer="gd"), f"GD {name}")
        raised.append(slo > gd)
        terms.append(above(f"SLO − GD {name}", slo - gd, 0))
        parts.append(f"{name} {fmt(gd)} → {fmt(slo)}")
    return Outcome("; ".join(parts) + " (GD → SLO, layer 1)", tuple(terms), float(sum(raised)))


SPECTRUM_FIGURES = {"8": "isotropic", "9": "1/(1+k)", "10": "1/(1+k^2)"}
# ---- Diagnoses: why a claim fails where it is known to, each with the condition under which it holds ----
# The quick scale runs the synthetic sweeps at the paper's settings with one seed (adaptive SLO and Fig 1 with the
# paper's seeds); the paper scale with three. Numbers in a text come from the measurement it is applied to ({...}),
# except those of side runs, which say where they were measured.

PAPER_3_SEEDS = AT_PAPER & seeds(3)

FIG8_ROBUST_ONE_SEED = Diagnosis(
    OPEN, "in layer 1 C-NFC's final range over s₀ ({c_range_1:.2f}) exceeds UC-NFC's ({uc_range_1:.2f}), while layer "
    "2 agrees with the paper ({c_range_2:.3f} against {uc_range_2:.2f}); one seed, so seed noise is not ruled out",
    when=seeds(1))

FIG10_LOSS_ONE_SEED = Diagnosis(
    OPEN, "UC-NFC does grow as s₀ shrinks ({uc_large:.2f} → {uc_small:.2f}), but the final test loss is lowest at "
    "s₀ = 1 ({loss_large:.2f} against {loss_small:.2f} at the smallest s₀); the paper gives its test losses only in "
    "a figure, so its margin is unknown; one seed", when=seeds(1) & numbers("UC-NFC grows as s₀ shrinks",
                                                                            lambda f: f["uc_small"] > f["uc_large"]))

FIG10_LOSS_PAPER = Diagnosis(
    OPEN, "UC-NFC grows as s₀ shrinks ({uc_large:.2f} → {uc_small:.2f}), but after the stated 800 steps at lr 0.05 "
    "the small-init nets have not fit the 1/(1+k²) data: final train loss {train_small:.3f} at the smallest s₀ "
    "against {train_large:.3f} at s₀ = 1, and test loss {loss_small_seeds} against {loss_large_seeds} per seed. "
    "Trained to interpolation, s₀ = 1 still generalizes as well or better, and no reading we tried reverses the order "
    "on every seed; the paper shows its losses only normalised by their maximum, so its margin is unknown",
    "side runs at the paper's settings, 3 seeds, test loss at s₀ = 1 vs 0.001: 3,200 steps 0.121–0.149 vs "
    "0.136–0.156; 10,000 steps (train loss ≤ 4e-4) 0.117–0.148 vs 0.131–0.155 (s₀ = 1 lower on 2 of 3 seeds); v1's "
    "N(0, s/k) init 0.149–0.165 vs 0.167–0.205; the spectrum scaled to tr Σ = d (its normalisation is unstated) "
    "0.141–0.170 vs 0.146–0.165 (s₀ = 0.001 lower on 2 of 3 seeds, mean 0.154 vs 0.157)",
    when=PAPER_3_SEEDS & numbers("UC-NFC grows as s₀ shrinks and the smallest s₀ ends at ≥ 2× the train loss of "
                                 "s₀ = 1", lambda f: f["uc_small"] > f["uc_large"]
                                 and f["train_small"] >= 2 * f["train_large"]))

FIG12_MECHANISM = (
    "With the stated η = 0.05, s = 20 and init 0.1 (× torch's default), the layer picked at each step moves up to "
    "η·s = 1.0 in Frobenius norm per step against ‖W‖_F ≈ 0.92 at init, a step as large as the layer, and adaptive "
    "SLO does not fit the data: final train loss {slo_train:.3g} against GD's {gd_train:.3g} (seed means)")
FIG12_TRIED = (
    "first-layer-only small init, readout × 0.01, mini-batches (earlier, at these settings); in side runs at these "
    "settings, 3 seeds: v1's N(0, s/k) init (‖W‖_F ≈ 5): SLO's lowest layer above GD's best on 1 of 3 seeds, test "
    "loss lower on 1 of 3 (mean 0.473 vs 0.458); lr × 0.1, and s = 5: test loss lower on 1 of 3 seeds, lowest layer "
    "below GD's best on all 3. None reproduces the claim over seeds; the text's literal 'dividing the gradients by "
    "ε‖∇𝓛‖' would make the step η·s/ε = 100")
# Adaptive SLO runs the paper's settings and seeds at every scale but smoke; the diagnosis holds where SLO under-fits.
FIG12_UNDERFITS = numbers("adaptive SLO ends at a higher train loss than GD",
                          lambda f: f["slo_train"] > f["gd_train"])

FIG12_EQUALIZES = Diagnosis(
    CONSTRUCTION, "adaptive SLO's lowest layer ends at {slo_low_seeds} per seed against GD's best layer at "
    "{gd_best_seeds}. " + FIG12_MECHANISM, FIG12_TRIED, when=seeds(3) & FIG12_UNDERFITS)

FIG12_TEST = Diagnosis(
    CONSTRUCTION, "adaptive SLO's final test loss is {slo_seeds} per seed against GD's {gd_seeds}. " + FIG12_MECHANISM,
    FIG12_TRIED, when=seeds(3) & FIG12_UNDERFITS)

VGG_ONE_SEED = Diagnosis(
    OPEN, "C ≥ UC at {share:.0%} of the points, just under our 90% threshold, after the quick VGG was retuned to 60 "
    "epochs so that it learns at all (at 10 epochs its loss stayed at chance); one seed on the CIFAR-10 stand-in, so "
    "neither the stand-in nor seed noise is ruled out", when=BELOW_PAPER & ON_STAND_IN & seeds(1))

FIG3_SPIKE = Diagnosis(
    CONSTRUCTION, "ρ_2nd stays between {rho_min:.6f} and {rho_max:.6f} at every γ and data seed: there is no reversal "
    "to track (the prediction tracks the observation: the Fig 3 tracking claim passes). In the printed dataset "
    "(App. G) the all-ones direction of Σ = 11ᵀ + ε₁I dominates XᵀYX: in side computations it carried 96–99% of the "
    "Frobenius norm of both second-derivative matrices at n = d = 256, and at the paper's n = d = 1024 (data seed 0) "
    "98.8% at γ = 0.05 (top eigenvalue of XᵀYX 52, the next 0.92) to 99.9% at γ = 1, so their correlation stays ≈ 1 "
    "whatever γ does to the other directions",
    "at n = d = 256: inputs scaled by x/d and x/d^1.5, Σ = 11ᵀ/d + ε₁I, inverting the smallest directions: none makes "
    "ρ_2nd fall with γ; at n = d = 1024: the Pearson correlation of the expected matrices is 1.0000 too, and with "
    "XᵀYX's top direction projected out their cosine is 0.96 / 0.86 / 0.98 at γ = 0.05 / 0.25 / 1, no fall either",
    when=ANY_SCALE & numbers("ρ_2nd ≥ 0.99 at every γ and data seed", lambda f: f["rho_min"] >= 0.99))

FIG4_ONE_SEED = Diagnosis(
    OPEN, "UC reaches {uc_low:.2f}–{uc_high:.2f} and C {c_low:.2f}–{c_high:.2f}, flat in s₀ (the invariance claim "
    "passes) but short of our 0.95 reading of the paper's '≈ 1'; one seed",
    when=seeds(1) & numbers("UC and C ≥ 0.85 at every s₀", lambda f: f["low"] >= 0.85))

FIG4_PAPER = Diagnosis(
    OPEN, "with SLO the seed-mean UC reaches {uc_low:.3f}–{uc_high:.3f} and C {c_low:.3f}–{c_high:.3f} over s₀ (runs "
    "{run_low:.3f}–{run_high:.3f}; each seed's lowest over s₀ {seed_lows}): flat in s₀ (the invariance claim passes) "
    "and above GD's {gd_large:.2f} at s₀ = 1, but short of our 0.95 reading of the paper's '≈ 1', which gives no "
    "number. The runs peak at {peak_low:.3f}–{peak_high:.3f} during training; {settled} of {runs} end ≥ 0.01 below "
    "their peak",
    "side runs at the paper's settings, 3 seeds, final layer-1 UC at s₀ = 1 and 0.001: the literal 'divided by 0.01' "
    "readout (× 100) 0.949–0.965 but train loss 10²–10⁵; v1's N(0, s/k) init 0.912–0.952; 2,400 steps 0.927–0.965; "
    "ε = 0.01 0.920–0.961; lr × 0.1 leaves s₀ = 1 untrained (loss 0.96–0.99)",
    when=PAPER_3_SEEDS & numbers("seed-mean UC and C ≥ 0.85 at every s₀, above GD's at s₀ = 1",
                                 lambda f: f["low"] >= 0.85 and f["uc_low"] > f["gd_large"]))

MLP_MOVES_QUICK = Diagnosis(
    OPEN, "the smallest relative movement is {min:.2g} (the largest {max:.2g}) after the quick scale's 10–20 epochs "
    "on ≤ 4,500 images; that longer training closes the gap is likely but not measured", when=BELOW_PAPER)

FIG16_CORRUPTED = Diagnosis(
    OPEN, "ρ(diag F, diag WᵀQW) is {corrupted:.2f} (against ρ(diag F, diag Ḡ) {good:.2f}). Not the stand-in and not "
    "our formula (Pearson on the diagonals, as the paper's ρ̄): in side runs K⁽⁰⁾'s eigenvalues were as spread on the "
    "stand-in (std/mean 7.8) as on real MNIST (6.6) and Fashion-MNIST (8.4), and real data gave the same "
    "ρ(diag F, diag WᵀQW) = 0.86–0.93. After small-init training W⁽⁰⁾ is nearly rank one; its column norms (diag F) "
    "varied 40–800× over pixels against a ≈ 0.6 variation of the part Q changes, so diag WᵀQW tracks diag F for any "
    "Q. The paper's 0.04 (one Q draw, real CelebA) cannot be tested offline",
    "real MNIST and Fashion-MNIST, 64×64 stand-in, 500 epochs, informative pixels only, per-pixel standardised inputs "
    "(0.66–0.71), single Q draws early in training (−0.30 to 0.99)", when=ON_STAND_IN)

SPECTRUM_DIAGNOSES = {
    ("8", "c_more_robust"): (FIG8_ROBUST_ONE_SEED,),
    ("10", "small_s0_better"): (FIG10_LOSS_ONE_SEED, FIG10_LOSS_PAPER),
}

CLAIMS: list[Claim] = [
    Claim("fig1.rho_nfm_agop", "1", "The trained first-layer NFM F and AGOP Ḡ are highly correlated.", "0.93",
          "|ρ(F, Ḡ) − 0.93| ≤ 0.1 (mean over seeds, cosine)", ("chain_fig1",), fig1_rho_nfm_agop),
    Claim("fig1.corrupted_lower", "1", "Replacing K's eigenvectors by random ones (WᵀQW) destroys the alignment.",
          "0.53", "mean ρ(F, WᵀQW) at least 0.1 below ρ(F, Ḡ)", ("chain_fig1",), fig1_corrupted_lower),
    Claim("fig1.k_dispersion", "1", "K⁽⁰⁾ is far from the identity: its eigenvalues are widely spread.", "5.9",
          "eig std/mean within ±30% of 5.9", ("chain_fig1",), fig1_k_dispersion),
    Claim("fig1.egop_structure", "1", "F and Ḡ both show the chain monomial's 5×5 cyclic EGOP block.", "",
          "ρ(F, EGOP) and ρ(Ḡ, EGOP) ≥ 0.8", ("chain_fig1",), fig1_egop_structure),
    Claim("fig2.mlp_c_above_uc", "2A/B, 13", "C-NFC ≥ UC-NFC through training, in every layer and dataset (MLP).", "",
          "seed-mean C ≥ UC at ≥ 90% of (dataset, epoch, layer) points, Pearson", ("real_mlp",), c_above_uc),
    Claim("fig2.mlp_c_high_early", "2A", "C-NFC is close to 1 early in training (MLP).", "",
          "mean C-NFC at the first epoch ≥ 0.8", ("real_mlp",), c_high_early),
    Claim("fig13.uc_rises_toward_c", "13", "UC-NFC converges toward C-NFC late in training in most settings.", "",
          "final C − UC gap below the initial gap in ≥ 50% of (dataset, layer) curves", ("real_mlp",),
          uc_rises_toward_c),
    Claim("fig2.vgg_c_above_uc", "2C", "C-NFC ≥ UC-NFC in every conv layer of VGG-11 through training.", "",
          "seed-mean C ≥ UC at ≥ 90% of (epoch, layer) points, Pearson", ("vgg_cifar",), c_above_uc,
          (VGG_ONE_SEED,)),
    Claim("fig2.vgg_gap_early_deep", "2C", "The C − UC gap is largest early and in deeper layers (VGG).", "",
          "gap at the first epoch > at the last; deepest layer's gap > first layer's", ("vgg_cifar",),
          gap_early_and_deep("layer")),
    Claim("fig2.gpt_c_above_uc", "2D", "C-NFC ≥ UC-NFC for Q, K, V of every attention block through training.", "",
          "C ≥ UC at ≥ 90% of (step, block, projection) points, Pearson", ("gpt_shakespeare",), c_above_uc),
    Claim("fig2.gpt_c_high_early", "2D", "C-NFC is near 1 early in GPT training.", "",
          "mean C-NFC at the first measurement ≥ 0.8", ("gpt_shakespeare",), c_high_early),
    Claim("fig2.gpt_gap_early_deep", "2D", "The C − UC gap is largest early and in deeper blocks (GPT).", "",
          "gap at the first step > at the last; block 3's gap > block 1's", ("gpt_shakespeare",),
          gap_early_and_deep("block")),
    Claim("fig3.prediction_tracks", "3", "The free-probability prediction tracks the observed ρ_2nd, seed by seed.",
          "", "max |ρ_pred − ρ_2nd| ≤ 0.05 over γ and data seeds", ("reversing",), fig3_prediction_tracks),
    Claim("fig3.reversal", "3", "The alignment-reversing data drive ρ_2nd well below 1 as γ decreases.", "",
          "seed-mean ρ_2nd ≤ 0.9 at the smallest γ and ≥ 0.1 below its value at the largest γ", ("reversing",),
          fig3_reversal, (FIG3_SPIKE,)),
    Claim("fig4.gd_rc_grows", "4", "Under GD, R_C grows as the first-layer init scale s₀ shrinks.", "",
          "final layer-1 R_C non-decreasing from s₀ = 1 to the smallest s₀ (tolerance 0.02)", ("slo_sweep",),
          grows_as_s0_shrinks("ratio_c_uc")),
    Claim("fig4.gd_uc_grows", "4", "Under GD, UC-NFC grows as s₀ shrinks.", "",
          "final layer-1 UC-NFC non-decreasing as s₀ shrinks (tolerance 0.02)", ("slo_sweep",),
          grows_as_s0_shrinks("uc_nfc")),
    Claim("fig4.slo_rc_one", "4", "With SLO, R_C ≈ 1 for every s₀.", "≈ 1", "final layer-1 R_C ≥ 0.9 at every s₀",
          ("slo_sweep",), fig4_slo_rc_one),
    Claim("fig4.slo_nfc_one", "4", "With SLO, UC-NFC and C-NFC reach ≈ 1 at every s₀.", "≈ 1",
          "final layer-1 UC and C ≥ 0.95 at every s₀", ("slo_sweep",), fig4_slo_nfc_one,
          (FIG4_ONE_SEED, FIG4_PAPER)),
    Claim("fig4.slo_invariant", "4", "With SLO, UC-NFC does not depend on s₀.", "",
          "final layer-1 UC spread over s₀ ≤ 0.1", ("slo_sweep",), fig4_slo_invariant),
    Claim("fig11.gd_f_loses_faster", "4, 11", "Under GD, as s₀ grows F loses the EGOP structure faster than Ḡ.",
          "", "ρ(F, EGOP) drops more than ρ(Ḡ, EGOP) from the smallest s₀ to s₀ = 1, and is lower at s₀ = 1",
          ("slo_sweep",), fig11_f_loses_faster),
    Claim("fig11.small_init_egop", "11", "At small s₀, F ≈ Ḡ ≈ the EGOP pattern.", "",
          "ρ(F, EGOP) and ρ(Ḡ, EGOP) ≥ 0.8 at the smallest s₀ (GD)", ("slo_sweep",), fig11_small_init_egop),
    Claim("fig11.slo_invariant", "4, 11", "With SLO the learned features match the EGOP at every s₀, even s₀ = 1.",
          "", "ρ(F, EGOP) ≥ 0.7 at every s₀ and spread ≤ 0.1", ("slo_sweep",), fig11_slo_invariant),
    Claim("fig5.rdc_small_early", "5", "R_DC ≪ 1 early in training at large init.", "",
          "R_DC ≤ 0.1 at the first measurement after step 1, s₀ ≥ 0.1, isotropic", ("init_sweep",),
          fig5_rdc_small_early),
    Claim("fig5.rdc_grows", "5", "R_DC becomes non-negligible over longer training.", "",
          "final R_DC ≥ 0.3 and above its early value in every curve (isotropic)", ("init_sweep",), fig5_rdc_grows),
    Claim("fig6.ptkc_decreases", "6", "The PTK-centered NFC decreases during training.", "",
          "final < step-1 value in ≥ 75% of (spectrum, s₀, layer) curves", ("init_sweep",), fig6_ptkc_decreases),
    Claim("fig7.dip", "7", "Observed and predicted ρ dip at intermediate data decay α.", "",
          "an interior minimum ≥ 0.01 below both ends in ≥ 75% of the curves", ("first_order",), fig7_dip),
    Claim("fig7.quadratic_width", "7", "For quadratic nets the prediction matches better at k = 1024 than k = 128.",
          "", "mean |pred − obs| over α smaller at the largest width, for every task", ("first_order",),
          fig7_quadratic_width),
    Claim("fig7.relu_qualitative", "7", "For ReLU nets prediction and observation agree qualitatively.", "",
          "max |pred − obs| ≤ 0.2", ("first_order",), fig7_relu_qualitative),
    *[claim for fig, spectrum in SPECTRUM_FIGURES.items() for claim in (
        Claim(f"fig{fig}.c_high_early", fig, f"C-NFC is high early, for every s₀ ({spectrum} spectrum).", "",
              "C-NFC ≥ 0.75 at the first measurement after step 1, every s₀ and layer", ("init_sweep",),
              c_high_early_sweep(spectrum)),
        Claim(f"fig{fig}.c_more_robust", fig, f"C-NFC is more robust to s₀ than UC-NFC ({spectrum} spectrum).", "",
              "final C range over s₀ < UC range, in every layer", ("init_sweep",), c_more_robust(spectrum),
              SPECTRUM_DIAGNOSES.get((fig, "c_more_robust"), ())),
        Claim(f"fig{fig}.uc_rises", fig, f"UC-NFC rises during training ({spectrum} spectrum).", "",
              "final UC > UC at init in ≥ 75% of (s₀, layer) curves", ("init_sweep",), uc_rises(spectrum)),
        Claim(f"fig{fig}.small_s0_better", fig,
              f"Smaller s₀ gives a higher UC-NFC and a lower test loss ({spectrum} spectrum).", "",
              "smallest s₀ vs s₀ = 1: higher final layer-1 UC and lower final test loss", ("init_sweep",),
              small_s0_better(spectrum), SPECTRUM_DIAGNOSES.get((fig, "small_s0_better"), ())),
    )],
    Claim("fig12.equalizes_above_gd", "12", "Adaptive SLO brings every layer to a UC-NFC above GD's best layer.", "",
          "min over layers of SLO's final UC > max over layers of GD's", ("adaptive_slo",), fig12_equalizes_above_gd,
          (FIG12_EQUALIZES,)),
    Claim("fig12.test_lower", "12", "Adaptive SLO reaches a lower test loss than GD.", "",
          "final seed-mean test loss SLO < GD", ("adaptive_slo",), fig12_test_lower, (FIG12_TEST,)),
    Claim("fig14.mlp_weights_move", "14", "MLP weights move substantially from init in every layer.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every layer and dataset", ("real_mlp",), weights_move, (MLP_MOVES_QUICK,)),
    Claim("fig15.vgg_weights_move", "15A", "VGG weights move substantially from init in every conv layer.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every layer", ("vgg_cifar",), weights_move),
    Claim("fig15.gpt_weights_move", "15B", "GPT Q, K, V weights move substantially from init in every block.", "",
          "final ‖W − W₀‖/‖W‖ ≥ 0.1 in every block and projection", ("gpt_shakespeare",), weights_move),
    Claim("fig16.diag_high", "16", "On CelebA glasses, diag F and diag Ḡ are highly correlated.", "0.91",
          "mean Pearson ρ(diag F, diag Ḡ) ≥ 0.75", ("celeba_glasses",), fig16_diag_high),
    Claim("fig16.corrupted_near_zero", "16", "With random eigenvectors (WᵀQW) the diagonal correlation vanishes.",
          "0.04", "|mean ρ(diag F, diag WᵀQW)| ≤ 0.2 and ≥ 0.5 below ρ(diag F, diag Ḡ)", ("celeba_glasses",),
          fig16_corrupted_near_zero, (FIG16_CORRUPTED,)),
    Claim("fig17.slo_raises", "17", "On SVHN, SLO raises layer-1 UC-NFC, C-NFC and R_C over standard training.", "",
          "final seed-mean SLO > GD for all three, layer 1", ("svhn_slo",), fig17_slo_raises),
]
