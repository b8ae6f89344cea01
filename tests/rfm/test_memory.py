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
import torch

from featlearn import memory
from featlearn.rfm.deep_rfm import layer_bytes, pm_one_hot, rfm_layer

N = 3000
NN_BYTES = 8 * N * N  # one N×N float64 buffer, 72 MB

LAYER = """
import re
import sys
from pathlib import Path

import torch

from featlearn.rfm.deep_rfm import pm_one_hot, rfm_layer

torch.set_num_threads(1)
n, kernel, d, width, activation = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]


def status(key):
    return int(re.search(key + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


g = torch.Generator().manual_seed(0)
labels = torch.arange(n) % 10
x = torch.randn(10, d, dtype=torch.float64, generator=g)[labels] + torch.randn(n, d, dtype=torch.float64, generator=g)
y = pm_one_hot(labels)
layer = {"kernel": kernel, "width": width, "activation": activation}
rfm_layer(x[:300], y[:300], g, **layer)  # warm-up: BLAS and LAPACK buffers, lazy initialization
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
base = status("VmRSS")
rfm_layer(x, y, g, **layer)
print(status("VmHWM") - base)
"""


PEAK_RSS = pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                              reason="needs Linux's resettable peak RSS")


def layer_peak(n: int, kernel: str, d: int = 50, width: int = 64, activation: str = "relu") -> int:
    """Bytes one layer on (n, d) inputs adds to the peak RSS of a fresh process."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20), "OMP_NUM_THREADS": "1"}
    src = str(Path(__file__).resolve().parents[2] / "src")  # this checkout's code, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    args = [str(n), kernel, str(d), str(width), activation]
    done = subprocess.run([sys.executable, "-c", LAYER, *args], capture_output=True, text=True, env=env, check=True,
                          timeout=600)
    return int(done.stdout.split()[-1])


@PEAK_RSS
@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_one_layer_peaks_at_two_n_by_n_buffers(kernel):
    peak = layer_peak(N, kernel)
    # K and its factor are both alive during the solve (2); the (N, d) and (N, width) arrays add about 0.1
    assert 1.9 < peak / NN_BYTES < 2.5, f"one layer at N = {N} peaked at {peak / NN_BYTES:.2f} N×N float64 buffers"
    assert 2 * NN_BYTES <= layer_bytes(N, 50, 64)
    assert peak <= layer_bytes(N, 50, 64), f"layer_bytes {layer_bytes(N, 50, 64):,} < measured peak {peak:,}"


@PEAK_RSS
@pytest.mark.parametrize(("n", "d", "width", "activation"), [
    (1000, 784, 4096, "cos"),  # the features step sets the peak
    (400, 784, 1024, "relu"),  # the thin route (n < d)
])
def test_layer_bytes_bounds_the_peak_where_the_solve_does_not_set_it(n, d, width, activation):
    peak = layer_peak(n, "laplace", d, width, activation)
    assert peak <= layer_bytes(n, d, width), f"layer_bytes {layer_bytes(n, d, width):,} < measured peak {peak:,}"


def test_a_layer_too_big_for_its_device_stops_before_allocating(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda device: 10**6)
    x = torch.randn(500, 20, dtype=torch.float64)
    need = layer_bytes(500, 20, 64)
    with pytest.raises(memory.MemoryNeedError) as err:
        rfm_layer(x, pm_one_hot(torch.arange(500) % 3), torch.Generator().manual_seed(0), width=64)
    text = str(err.value)
    assert "N = 500 (d = 20, width 64" in text and f"needs {need / 1e9:.3g} GB" in text
    assert "cpu (host memory" in text and "has 0.001 GB available" in text and "lower data.n" in text
