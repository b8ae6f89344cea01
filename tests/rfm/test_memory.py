"""Deep RFM's memory bound: one layer holds one N×N float64 buffer (the kernel matrix, factorized in place), at most 9
bytes per N² with everything else, so the paper's N = 50,000 fits a 24 GB card (20 GB for the buffer). The two-buffer
solve, kept for comparison, peaks at just over two (``benchmarks/deep_rfm.py --memory --solve two_buffers``).

Measured, not timed: one layer at N = 3000 in a fresh process, its peak resident memory (Linux VmHWM, reset to the
current RSS just before the layer) minus the RSS before it. glibc is told to map every block over 1 MB on its own
(MALLOC_MMAP_THRESHOLD_), so a freed buffer leaves RSS at once and the peak counts live tensors, not heap reuse.
The full-matrix implementation before it peaked at 5 N×N buffers here (d = 50; 12 at MNIST's d = 784, N = 4000).
"""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from featlearn import hooks
from featlearn.pipeline import memory
from featlearn.rfm.deep_rfm import DeepRFM, choose_solve
from featlearn.rfm.layer import pm_one_hot, rfm_layer
from featlearn.rfm.memory import SOLVES, layer_bytes, run_bytes

N = 3000
NN_BYTES = 8 * N * N  # one N×N float64 buffer, 72 MB

LAYER = """
import re
import sys
from pathlib import Path

import torch

from featlearn.rfm.layer import pm_one_hot, rfm_layer

torch.set_num_threads(1)
n, kernel, d, width = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
activation, solve, overwrite = sys.argv[5], sys.argv[6], sys.argv[7] == "1"


def status(key):
    return int(re.search(key + r":\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


g = torch.Generator().manual_seed(0)
labels = torch.arange(n) % 10
x = torch.randn(10, d, dtype=torch.float64, generator=g)[labels] + torch.randn(n, d, dtype=torch.float64, generator=g)
y = pm_one_hot(labels)
layer = {"kernel": kernel, "width": width, "activation": activation, "solve": solve}
rfm_layer(x[:300].clone(), y[:300], g, overwrite=overwrite, **layer)  # warm-up: BLAS and LAPACK, lazy initialization
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
base = status("VmRSS")
rfm_layer(x, y, g, overwrite=overwrite, **layer)
print(status("VmHWM") - base)
"""


PEAK_RSS = pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                              reason="needs Linux's resettable peak RSS")


def layer_peak(n: int, kernel: str, d: int = 50, width: int = 64, activation: str = "relu", solve: str = "in_place",
               overwrite: bool = False) -> int:
    """Bytes one layer on (n, d) inputs adds to the peak RSS of a fresh process."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20), "OMP_NUM_THREADS": "1"}
    src = str(Path(__file__).resolve().parents[2] / "src")  # this checkout's code, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    args = [str(n), kernel, str(d), str(width), activation, solve, str(int(overwrite))]
    done = subprocess.run([sys.executable, "-c", LAYER, *args], capture_output=True, text=True, env=env, check=True,
                          timeout=600)
    return int(done.stdout.split()[-1])


@PEAK_RSS
@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_one_layer_peaks_at_one_n_by_n_buffer(kernel):
    """At most 9 bytes per N²: K (8) factorized in place; the normalized X and small arrays add about 0.4 here."""
    peak = layer_peak(N, kernel)
    assert 0.95 * NN_BYTES < peak <= 9 * N * N, f"one layer at N = {N} peaked at {peak / N**2:.2f} bytes per N²"
    assert NN_BYTES <= layer_bytes(N, 50, 64) < 2 * NN_BYTES
    assert peak <= layer_bytes(N, 50, 64), f"layer_bytes {layer_bytes(N, 50, 64):,} < measured peak {peak:,}"


@PEAK_RSS
@pytest.mark.parametrize(("n", "d", "width", "activation", "overwrite"), [
    (1000, 784, 4096, "cos", False),  # the features step sets the peak
    (400, 784, 1024, "relu", True),  # the thin route (n < d), X normalized in place
])
def test_layer_bytes_bounds_the_peak_where_the_solve_does_not_set_it(n, d, width, activation, overwrite):
    peak = layer_peak(n, "laplace", d, width, activation, overwrite=overwrite)
    need = layer_bytes(n, d, width, overwrite=overwrite)
    assert peak <= need, f"layer_bytes {need:,} < measured peak {peak:,}"


@PEAK_RSS
def test_a_layer_that_may_overwrite_its_input_saves_the_normalized_copy():
    n, d = 600, 7200  # the thin route: X (n, d) is 12 N×N buffers here (35 MB), so its copy stands out of the noise
    # the least of three runs each: a process's peak RSS moves by ±5 MB from run to run, always upwards of what the
    # layer needs (at d = 2400, a 12 MB copy, CI once measured a saving of 8 MB)
    copy, in_place = (min(layer_peak(n, "laplace", d, 64, overwrite=overwrite) for _ in range(3))
                      for overwrite in (False, True))
    assert copy - in_place > 0.8 * 8 * n * d, f"normalizing in place saved {(copy - in_place) / 1e6:.0f} MB"
    assert layer_bytes(n, d, 64) - layer_bytes(n, d, 64, overwrite=True) == 8 * n * d


def test_the_needs_at_the_papers_n():
    """N = 50,000: the in-place layer fits 22 GB with its input, half the two-buffer one (41.7 GB before)."""
    for d, width in ((3072, 4096), (784, 4096), (4096, 4096), (3072, 1024), (1024, 1024)):
        assert 20e9 < run_bytes(50_000, d, width) <= 22e9, (d, width)
        assert run_bytes(50_000, d, width, solve="two_buffers") > 40e9
    assert layer_bytes(50_000, 4096, 4096, solve="two_buffers") == pytest.approx(41.7e9, rel=1e-3)
    assert layer_bytes(50_000, 4096, 4096) == pytest.approx(21.7e9, rel=1e-3)
    # float32 features: a K built row block by row block into float64, never a float32 N×N beside it
    assert layer_bytes(50_000, 4096, 4096, dtype=torch.float32) < 21.7e9 + 1e9
    with pytest.raises(ValueError, match="unknown solve 'lu'"):
        layer_bytes(10, 2, 4, solve="lu")


def test_a_run_takes_the_two_buffer_solve_only_where_it_fits(monkeypatch, caplog):
    need = {solve: run_bytes(4000, 784, 1024, solve=solve) for solve in SOLVES}
    answers = hooks.current()
    monkeypatch.setattr(hooks, "_installed", replace(answers, available_bytes=lambda device: need["two_buffers"]))
    assert choose_solve(4000, 784, 1024, torch.float64, "cpu", "two_buffers") == "two_buffers"
    assert choose_solve(4000, 784, 1024, torch.float64, "cpu") == "in_place"  # the default prefers the leanest
    monkeypatch.setattr(hooks, "_installed", replace(answers, available_bytes=lambda device: need["two_buffers"] - 1))
    with caplog.at_level("INFO", logger="featlearn.rfm.deep_rfm"):
        assert choose_solve(4000, 784, 1024, torch.float64, "cpu", "two_buffers") == "in_place"
    assert "two N×N float64 buffers, K and its Cholesky factor would need" in caplog.text
    assert "one N×N float64 buffer, K factorized in place fits: taking it" in caplog.text


def test_a_run_records_its_solve_in_the_store_and_log_and_both_solves_give_the_same_store(monkeypatch, caplog):
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(60) % 3
    x = torch.randn(3, 40, generator=g)[labels] + torch.randn(60, 40, generator=g)  # float32: the run copies it
    x[1] = x[0]  # a duplicate: K is singular, the in-place solve rebuilds K for its jitter retry
    before = x.clone()
    kw = dict(depth=3, kernel="gaussian", width=32, gram_layers=(1, 3), gram_per_class=4)
    with caplog.at_level("INFO", logger="featlearn.rfm.deep_rfm"):
        runs = {solve: DeepRFM(solve=solve, random_state=1, **kw).fit(x, labels).dataset_ for solve in SOLVES}
    assert "solve: one N×N float64 buffer, K factorized in place" in caplog.text
    assert {solve: ds.attrs["solve"] for solve, ds in runs.items()} == {solve: solve for solve in SOLVES}
    assert (runs["in_place"].jitter > 0).any()
    a, b = (ds.drop_vars("seconds").drop_attrs() for ds in runs.values())
    assert a.identical(b)
    assert torch.equal(x, before)  # the run normalized its own float64 copy in place, not the caller's X


def test_a_layer_too_big_for_its_device_stops_before_allocating(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda device: 10**6)
    x = torch.randn(500, 20, dtype=torch.float64)
    need = layer_bytes(500, 20, 64)
    with pytest.raises(memory.MemoryNeedError) as err:
        rfm_layer(x, pm_one_hot(torch.arange(500) % 3), torch.Generator().manual_seed(0), width=64)
    text = str(err.value)
    assert "N = 500 (d = 20, width 64" in text and f"needs {need / 1e9:.3g} GB" in text
    assert "cpu (host memory" in text and "has 0.001 GB available" in text and "lower data.n" in text
