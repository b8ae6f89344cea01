"""featlearn as a library: the top-level names, imported lazily, and nothing of the pipeline behind them."""

import subprocess
import sys

import pytest

import featlearn
from featlearn.metrics import collapse, model_nfa
from featlearn.rfm import deep_rfm

PIPELINE = ("snakemake", "matplotlib", "jsonschema", "seaborn", "yaml", "netCDF4", "torchvision", "mlxtend")


def _modules_after(statement):
    code = f"import sys\n{statement}\nprint(' '.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_importing_featlearn_imports_no_torch():
    loaded = _modules_after("import featlearn")
    assert "torch" not in loaded and "xarray" not in loaded


def test_the_library_api_imports_nothing_of_the_pipeline():
    loaded = _modules_after("from featlearn import measure_nfa, agop, nc1, collapse_metrics, DeepRFM")
    assert "torch" in loaded
    assert not {name.split(".")[0] for name in loaded} & set(PIPELINE)


def test_top_level_names_are_the_library_objects():
    assert featlearn.measure_nfa is model_nfa.measure_nfa and featlearn.agop is model_nfa.agop
    assert featlearn.nc1 is collapse.nc1 and featlearn.collapse_metrics is collapse.collapse_metrics
    assert featlearn.DeepRFM is deep_rfm.DeepRFM
    assert set(featlearn.__all__) == set(featlearn.DISPATCH)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        featlearn.nope  # noqa: B018
    from featlearn.pipeline import store  # submodules still import as before

    assert store.__name__ == "featlearn.pipeline.store"
