"""Deep RFM's memory bound: one layer holds at most two N×N float64 buffers (the kernel matrix and its Cholesky
factor), so the paper's N = 50,000 fits one 80 GB GPU (40 GB for the two).

Measured, not timed: one layer at N = 3000 in a fresh process, its peak resident memory (Linux VmHWM, reset to the
current RSS just before the layer) minus the RSS before it. glibc is told to map every block over 1 MB on its own
(MALLOC_MMAP_THRESHOLD_), so a freed buffer leaves RSS at once and the peak counts live tensors, not heap reuse.
The full-matrix implementation this replaced peaked at 5 N×N buffers here (d = 50; 12 at MNIST's d = 784, N = 4000).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

N = 3000
NN_BYTES = 8 * N * N  # one N×N float64 buffer, 72 MB

LAYER = """
import re
import sys
from pathlib import Path

import torch

from featlearn.rfm.deep_rfm import pm_one_hot, rfm_layer

torch.set_num_threads(1)
n, kernel = int(sys.argv[1]), sys.argv[2]


def status(key):
    return int(re.search(key + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


g = torch.Generator().manual_seed(0)
labels = torch.arange(n) % 10
x = torch.randn(10, 50, dtype=torch.float64, generator=g)[labels] + torch.randn(n, 50, dtype=torch.float64, generator=g)
y = pm_one_hot(labels)
rfm_layer(x[:300], y[:300], g, kernel=kernel, width=64)  # warm-up: BLAS and LAPACK buffers, lazy initialization
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
base = status("VmRSS")
rfm_layer(x, y, g, kernel=kernel, width=64)
print(status("VmHWM") - base)
"""


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's resettable peak RSS")
@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_one_layer_peaks_at_two_n_by_n_buffers(kernel):
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20), "OMP_NUM_THREADS": "1"}
    src = str(Path(__file__).resolve().parents[2] / "src")  # this checkout's code, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", LAYER, str(N), kernel], capture_output=True, text=True, env=env,
                          check=True, timeout=600)
    peak = int(done.stdout.split()[-1]) / NN_BYTES
    # K and its factor are both alive during the solve (2); the (N, d) and (N, width) arrays add about 0.1
    assert 1.9 < peak < 2.5, f"one layer at N = {N} peaked at {peak:.2f} N×N float64 buffers"
