import os
import subprocess
import sys

import pytest

from featlearn.data import prepare
from featlearn.pipeline import deps

TEACHER = {"dataset": "mnist_teacher", "minus": 2, "plus": 3, "n_train": 20, "normalization": "unit_norm",
           "widths": [8], "fit": "lstsq", "seed": 0, "teacher": 0, "target": "linear"}
# a block of each kind -> the module that prepares it, and the data modules its job must not depend on
BLOCKS = [
    ({"dataset": "shakespeare_char", "source": "real"}, "text", {"real", "standins", "teacher"}),
    ({"dataset": "shakespeare_char", "source": "offline"}, "text", {"real", "standins", "teacher"}),
    (TEACHER, "teacher", {"real", "standins", "text", "missing"}),
    ({"dataset": "cifar10", "source": "real"}, "real", {"standins", "text", "teacher"}),
    ({"dataset": "mnist", "source": "offline"}, "standins", {"text", "teacher"}),
    ({"dataset": "svhn", "source": "standin"}, "standins", {"text", "teacher"}),
]


@pytest.mark.parametrize(("block", "name", "foreign"), BLOCKS)
def test_a_data_job_depends_on_its_own_datasets_code_only(block, name, foreign):
    module = prepare.module(block)
    assert module == f"featlearn.data.{name}" == deps.dispatch("featlearn.data.prepare")[prepare.choice(block)]
    code = set(deps.job_sources("prepare_data", module))
    assert f"src/featlearn/data/{name}.py" in code
    assert not {f"src/featlearn/data/{m}.py" for m in foreign} & code


def test_a_stand_in_shares_the_preprocessing_and_registry_but_not_the_loader():
    """An edit to torchvision's side (real.py) reruns no offline job; one to what both share reruns both."""
    shared = {"src/featlearn/data/preprocessing.py", "src/featlearn/data/registry.py"}
    assert shared <= set(deps.closure("featlearn.data.standins")) & set(deps.closure("featlearn.data.real"))
    assert "src/featlearn/data/real.py" not in deps.closure("featlearn.data.standins")


def test_an_unknown_source_or_dataset_names_the_choices(tmp_path):
    with pytest.raises(ValueError, match=r"must be one of \['mnist_teacher', 'offline', 'real', 'shakespeare_char'"):
        prepare.prepare({"dataset": "cifar10", "source": "web"}, tmp_path)
    for source in ("real", "offline"):
        with pytest.raises(ValueError, match=r"unknown dataset 'imagenet'; choose one of \['celeba', 'cifar10'"):
            prepare.prepare({"dataset": "imagenet", "source": source}, tmp_path)


def test_the_teacher_block_is_the_teachers_dataset(tmp_path):
    data = prepare.prepare(TEACHER, tmp_path)
    assert data["x"].shape == (20, 784) and set(data["digit"].tolist()) <= {2, 3}


def test_preparing_the_corpus_loads_no_image_code(tmp_path):
    """What deps computes is what runs: the offline corpus job imports no image module, nor torchvision."""
    script = ("import sys; from featlearn.data.prepare import prepare; "
              f"prepare({{'dataset': 'shakespeare_char', 'source': 'offline'}}, {str(tmp_path)!r}); "
              "print(' '.join(m for m in sys.modules if m.startswith(('featlearn.data', 'torchvision'))))")
    loaded = set(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                env={**os.environ, "PYTHONPATH": str(deps.SRC)}).stdout.split())
    assert loaded == {"featlearn.data", "featlearn.data.prepare", "featlearn.data.text", "featlearn.data.missing"}
