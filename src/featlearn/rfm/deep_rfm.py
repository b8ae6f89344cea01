"""Deep Recursive Feature Machines as a scikit-learn classifier (collapse paper Alg. 1; docs/figures/collapse.md):
what Figs 1, 3–6 need from a run, and the last layer's kernel machine as its prediction.

``DeepRFM(depth=..., kernel=..., ...).fit(X, labels)`` stacks ``depth`` layers of Algorithm 1 (``featlearn.rfm.layer``)
and keeps what each measured, as fitted attributes and as the one labelled Dataset the pipeline stores (``dataset_``);
``predict`` maps new points through the fitted layers and reads the last one's kernel machine. It is a scikit-learn
estimator (``clone``, ``get_params``/``set_params`` from the constructor, ``Pipeline``, searches).
A run holds its own copy of X on its device and lets each layer normalize it in place; it picks the solve that fits
its device (``choose_solve``, ``featlearn.rfm.memory``), and each layer checks its memory before it allocates.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from featlearn import hooks
from featlearn.metrics.collapse import collapse_gram, collapse_metrics, gram_block_means, stratified_indices
from featlearn.rfm.features import laplace_fourier_features, relu_features
from featlearn.rfm.kernels import check_kernel, kernel_matrix
from featlearn.rfm.layer import DEFAULT_WIDTH, STEPS, RFMLayer, check_activation, pm_one_hot, rfm_layer
from featlearn.rfm.memory import SOLVES, check_solve, run_bytes

STAGES = ("X", "MX", "PhiMX")
METRICS = ("nc1", "nc1_codeconv", "nc2_meansq", "nc2_fro", "trSW", "trSB")
# long_name and units (CF) of every variable and coordinate of a run's Dataset (``store.write_store`` requires them)
ATTRS = {
    "nc1": {"long_name": "NC1 = tr Σ_W / tr Σ_B of the stage's features", "units": "1"},
    "nc1_codeconv": {"long_name": "NC1 as the authors' code computes it (Σ_W over K·N): NC1 / K", "units": "1"},
    "nc2_meansq": {"long_name": "NC2 = mean squared entry of H̄ᵀH̄ − Σ_ETF (the authors' code)", "units": "1"},
    "nc2_fro": {"long_name": "‖H̄ᵀH̄ − Σ_ETF‖_F = K √NC2", "units": "1"},
    "trSW": {"long_name": "tr Σ_W = (1/N) Σ_i ‖h_i − μ_c(i)‖² of the stage's features", "units": "1"},
    "trSB": {"long_name": "tr Σ_B = (1/K) Σ_c ‖μ_c − μ_G‖² of the stage's features", "units": "1"},
    "jitter": {"long_name": "jitter ε·I added to K + μI in the layer's solve (0: none)", "units": "1"},
    "seconds": {"long_name": "wall-clock time of each phase of the layer", "units": "s"},
    "gram": {"long_name": "Gram X̄X̄ᵀ of the centered, normalized M_l^{1/2}X_l on the class-sorted subsample",
             "units": "1"},
    "gram_block_mean": {"long_name": "mean of the full Gram X̄X̄ᵀ over each (class_a, class_b) block", "units": "1"},
    "layer": {"long_name": "Deep RFM layer l (1 = the first)", "units": "1"},
    "stage": {"long_name": "stage of the layer: X_l (X), M_l^{1/2}X_l (MX), Φ(M_l^{1/2}X_l) (PhiMX)"},
    "phase": {"long_name": "phase of Algorithm 1 within a layer (kernel, solve, agop, sqrt, features)"},
    "gram_layer": {"long_name": "layer l whose Gram is stored", "units": "1"},
    "i": {"long_name": "sample index of a Gram row (class-sorted subsample)", "units": "1"},
    "j": {"long_name": "sample index of a Gram column (class-sorted subsample)", "units": "1"},
    "class_i": {"long_name": "class of Gram row i", "units": "1"},
    "class_j": {"long_name": "class of Gram column j", "units": "1"},
    "class_a": {"long_name": "class a of a Gram block", "units": "1"},
    "class_b": {"long_name": "class b of a Gram block", "units": "1"},
}
log = logging.getLogger(__name__)


def choose_solve(n: int, d: int, width: int, dtype: torch.dtype, device: torch.device | str,
                 prefer: str = "in_place") -> str:
    """The solve a run takes: ``prefer`` where its need (``run_bytes``) fits the memory ``device`` has left, else the
    leanest (whose own check then stops the run if even that does not fit). The default prefers the leanest: a job
    sharing a GPU must stay within what it declared (``run_bytes`` in place), and two buffers only save a rebuilt K
    on jitter retries."""
    check_solve(prefer)
    need = run_bytes(n, d, width, solve=prefer, dtype=dtype)
    if prefer == "in_place" or need <= hooks.current().available_bytes(device):
        return prefer
    log.info("deep_rfm: %s would need %.3g GB at N = %d; %s fits: taking it", SOLVES[prefer],
             need / 1e9, n, SOLVES["in_place"])
    return "in_place"


def _log_layer(layer: int, depth: int, seconds: float, nc1: float, jitter: float, device: torch.device) -> None:
    msg, args = "deep_rfm layer %d/%d: %.1f s, NC1(X) %.3g", [layer, depth, seconds, nc1]
    if jitter:
        msg, args = msg + ", jitter %.2g", [*args, jitter]
    if device.type == "cuda":
        msg, args = msg + ", peak %.1f GB", [*args, torch.cuda.max_memory_allocated(device) / 1e9]
    log.info(msg, *args)


class DeepRFM(ClassifierMixin, BaseEstimator):
    """Deep RFM, a scikit-learn classifier: the hyper-parameters here, ``fit(X, y)`` runs ``depth`` layers on X (N, d)
    (a tensor or an array) with class labels y (N,) and keeps, per layer, what Figs 1, 3–6 read; ``predict(X)`` the
    labels of the last layer's kernel machine, ``decision_function(X)`` its scores (N, K).

    kernel ("laplace", "gaussian"), bandwidth L, ridge μ: each layer's kernel regression; activation ("relu", "cos"),
    width D (default 1024 / 4096), gamma: its random features; normalize_agop: M divided by its largest entry;
    gram_layers, gram_per_class: the layers whose Gram of M_l^{1/2}X_l is kept, on the first that many samples of each
    class; dtype: the features' (float64 by default: the ridgeless solve interpolates nearly collapsed points, whose
    float32 distances are noise that Ξ = k/(L r) amplifies); device: where the run computes (default: X's); solve: the
    preferred solve (``choose_solve``: the same A either way); random_state: a seed (a fresh CPU generator per fit) or
    a ``torch.Generator``, whose state the run is a function of; predictor: keep what ``predict`` needs (each layer's
    M_l^{1/2} and feature draw, the last layer's X and coefficients, on the CPU): False for a measurement-only run,
    whose host memory then does not grow with depth × d².

    After ``fit``: ``metrics_`` {name: (depth, 3)} collapse metrics (``METRICS``) of the stages X_l, M_l^{1/2}X_l and
    Φ(M_l^{1/2}X_l) (``STAGES``; Figs 3, 4); ``jitter_`` (depth,) added to K in each solve; ``seconds_`` (depth, 5)
    wall-clock per step (``STEPS``); ``gram_`` (len(gram_layers), m, m) of the centered, normalized M_l^{1/2}X_l on
    the samples ``gram_indices_``, grouped by class, and ``gram_block_mean_`` (len(gram_layers), K, K) of the full
    Gram (Figs 1, 5, 6); ``solve_`` the solve taken, ``width_`` D, ``n_features_in_`` d, ``classes_``; and
    ``dataset_``, all of them labelled (the store the pipeline writes). Logs one INFO line per layer (time, NC1 of X_l,
    any jitter, on CUDA the peak memory so far), so a slow run reads differently from a hung one.

    Labels are classes_[k] for the codes k = 0..K−1 the layers train on (±1 one-hot targets); labels 0..K−1, all
    present, are their own codes.
    """

    def __init__(
        self, depth: int = 20, kernel: str = "laplace", bandwidth: float = 2.0, ridge: float = 0.0,
        activation: str = "relu", width: int | None = None, gamma: float = 0.05, normalize_agop: bool = True,
        gram_layers: tuple[int, ...] = tuple(range(1, 20, 2)), gram_per_class: int = 100,
        dtype: torch.dtype = torch.float64, device: torch.device | str | None = None, solve: str = "in_place",
        random_state: int | torch.Generator = 0, predictor: bool = True,
    ) -> None:
        self.depth, self.kernel, self.bandwidth, self.ridge = depth, kernel, bandwidth, ridge
        self.activation, self.width, self.gamma, self.normalize_agop = activation, width, gamma, normalize_agop
        self.gram_layers, self.gram_per_class = gram_layers, gram_per_class
        self.dtype, self.device, self.solve, self.random_state = dtype, device, solve, random_state
        self.predictor = predictor

    def _check(self) -> None:
        if self.depth < 1 or not all(1 <= g <= self.depth for g in self.gram_layers):
            raise ValueError(f"DeepRFM: need depth >= 1 and gram_layers within 1..{self.depth} "
                             f"(got {self.depth}, {self.gram_layers})")
        check_activation(self.activation, "DeepRFM")
        check_kernel(self.kernel, self.bandwidth)

    def fit(self, x: torch.Tensor | np.ndarray, y: torch.Tensor | np.ndarray) -> DeepRFM:
        """Run the layers on X (N, d) with labels y (N,); returns self. Runs on ``device`` (default: X's), on its own
        copy of X in ``dtype`` when X has another device or dtype: pass X on the CPU and the run holds only that copy
        on the device (``run_bytes``). Labels are moved there; the metrics are float64, the arrays NumPy."""
        self._check()
        if isinstance(x, torch.Tensor):
            y = y.cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
            if x.dim() != 2 or len(x) != len(y):
                raise ValueError(f"DeepRFM.fit: X must be (N, d) and y (N,), got {tuple(x.shape)} and {y.shape}")
        else:  # arrays, lists, sparse matrices: scikit-learn's checks and messages
            x, y = validate_data(self, x, y, dtype=np.float64)
            x = torch.from_numpy(np.require(x, requirements="W"))  # a read-only array (a memmap) is copied
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"DeepRFM.fit: needs samples of at least 2 classes, got 1 class ({classes[0]!r})")
        generator = (self.random_state if isinstance(self.random_state, torch.Generator)
                     else torch.Generator().manual_seed(self.random_state))
        device = x.device if self.device is None else torch.device(self.device)
        gram_layers = tuple(self.gram_layers)
        self.width_ = self.width or DEFAULT_WIDTH[self.activation]
        n, self.n_features_in_ = x.shape
        self.solve_ = choose_solve(n, self.n_features_in_, self.width_, self.dtype, device, self.solve)
        log.info("deep_rfm: N = %d, d = %d on %s; solve: %s (%.3g GB)", n, self.n_features_in_, device,
                 SOLVES[self.solve_], run_bytes(n, self.n_features_in_, self.width_, solve=self.solve_,
                                                dtype=self.dtype) / 1e9)
        labels = torch.as_tensor(codes.reshape(-1), dtype=torch.long, device=device)
        targets = pm_one_hot(labels)
        subset = stratified_indices(labels, self.gram_per_class)
        k = targets.shape[1]
        self.classes_ = classes
        self.layers_: list[tuple[torch.Tensor, torch.Tensor | None, torch.Generator]] = []
        self.metrics_ = {name: np.full((self.depth, len(STAGES)), np.nan) for name in METRICS}
        self.jitter_, self.seconds_ = np.zeros(self.depth), np.zeros((self.depth, len(STEPS)))
        self.gram_ = np.zeros((len(gram_layers), len(subset), len(subset)))
        self.gram_block_mean_ = np.zeros((len(gram_layers), k, k))
        h = x.to(device=device, dtype=self.dtype)
        owned = h is not x  # the run's own copy: its layers may normalize it in place, as every later layer's input
        hooks.current().start("layer")
        for layer in range(1, self.depth + 1):
            start = time.perf_counter()
            draw = generator.clone_state()  # the layer's random features are its only draw: predict redraws them
            out = rfm_layer(
                h, targets, generator, kernel=self.kernel, bandwidth=self.bandwidth, ridge=self.ridge,
                activation=self.activation, width=self.width_, gamma=self.gamma, normalize_agop=self.normalize_agop,
                solve=self.solve_, overwrite=owned,
            )
            self._record(layer, out, labels, subset, gram_layers)
            if self.predictor:
                self._keep(layer, out, draw)
            _log_layer(layer, self.depth, time.perf_counter() - start, self.metrics_["nc1"][layer - 1, 0], out.jitter,
                       device)
            hooks.current().tick()
            h, owned = out.features, True
            del out  # this layer's X and X̃ go before the next layer's N×N buffers arrive
        self.gram_indices_ = subset.cpu().numpy()
        self.dataset_ = self._dataset(labels[subset].cpu().numpy(), n, gram_layers, generator.initial_seed())
        return self

    def _keep(self, layer: int, out: RFMLayer, draw: torch.Generator) -> None:
        """What ``predict`` needs of a layer, on the CPU: M^{1/2} and its basis and the feature draw; for the last
        layer, the normalized X and the coefficients A of its kernel machine."""
        basis = None if out.basis is None else out.basis.to("cpu", copy=True)
        self.layers_.append((out.sqrt_m.to("cpu", copy=True), basis, draw))
        if layer == self.depth:
            self.readout_ = (out.x.to("cpu", copy=True), out.coef.to("cpu", copy=True))

    def decision_function(self, x: torch.Tensor | np.ndarray) -> np.ndarray:
        """The last layer's kernel machine on new points X (n, d) mapped through the fitted layers: f(z) = k(z, X_L) A,
        (n, K) float64, one column per ``classes_`` entry (+1 for the class, −1 for the others at interpolation); with
        two classes, scikit-learn's (n,): the second column less the first, positive for ``classes_[1]``."""
        check_is_fitted(self)
        if not hasattr(self, "readout_"):
            raise AttributeError("DeepRFM.predict: this run was fitted with predictor=False, which keeps no readout")
        if isinstance(x, torch.Tensor):
            if x.dim() != 2 or x.shape[1] != self.n_features_in_:
                raise ValueError(f"DeepRFM.predict: X must be (n, {self.n_features_in_}), got {tuple(x.shape)}")
            z = x.to("cpu", self.dtype)
        else:
            z = torch.from_numpy(np.require(validate_data(self, x, dtype=np.float64, reset=False), requirements="W"))
            z = z.to(self.dtype)
        for sqrt_m, basis, draw in self.layers_[:-1]:
            z = torch.nn.functional.normalize(z, dim=1)
            coords = z if basis is None else z @ basis
            z_tilde = coords.to(torch.float64) @ sqrt_m
            z_tilde = (z_tilde if basis is None else z_tilde @ basis.to(torch.float64).T).to(self.dtype)
            generator = draw.clone_state()  # the same draw again, however often predict runs
            z = (relu_features(z_tilde, self.width_, generator) if self.activation == "relu"
                 else laplace_fourier_features(z_tilde, self.width_, self.gamma, generator))
        x_last, coef = self.readout_
        z = torch.nn.functional.normalize(z, dim=1)
        scores = (kernel_matrix(self.kernel, z.to(torch.float64), x_last.to(torch.float64), bandwidth=self.bandwidth)
                  @ coef.to(torch.float64)).numpy()
        return scores[:, 1] - scores[:, 0] if len(self.classes_) == 2 else scores

    def predict(self, x: torch.Tensor | np.ndarray) -> np.ndarray:
        """The class of each new point: the ``classes_`` entry of its largest score (``decision_function``)."""
        scores = self.decision_function(x)
        return self.classes_[(scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)]

    def _record(self, layer: int, out: RFMLayer, labels: torch.Tensor, subset: torch.Tensor,
                gram_layers: tuple[int, ...]) -> None:
        """Measure one layer's stages into the fitted arrays, while its tensors are alive."""
        for s, stage in enumerate((out.x, out.x_tilde, out.features)):
            for name, value in collapse_metrics(stage, labels).items():
                self.metrics_[name][layer - 1, s] = value
        self.jitter_[layer - 1] = out.jitter
        self.seconds_[layer - 1] = [out.seconds[step] for step in STEPS]
        if layer in gram_layers:
            g = gram_layers.index(layer)
            self.gram_[g] = collapse_gram(out.x_tilde, labels, subset).cpu().numpy()
            self.gram_block_mean_[g] = gram_block_means(out.x_tilde, labels).cpu().numpy()

    def _dataset(self, sub_labels: np.ndarray, n: int, gram_layers: tuple[int, ...], seed: int) -> xr.Dataset:
        """The fitted arrays as one labelled Dataset, with the hyper-parameters and CF attributes a store needs."""
        ds = xr.Dataset(
            {
                **{name: (("layer", "stage"), v) for name, v in self.metrics_.items()},
                "jitter": ("layer", self.jitter_),
                "seconds": (("layer", "phase"), self.seconds_),
                "gram": (("gram_layer", "i", "j"), self.gram_),
                "gram_block_mean": (("gram_layer", "class_a", "class_b"), self.gram_block_mean_),
            },
            coords={
                "layer": np.arange(1, self.depth + 1),
                "stage": list(STAGES),
                "phase": list(STEPS),
                "gram_layer": list(gram_layers),
                "i": self.gram_indices_,
                "j": self.gram_indices_,
                "class_i": ("i", sub_labels),
                "class_j": ("j", sub_labels),
                "class_a": self.classes_,
                "class_b": self.classes_,
            },
            attrs={
                "kernel": self.kernel, "bandwidth": self.bandwidth, "ridge": self.ridge,
                "activation": self.activation, "width": self.width_, "gamma": self.gamma,
                "normalize_agop": int(self.normalize_agop), "n_samples": n, "input_dim": self.n_features_in_,
                "num_classes": len(self.classes_), "seed": seed, "dtype": str(self.dtype), "solve": self.solve_,
            },
        )
        for name, attrs in ATTRS.items():
            ds[name].attrs.update(attrs)
        return ds

