"""docs/stores.md's sections: one row per variable and coordinate, with its dimensions and CF attributes."""

import json

import numpy as np
import xarray as xr

from featlearn.pipeline.catalogue import catalogue, describe


def _store() -> xr.Dataset:
    ds = xr.Dataset({"loss": (("seed", "iteration"), np.zeros((2, 3)))},
                    coords={"iteration": np.arange(3), "seed": [0, 1]},
                    attrs={"experiment_config": json.dumps({"kind": "network"})})
    ds.loss.attrs.update(long_name="training loss | after the step", units="nats")
    ds.iteration.attrs.update(long_name="optimizer steps", units="steps")
    return ds


def test_a_store_s_section_names_each_variable_s_dimensions_and_attributes():
    text = describe("real_mlp", _store())
    assert "## `real_mlp`" in text and "Experiment kind `network`." in text
    assert "| `loss` | seed, iteration | training loss \\| after the step | nats |" in text
    assert "| coordinate `iteration` | iteration | optimizer steps | steps |" in text
    assert "| coordinate `seed` | seed |  |  |" in text


def test_the_page_lists_stores_by_name():
    page = catalogue({"b": _store(), "a": _store()})
    assert page.startswith("# The stores") and page.index("## `a`") < page.index("## `b`")


def test_rounding_twins_are_named_in_one_line_not_described_again():
    page = catalogue({"a": _store(), "a_twin": _store()})
    assert "## `a`" in page and "## `a_twin`" not in page
    assert "Rounding twins, each holding the variables of the experiment it names: `a_twin`." in page
    assert "Rounding twins" not in catalogue({"a": _store()})
