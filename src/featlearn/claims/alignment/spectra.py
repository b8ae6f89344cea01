"""The four claims that Figs 8, 9 and 10 make alike, each on one input spectrum of the init sweep: C-NFC high
early and more robust to s₀ than UC-NFC, UC-NFC rising during training, smaller s₀ better."""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

from featlearn.claims.alignment.common import COSINE, early_index, final_seed_mean, series, spectrum
from featlearn.claims.core import Claim
from featlearn.claims.diagnoses import Diagnosis
from featlearn.claims.reading import convention, final, fmt, seed_mean, slash, values
from featlearn.claims.terms import Fact, Outcome, StoreCheck, above, at_least, fact


def c_high_early(name: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        c = seed_mean(convention(spectrum(ds, name).c_nfc, COSINE))
        v = values(c.isel(step=early_index(c)), "early C-NFC")
        return Outcome(f"{fmt(v.min())}–{fmt(v.max())} at step {int(c.step[early_index(c)])} (every s₀, layer)",
                       (at_least("lowest early C-NFC", v.min(), 0.75),), float(v.min()))

    return check


def c_more_robust(name: str) -> StoreCheck:
    """Range over s₀ of the final seed-mean NFC, C against UC, per layer."""

    def check(ds: xr.Dataset) -> Outcome:
        run = spectrum(ds, name)
        c, uc = (final_seed_mean(convention(run[v], COSINE)) for v in ("c_nfc", "uc_nfc"))
        c_range = values(c.max("init_scale") - c.min("init_scale"), "C range")
        uc_range = values(uc.max("init_scale") - uc.min("init_scale"), "UC range")
        facts = {f"{nfc.lower()}_range_{int(layer)}":
                 fact(r, f"range over s₀ of layer {int(layer)}'s final seed-mean {nfc}-NFC", f"{nfc.lower()}_nfc")
                 for nfc, ranges in (("C", c_range), ("UC", uc_range)) for layer, r in zip(c.layer.values, ranges)}
        return Outcome(f"range over s₀: C {slash(c_range)}, UC {slash(uc_range)} "
                       "(per layer)", (above("least UC range − C range", (uc_range - c_range).min(), 0),),
                       float(c_range.max()), facts)

    return check


def uc_rises(name: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        uc = seed_mean(convention(spectrum(ds, name).uc_nfc, COSINE))
        start, end = values(uc.isel(step=0), "UC-NFC at init"), values(final(uc), "UC-NFC final")
        rises = end > start
        flat = uc.isel(step=0).stack(curve=("init_scale", "layer")).curve.values[~rises.ravel()]
        exceptions = "; not at " + ", ".join(f"s₀ = {s:g} layer {int(layer)}" for s, layer in flat) if flat.size else ""
        return Outcome(f"rises in {int(rises.sum())} of {rises.size} (s₀, layer) curves, "
                       f"{fmt(start.mean())} → {fmt(end.mean())} on average{exceptions}",
                       (at_least("share of curves", rises.mean(), 0.75),), float(rises.mean()))

    return check


def _loss_facts(run: xr.Dataset, uc: Sequence[float], loss: Sequence[float]) -> dict[str, Fact]:
    """What a diagnosis of the small-s₀ claim reads: UC and losses at s₀ = 1 (largest) and the smallest s₀."""
    per_seed = final(run.test_loss)
    facts = {"uc_large": fact(uc[0], "final seed-mean layer-1 UC-NFC at s₀ = 1", "uc_nfc"),
             "uc_small": fact(uc[-1], "final seed-mean layer-1 UC-NFC at the smallest s₀", "uc_nfc"),
             "loss_large": fact(loss[0], "final seed-mean test loss at s₀ = 1", "test_loss"),
             "loss_small": fact(loss[-1], "final seed-mean test loss at the smallest s₀", "test_loss"),
             "loss_large_seeds": fact(per_seed.isel(init_scale=0), "per seed, the final test loss at s₀ = 1",
                                      "test_loss"),
             "loss_small_seeds": fact(per_seed.isel(init_scale=-1), "per seed, the final test loss at the smallest s₀",
                                      "test_loss")}
    if "train_loss" in run:
        train = final_seed_mean(run.train_loss)
        facts.update(train_large=fact(train.isel(init_scale=0), "final seed-mean train loss at s₀ = 1", "train_loss"),
                     train_small=fact(train.isel(init_scale=-1), "final seed-mean train loss at the smallest s₀",
                                      "train_loss"))
    return facts


def small_s0_better(name: str) -> StoreCheck:
    def check(ds: xr.Dataset) -> Outcome:
        run = spectrum(ds, name).sortby("init_scale", ascending=False)
        uc = values(final_seed_mean(convention(run.uc_nfc, COSINE).sel(layer=1)), "final UC-NFC")
        loss = values(final_seed_mean(run.test_loss), "final test loss")
        return Outcome(f"UC {series(run.init_scale.values, uc)}; test loss {slash(loss)}",
                       (above("UC gain at the smallest s₀", uc[-1] - uc[0], 0),
                        above("test loss saved at the smallest s₀", loss[0] - loss[-1], 0)),
                       float(loss[-1] - loss[0]), _loss_facts(run, uc, loss))

    return check


def claims(fig: str, name: str, robust: tuple[Diagnosis, ...] = (), better: tuple[Diagnosis, ...] = ()) -> list[Claim]:
    """The four claims of one figure on the spectrum ``name``, with the diagnoses of its C-robustness (``robust``) and
    small-s₀ (``better``) claims."""
    return [
        Claim(f"fig{fig}.c_high_early", fig, f"C-NFC is high early, for every s₀ ({name} spectrum).", "",
              "C-NFC ≥ 0.75 at the first measurement after step 1, every s₀ and layer", ("init_sweep",),
              c_high_early(name)),
        Claim(f"fig{fig}.c_more_robust", fig, f"C-NFC is more robust to s₀ than UC-NFC ({name} spectrum).", "",
              "final C range over s₀ < UC range, in every layer", ("init_sweep",), c_more_robust(name), robust),
        Claim(f"fig{fig}.uc_rises", fig, f"UC-NFC rises during training ({name} spectrum).", "",
              "final UC > UC at init in ≥ 75% of (s₀, layer) curves", ("init_sweep",), uc_rises(name)),
        Claim(f"fig{fig}.small_s0_better", fig,
              f"Smaller s₀ gives a higher UC-NFC and a lower test loss ({name} spectrum).", "",
              "smallest s₀ vs s₀ = 1: higher final layer-1 UC and lower final test loss", ("init_sweep",),
              small_s0_better(name), better),
    ]
