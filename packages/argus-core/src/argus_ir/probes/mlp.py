"""Multi-layer perceptron probe (App. C.1, neural family).

Trained with torch (Adam on MSE, ReLU hidden layers with dropout, early stopping on validation RMSE),
then kept as plain numpy arrays: prediction is a numpy forward pass, and the weights are saved as
``mlp.safetensors``, so loading and using an MLP probe needs neither torch nor pickle. Inputs are
standardised with the train mean and std (stored with the weights), which lets one learning-rate
grid suit embedding spaces of any scale. Training is seeded and deterministic on CPU, and leaves
torch's global random state as it was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError
from argus_ir.probes.base import ProbeModel, as_matrix, check_labels, check_weight

__all__ = ["MLPProbe"]

_FILE = "mlp.safetensors"
_OUTPUTS = ("sigmoid", "clip")


class MLPProbe(ProbeModel):
    """Feed-forward network predicting RPS.

    Args:
        hidden: Width of every hidden layer.
        depth: Number of hidden layers (``>= 1``).
        dropout: Dropout after each hidden layer while training.
        lr: Adam learning rate.
        batch_size: Mini-batch size.
        max_epochs: Most passes over the train split.
        patience: Stop after this many epochs without a better validation RMSE; the best epoch's
            weights are kept.
        output: ``"sigmoid"`` squashes the last layer into (0, 1); ``"clip"`` leaves it linear and
            clips at prediction.
        seed: Seed of initialisation, shuffling and dropout.

    Example:
        >>> import numpy as np
        >>> from argus_ir.probes import MLPProbe
        >>> X = np.random.default_rng(0).normal(size=(200, 4)).astype("float32")
        >>> y = 1 / (1 + np.exp(-2 * X[:, 0]))
        >>> probe = MLPProbe(hidden=16, max_epochs=5).fit(X[:150], y[:150], X[150:], y[150:])
        >>> probe.predict(X[150:]).shape
        (50,)
    """

    family: ClassVar[str] = "mlp"
    defaults: ClassVar[Mapping[str, Any]] = {
        "hidden": 512,
        "depth": 2,
        "dropout": 0.1,
        "lr": 1e-3,
        "batch_size": 256,
        "max_epochs": 200,
        "patience": 10,
        "output": "sigmoid",
        "seed": 0,
    }
    files: ClassVar[tuple[str, ...]] = (_FILE,)
    requires: ClassVar[str | None] = "torch"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self._params
        if p["output"] not in _OUTPUTS:
            raise ArgusInputError(f"mlp output must be one of {_OUTPUTS}, got {p['output']!r}")
        if int(p["depth"]) < 1 or int(p["hidden"]) < 1:
            raise ArgusInputError(
                f"mlp depth and hidden must be >= 1, got {p['depth']}, {p['hidden']}"
            )
        if not 0.0 <= float(p["dropout"]) < 1.0:
            raise ArgusInputError(f"mlp dropout must be in [0, 1), got {p['dropout']}")
        self.weights: list[tuple[np.ndarray, np.ndarray]] = []
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        if not self.weights:
            raise RuntimeError("the mlp probe is not fitted")
        return int(self.weights[0][0].shape[1])

    def fit(self, Xtr: np.ndarray, ytr: np.ndarray, Xval: np.ndarray, yval: np.ndarray) -> MLPProbe:
        """Train with Adam on MSE, early-stopping on validation RMSE with the configured patience."""
        torch = require("torch")
        Xtr = as_matrix(Xtr, "Xtr")
        Xval = as_matrix(Xval, "Xval")
        ytr = check_labels(ytr, Xtr.shape[0], "ytr")
        yval = check_labels(yval, Xval.shape[0], "yval")
        p = self._params
        mean = Xtr.mean(axis=0, dtype=np.float64)
        std = Xtr.std(axis=0, dtype=np.float64)
        self.mean = mean.astype(np.float32)
        self.scale = np.where(std > 1e-12, std, 1.0).astype(np.float32)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(p["seed"]))
            net = _build(
                torch, Xtr.shape[1], int(p["hidden"]), int(p["depth"]), float(p["dropout"])
            )
            opt = torch.optim.Adam(net.parameters(), lr=float(p["lr"]))
            xt = torch.from_numpy(self._standardize(Xtr))
            yt = torch.from_numpy(ytr.astype(np.float32))
            xv = torch.from_numpy(self._standardize(Xval))
            yv = torch.from_numpy(yval.astype(np.float32))
            sigmoid = p["output"] == "sigmoid"
            shuffle = torch.Generator().manual_seed(int(p["seed"]))
            batch = int(p["batch_size"])
            best_rmse, best_epoch, best_state, stale = math.inf, -1, None, 0
            epoch = -1
            for epoch in range(int(p["max_epochs"])):
                net.train()
                order = torch.randperm(xt.shape[0], generator=shuffle)
                for start in range(0, xt.shape[0], batch):
                    idx = order[start : start + batch]
                    out = net(xt[idx]).squeeze(-1)
                    if sigmoid:
                        out = torch.sigmoid(out)
                    loss = torch.mean((out - yt[idx]) ** 2)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                net.eval()
                with torch.no_grad():
                    out = net(xv).squeeze(-1)
                    out = torch.sigmoid(out) if sigmoid else out.clamp(0.0, 1.0)
                    rmse = float(torch.sqrt(torch.mean((out - yv) ** 2)))
                if rmse < best_rmse:
                    best_rmse, best_epoch, stale = rmse, epoch, 0
                    best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                else:
                    stale += 1
                    if stale >= int(p["patience"]):
                        break
            if best_state is not None:
                net.load_state_dict(best_state)
        linears = [m for m in net if isinstance(m, torch.nn.Linear)]
        self.weights = [
            (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()) for m in linears
        ]
        self.fit_info = {"best_epoch": best_epoch, "epochs_run": epoch + 1}
        return self

    def _standardize(self, X: np.ndarray) -> np.ndarray:
        assert self.mean is not None and self.scale is not None
        return ((X - self.mean) / self.scale).astype(np.float32)

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        h = self._standardize(X)
        for w, b in self.weights[:-1]:
            h = np.maximum(h @ w.T + b, 0.0)
        w, b = self.weights[-1]
        out = (h @ w.T + b)[:, 0].astype(np.float64)
        if self._params["output"] != "sigmoid":
            return out
        from scipy.special import expit  # here, not at import: scipy.special takes 0.2 s

        return np.asarray(expit(out))

    def save(self, directory: str | Path) -> list[str]:
        """Write ``mlp.safetensors``: ``layers.{i}.weight``/``.bias``, ``input.mean``/``.scale``."""
        from safetensors.numpy import save_file

        if not self.weights or self.mean is None or self.scale is None:
            raise RuntimeError("cannot save an unfitted mlp probe")
        tensors = {"input.mean": self.mean, "input.scale": self.scale}
        for i, (w, b) in enumerate(self.weights):
            tensors[f"layers.{i}.weight"] = np.ascontiguousarray(w)
            tensors[f"layers.{i}.bias"] = np.ascontiguousarray(b)
        save_file(
            tensors, str(Path(directory) / _FILE), metadata={"n_layers": str(len(self.weights))}
        )
        return [_FILE]

    @classmethod
    def load(cls, directory: str | Path, params: Mapping[str, Any]) -> MLPProbe:
        """Read ``mlp.safetensors`` into numpy arrays (torch is not imported)."""
        from safetensors.numpy import load_file

        model = cls(**params)
        tensors = load_file(str(Path(directory) / _FILE))
        n_layers = sum(1 for name in tensors if name.endswith(".weight"))
        if n_layers != int(model._params["depth"]) + 1:
            raise ArgusInputError(
                f"{directory}/{_FILE} holds {n_layers} layers but the card says depth "
                f"{model._params['depth']} (expected {int(model._params['depth']) + 1} layers)"
            )
        where = f"{directory}/{_FILE}"
        try:
            model.weights = [
                (tensors[f"layers.{i}.weight"], tensors[f"layers.{i}.bias"])
                for i in range(n_layers)
            ]
            model.mean, model.scale = tensors["input.mean"], tensors["input.scale"]
        except KeyError as exc:
            raise ArgusInputError(f"{where} lacks the tensor {exc}") from None
        width = model.weights[0][0].shape[1] if model.weights[0][0].ndim == 2 else -1
        for name, array, shape in [
            ("input.mean", model.mean, (width,)),
            ("input.scale", model.scale, (width,)),
        ]:
            check_weight(where, name, array, shape)
        for i, (weight, bias) in enumerate(model.weights):
            rows = weight.shape[0] if weight.ndim == 2 else -1
            check_weight(where, f"layers.{i}.weight", weight, (rows, width))
            check_weight(where, f"layers.{i}.bias", bias, (rows,))
            width = rows
        if width != 1:
            raise ArgusInputError(f"{where}: the last layer has {width} outputs, not 1")
        return model


def _build(torch: Any, dim: int, hidden: int, depth: int, dropout: float) -> Any:
    layers: list[Any] = []
    width = dim
    for _ in range(depth):
        layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU(), torch.nn.Dropout(dropout)]
        width = hidden
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers)
