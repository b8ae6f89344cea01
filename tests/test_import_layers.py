"""The science stands without the build: importable and usable with none of ``featlearn.pipeline`` loaded."""

import subprocess
import sys

SCIENCE = """
import sys, tempfile, torch
from pathlib import Path
import featlearn, featlearn.claims, featlearn.figures.alignment.fig1, featlearn.metrics.measure
from featlearn import DeepRFM
from featlearn.train import train
from featlearn.hooks import Hooks, current
assert current() == Hooks()
g = torch.Generator().manual_seed(0)
x, labels = torch.randn(40, 5, generator=g), torch.arange(40) % 2
rfm = DeepRFM(depth=2, gram_per_class=3, gram_layers=(1,), width=16, random_state=0).fit(x, labels)
assert torch.isfinite(torch.as_tensor(rfm.metrics_["nc1"])).all()
spec = {"seed": 0, "model": {"widths": [8], "activation": "relu", "init_scales": [1.0], "init_convention": "torch_std",
                              "readout_scale": 1.0},
        "train": {"optimizer": "gd", "lr": 0.1, "steps": 3, "measure_every": 1}}
data = {"x": torch.randn(16, 4, generator=g), "y": torch.randn(16, 1, generator=g)}
with tempfile.TemporaryDirectory() as tmp:
    record = train(spec, data, Path(tmp) / "run.pt", Path(tmp) / "run.ckpt")
    assert record["status"] == "completed" and (Path(tmp) / "run.pt").exists()
featlearn.measure_nfa
loaded = sorted(m for m in sys.modules if m.startswith("featlearn.pipeline"))
assert not loaded, loaded
print("ok")
"""


def test_the_science_runs_without_the_build():
    proc = subprocess.run([sys.executable, "-c", SCIENCE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
