import json

import numpy as np
import pytest
import xarray as xr

from featlearn.metrics.axes import epoch_axis, step_axis
from featlearn.pipeline.store import check_attributes, read_store, write_store


def _labelled() -> xr.Dataset:
    return step_axis([0, 5, 10]).assign(
        uc_nfc=(("step", "layer"), np.zeros((3, 2)), {"long_name": "uncentered NFC", "units": "1"}),
    ).assign_coords(layer=("layer", [1, 2], {"long_name": "layer", "units": "1"}),
                    convention=("convention", ["cosine"], {"long_name": "correlation convention"}))


def test_a_labelled_store_passes_and_is_written(tmp_path):
    ds = _labelled()
    check_attributes(ds)  # a string coordinate needs a long_name only
    write_store(ds, tmp_path / "s.nc", {"scale": "smoke"})
    back = read_store(tmp_path / "s.nc")
    assert back.step.attrs == {"long_name": "optimizer steps since initialization", "units": "steps"}
    assert back.uc_nfc.attrs == {"long_name": "uncentered NFC", "units": "1"}


def test_every_unlabelled_variable_is_named_and_nothing_is_written(tmp_path):
    ds = _labelled().assign(jitter=("layer", [0.0, 1e-8]))
    ds["layer"].attrs.pop("units")
    ds["convention"].attrs.clear()
    with pytest.raises(ValueError) as err:
        check_attributes(ds)
    for named in ("jitter (long_name, units)", "layer (units)", "convention (long_name)"):
        assert named in str(err.value)
    path = tmp_path / "results" / "s.nc"
    with pytest.raises(ValueError, match=rf"metric store {path}: store variables without CF attributes: .*jitter"):
        write_store(ds, path, {"scale": "smoke"})
    assert not (tmp_path / "results").exists()  # refused before anything is written


def test_epoch_axis_labels_the_step_dimension():
    ds = epoch_axis([0.0, 1.0, 2.0], [100, 130, 160])
    assert dict(ds.sizes) == {"step": 3} and "step" not in ds.coords
    assert ds.epoch.dims == ("step",) and ds.epoch.attrs["units"] == "epochs"
    assert ds.step_of_epoch.dtype == float and list(ds.step_of_epoch.values) == [100, 130, 160]
    check_attributes(ds)
    with pytest.raises(ValueError, match="2 epochs for 3 steps"):
        epoch_axis([0.0, 1.0], [100, 130, 160])


@pytest.mark.parametrize("edited", [False, True])
def test_a_config_edited_mid_build_does_not_mark_stores_of_the_committed_config_dirty(monkeypatch, edited):
    """The Snakefile records, when it parses the config, which specs come from an experiment not as committed; the
    working tree's config.yaml at write time (edited since) no longer decides ``git_dirty``."""
    import featlearn.pipeline.store as store
    from featlearn.config import spec_hash
    from featlearn.pipeline.reruns import CONFIG_EDITS

    spec = {"experiment": "chain_fig1", "seed": 0}
    monkeypatch.setattr(store, "git_state", lambda repo=None: ("0123abcd", True))  # config.yaml edited since
    monkeypatch.setattr(store, "_code_dirty", lambda commit: False)
    monkeypatch.setenv(store.CONFIG_EDITS, json.dumps([spec_hash(spec)] if edited else ["9876543210"]))
    attrs = store.provenance(json.dumps(spec, sort_keys=True), "smoke", "measure", "synthetic", "{}")
    assert attrs["git_dirty"] == attrs["config_edited"] == int(edited) and store.CONFIG_EDITS == CONFIG_EDITS
    assert attrs["config_sha256"].startswith(spec_hash(spec)) and attrs["numerics"] == "{}"
