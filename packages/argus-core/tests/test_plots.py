"""Audit plots: each writes a PNG, survives edge cases, leaves matplotlib's global state alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from argus_ir import plots
from argus_ir.errors import ArgusInputError
from argus_ir.plots.lda import embed_2d

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    data = path.read_bytes()
    return len(data) > 1000 and data.startswith(PNG_MAGIC)


def _three_gaussians(n_per: int, dim: int, gap: float, seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((3, dim))
    centres *= gap / np.linalg.norm(centres[1] - centres[0])
    labels = np.repeat(np.arange(3), n_per)
    scales = np.linspace(1.0, 0.3, dim)  # anisotropic, like real embeddings
    return centres[labels] + rng.standard_normal((labels.size, dim)) * scales, labels


def _rps_like(n: int, seed: int = 0) -> np.ndarray:
    return np.round(np.random.default_rng(seed).uniform(size=n) * 8) / 8


# --------------------------------------------------------------------------- every plot writes a PNG


@pytest.fixture(scope="module")
def sample():
    x, labels = _three_gaussians(120, 16, gap=6.0, seed=1)
    rps = np.array([0.1, 0.5, 0.9])[labels]
    return x, rps


def _draw_all(folder, x, rps):
    yhat = np.clip(rps + np.random.default_rng(3).normal(0, 0.1, rps.size), 0, 1)
    return [
        plots.rps_histogram({10: rps, 50: np.sqrt(rps)}, folder / "hist.png"),
        plots.rps_histogram(rps, folder / "hist_one.png"),
        plots.fraction_vs_n(
            [100, 200, 400, 800], {"a": [0.9, 0.6, 0.4, 0.35]}, folder / "n.png", k=50
        ),
        plots.fraction_vs_k(
            [1, 10, 50], {"a": [0.1, 0.2, 0.4], "b": [0.2, 0.3, 0.6]}, folder / "k.png", n=800
        ),
        plots.lda_projection(x, rps, folder / "lda.png", title="LDA of RPS_10 terciles"),
        plots.calibration(rps, yhat, folder / "cal.png"),
    ]


def test_every_plot_writes_a_png(tmp_path, sample):
    paths = _draw_all(tmp_path / "nested", *sample)
    assert len({p.name for p in paths}) == len(paths)
    for p in paths:
        assert p.parent == tmp_path / "nested"
        assert _is_png(p), p
    assert sorted(f.name for f in (tmp_path / "nested").iterdir()) == sorted(p.name for p in paths)


def test_output_is_deterministic(tmp_path, sample):
    first = _draw_all(tmp_path / "a", *sample)
    second = _draw_all(tmp_path / "b", *sample)
    for p, q in zip(first, second):
        assert p.read_bytes() == q.read_bytes(), p.name


def test_no_pyplot_no_backend_change(tmp_path):
    # In a fresh interpreter: an interactive-looking backend choice must survive, pyplot stays out.
    code = textwrap.dedent(
        f"""
        import sys
        import matplotlib
        matplotlib.use("svg")
        import numpy as np
        from argus_ir import plots
        rps = np.array([0.0, 0.5, 1.0, 0.2, 0.8, 0.4])
        x = np.random.default_rng(0).standard_normal((6, 4))
        out = {str(tmp_path)!r}
        plots.rps_histogram({{5: rps}}, out + "/h.png")
        plots.fraction_vs_n([10, 20], {{"a": [0.5, 0.2]}}, out + "/n.png", k=5)
        plots.fraction_vs_k([5], {{"a": [0.5]}}, out + "/k.png", n=20)
        plots.lda_projection(x, rps, out + "/l.png")
        plots.calibration(rps, rps[::-1], out + "/c.png")
        assert "matplotlib.pyplot" not in sys.modules, "pyplot was imported"
        assert matplotlib.rcParams["backend"] == "svg", matplotlib.rcParams["backend"]
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_no_open_figures_in_this_process(tmp_path, sample):
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    before = plt.get_fignums()
    _draw_all(tmp_path, *sample)
    assert matplotlib.get_backend() == backend
    assert plt.get_fignums() == before


# --------------------------------------------------------------------------- edge cases


def test_all_rps_zero(tmp_path):
    x = np.random.default_rng(0).standard_normal((40, 8))
    zeros = np.zeros(40)
    assert _is_png(plots.rps_histogram({10: zeros}, tmp_path / "h.png"))
    assert _is_png(plots.lda_projection(x, zeros, tmp_path / "l.png"))
    assert _is_png(plots.calibration(zeros, zeros, tmp_path / "c.png"))
    assert _is_png(plots.fraction_vs_n([100, 800], {"a": [0.0, 0.0]}, tmp_path / "n.png", k=50))


def test_three_points(tmp_path):
    x = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 0.5], [2.0, 2.0, 0.0]])
    rps = np.array([0.0, 0.5, 1.0])  # one entity per band: no within-class spread at all
    assert _is_png(plots.lda_projection(x, rps, tmp_path / "l.png"))
    assert _is_png(plots.calibration(rps, np.array([0.1, 0.4, 1.2]), tmp_path / "c.png"))
    assert _is_png(plots.rps_histogram(rps, tmp_path / "h.png"))


def test_single_k_and_single_n(tmp_path):
    assert _is_png(plots.rps_histogram({50: _rps_like(30)}, tmp_path / "h.png"))
    assert _is_png(plots.fraction_vs_k([50], {"a": [0.4]}, tmp_path / "k.png", n=800))
    assert _is_png(plots.fraction_vs_n([800], {"a": [0.4]}, tmp_path / "n.png", k=50))
    assert _is_png(plots.fraction_vs_k([10, 50], {"a": [np.nan, 0.4]}, tmp_path / "gap.png", n=800))


def test_two_bands_fall_back_to_one_lda_axis(tmp_path):
    x, labels = _three_gaussians(50, 6, gap=5.0, seed=2)
    rps = np.where(labels == 0, 0.0, 1.0)
    coords, names, note = embed_2d(x, plots.rps_bands(rps), "auto")
    assert coords.shape == (150, 2)
    assert names[0] == "LD1" and "2 bands" in note
    _, names, note = embed_2d(x, plots.rps_bands(np.zeros(150)), "auto")
    assert names == ("PC1", "PC2") and "PCA" in note
    assert _is_png(plots.lda_projection(x, rps, tmp_path / "two.png"))


def test_subsample_is_capped(tmp_path):
    x = np.random.default_rng(0).standard_normal((300, 4))
    p = plots.lda_projection(x, _rps_like(300), tmp_path / "l.png", max_points=50, seed=7)
    assert _is_png(p)


def test_bands_follow_paper_edges():
    bands = plots.rps_bands(np.array([0.0, 0.329, 0.33, 1 / 3, 0.659, 0.66, 1.0]))
    assert bands.tolist() == [0, 0, 1, 1, 1, 2, 2]


@pytest.mark.parametrize(
    "call",
    [
        lambda p: plots.rps_histogram(np.array([]), p),
        lambda p: plots.rps_histogram({}, p),
        lambda p: plots.rps_histogram(np.array([0.2, 1.5]), p),
        lambda p: plots.rps_histogram(np.array([0.2, np.nan]), p),
        lambda p: plots.fraction_vs_n([100, 200], {"a": [0.5]}, p, k=10),
        lambda p: plots.fraction_vs_n([0, 200], {"a": [0.5, 0.2]}, p, k=10),
        lambda p: plots.fraction_vs_k([1, 2], {}, p, n=10),
        lambda p: plots.fraction_vs_k([1, 2], {"a": [0.5, 2.0]}, p, n=10),
        lambda p: plots.lda_projection(np.zeros((3, 2)), np.zeros(4), p),
        lambda p: plots.calibration(np.zeros(3), np.zeros(4), p),
    ],
)
def test_bad_input_is_refused_before_drawing(tmp_path, call):
    with pytest.raises(ArgusInputError):
        call(tmp_path / "x.png")
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------------------------- lda_fit


def _fisher_ratio(projected: np.ndarray, labels: np.ndarray) -> float:
    grand = projected.mean(axis=0)
    between = within = 0.0
    for c in np.unique(labels):
        part = projected[labels == c]
        between += len(part) * float(((part.mean(axis=0) - grand) ** 2).sum())
        within += float(((part - part.mean(axis=0)) ** 2).sum())
    return between / within


def _canonical_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    qa, _ = np.linalg.qr(a - a.mean(axis=0))
    qb, _ = np.linalg.qr(b - b.mean(axis=0))
    return np.linalg.svd(qa.T @ qb, compute_uv=False)


def test_lda_separates_well_separated_classes():
    x, labels = _three_gaussians(200, 20, gap=8.0, seed=0)
    w = plots.lda_fit(x, labels, n_components=2)
    assert w.shape == (20, 2)
    assert _fisher_ratio((x - x.mean(axis=0)) @ w, labels) > 10


@pytest.mark.parametrize("shrinkage", [0.0, "auto"])
def test_lda_matches_sklearn_subspace(shrinkage):
    lda_cls = pytest.importorskip("sklearn.discriminant_analysis").LinearDiscriminantAnalysis
    x, labels = _three_gaussians(150, 10, gap=3.0, seed=4)
    ours = (x - x.mean(axis=0)) @ plots.lda_fit(x, labels, 2, shrinkage=shrinkage)
    ref = lda_cls(solver="eigen", shrinkage=None if shrinkage == 0.0 else "auto", n_components=2)
    theirs = ref.fit(x, labels).transform(x)
    assert _canonical_correlations(ours, theirs).min() > 0.99


def test_lda_stays_finite_when_dim_exceeds_samples():
    x, labels = _three_gaussians(20, 100, gap=4.0, seed=5)
    w = plots.lda_fit(x, labels)
    assert np.all(np.isfinite(w))
    with pytest.raises(ArgusInputError, match="singular"):
        plots.lda_fit(x, labels, shrinkage=0.0)


def test_lda_fit_checks_its_inputs():
    x, labels = _three_gaussians(10, 4, gap=4.0, seed=6)
    with pytest.raises(ArgusInputError, match="n_components"):
        plots.lda_fit(x, labels, n_components=3)
    with pytest.raises(ArgusInputError, match="labels"):
        plots.lda_fit(x, labels[:-1])
    with pytest.raises(ArgusInputError, match="shrinkage"):
        plots.lda_fit(x, labels, shrinkage=1.5)
