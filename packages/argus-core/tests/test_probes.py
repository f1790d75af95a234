"""Probes: metrics against scipy/scikit-learn, entity splits, each family, artifacts on disk."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from argus_ir.errors import ArgusInputError, MissingExtraError, ProbeMismatchError
from argus_ir.probes import (
    FAMILIES,
    ProbeCard,
    ProbeTrainingResult,
    RidgeProbe,
    TrainedProbe,
    all_metrics,
    baselines,
    classification_metrics,
    regression_metrics,
    resolve_families,
    split_by_entity,
    sweep_configs,
    tercile_bands,
    train_probe,
)

# --------------------------------------------------------------------------- metrics


def _vectors(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.beta(0.7, 1.5, n)
    yhat = np.clip(y + rng.normal(0, 0.2, n), 0, 1)
    return y, yhat


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regression_metrics_match_scipy(seed):
    stats = pytest.importorskip("scipy.stats")
    y, yhat = _vectors(seed)
    yhat[:20] = 0.0  # ties, as clipped predictions have
    m = regression_metrics(y, yhat)
    assert m["rmse"] == pytest.approx(np.sqrt(np.mean((y - yhat) ** 2)))
    assert m["mae"] == pytest.approx(np.mean(np.abs(y - yhat)))
    assert m["pearson"] == pytest.approx(stats.pearsonr(y, yhat)[0], abs=1e-12)
    assert m["spearman"] == pytest.approx(stats.spearmanr(y, yhat)[0], abs=1e-12)


def test_regression_metrics_hand_example():
    m = regression_metrics([0.0, 0.5, 1.0], [0.1, 0.5, 0.7])
    assert m["rmse"] == pytest.approx(np.sqrt((0.01 + 0 + 0.09) / 3))
    assert m["mae"] == pytest.approx(0.4 / 3)
    assert m["spearman"] == pytest.approx(1.0)


def test_constant_vectors_give_zero_correlation_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = regression_metrics([0.1] * 7, [0.3, 0.2, 0.5, 0.1, 0.9, 0.0, 0.4])
        assert m["pearson"] == 0.0 and m["spearman"] == 0.0
        m = regression_metrics([0.3, 0.2, 0.5], [0.1, 0.1, 0.1])
        assert m["pearson"] == 0.0 and m["spearman"] == 0.0
        assert regression_metrics([0.4], [0.2])["pearson"] == 0.0
        base = baselines(np.array([0.0, 0.2, 0.5, 0.9]))
        assert base["all_zero"]["pearson"] == 0.0 and base["all_one"]["spearman"] == 0.0


def test_tercile_bands_hand_worked():
    y = [0.0, 0.2, 0.329, 0.33, 0.5, 0.659, 0.66, 0.9, 1.0]
    assert tercile_bands(y).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_classification_metrics_hand_worked():
    # truth bands: low low low mid mid high; predicted: low low mid mid high high
    y = [0.1, 0.2, 0.3, 0.4, 0.5, 0.8]
    yhat = [0.0, 0.1, 0.4, 0.5, 0.7, 0.9]
    m = classification_metrics(y, yhat)
    # low: P 2/2, R 2/3, F1 0.8; mid: P 1/2, R 1/2, F1 0.5; high: P 1/2, R 1/1, F1 2/3
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["macro_precision"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert m["macro_recall"] == pytest.approx((2 / 3 + 0.5 + 1) / 3)
    assert m["macro_f1"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert m["weighted_precision"] == pytest.approx((3 * 1 + 2 * 0.5 + 1 * 0.5) / 6)
    assert m["weighted_f1"] == pytest.approx((3 * 0.8 + 2 * 0.5 + 1 * 2 / 3) / 6)


@pytest.mark.parametrize("case", ["random", "skewed", "absent_class", "all_zero"])
def test_classification_metrics_match_sklearn(case):
    skm = pytest.importorskip("sklearn.metrics")
    y, yhat = _vectors(7)
    if case == "skewed":
        y, yhat = y**3, yhat**2
    elif case == "absent_class":  # nothing high in truth or prediction
        y, yhat = y * 0.6, yhat * 0.5
    elif case == "all_zero":
        yhat = np.zeros_like(y)
    m = classification_metrics(y, yhat)
    t, p = tercile_bands(y), tercile_bands(yhat)
    assert m["accuracy"] == pytest.approx(skm.accuracy_score(t, p))
    for avg in ("macro", "weighted"):
        kw = {"average": avg, "zero_division": 0}
        assert m[f"{avg}_f1"] == pytest.approx(skm.f1_score(t, p, **kw))
        assert m[f"{avg}_precision"] == pytest.approx(skm.precision_score(t, p, **kw))
    assert m["macro_recall"] == pytest.approx(
        skm.recall_score(t, p, average="macro", zero_division=0)
    )


def test_all_metrics_and_baselines_rows():
    y, yhat = _vectors(3)
    m = all_metrics(y, yhat)
    assert {"rmse", "pearson", "accuracy", "macro_f1", "weighted_f1", "n"} <= set(m)
    base = baselines(y)
    assert base["all_zero"]["rmse"] == pytest.approx(np.sqrt(np.mean(y**2)))
    assert base["all_one"]["mae"] == pytest.approx(np.mean(1 - y))
    assert base["all_zero"]["macro_recall"] == pytest.approx(1 / 3)  # all three bands in truth


def test_metrics_reject_bad_input():
    with pytest.raises(ArgusInputError, match="3 values"):
        regression_metrics([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ArgusInputError, match="finite"):
        classification_metrics([0.1, np.nan], [0.1, 0.2])


# --------------------------------------------------------------------------- splits


def test_split_by_entity_is_disjoint_complete_and_deterministic():
    ids = [f"Q{i % 97}" for i in range(400)]  # repeated ids: rows of an entity stay together
    s = split_by_entity(ids, seed=3)
    parts = [set(np.asarray(ids)[idx]) for idx in (s.train, s.val, s.test)]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert sorted(np.concatenate([s.train, s.val, s.test]).tolist()) == list(range(400))
    assert [len(p) for p in parts] == [67, 15, 15]  # 97 entities: 15% rounds to 15
    again = split_by_entity(list(reversed(ids)), seed=3)
    assert set(np.asarray(ids[::-1])[again.test]) == parts[2]  # row order does not matter
    assert set(np.asarray(ids)[split_by_entity(ids, seed=4).test]) != parts[2]


def test_split_by_entity_rejects_bad_input():
    with pytest.raises(ArgusInputError, match="fractions"):
        split_by_entity(["a", "b", "c"], fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ArgusInputError, match="3 distinct"):
        split_by_entity(["a", "a", "b"])


# --------------------------------------------------------------------------- sweep


def test_sweep_budgets_follow_the_grid():
    tiny = sweep_configs(FAMILIES, "tiny", seed=0)
    cpu = sweep_configs(FAMILIES, "cpu", seed=0)
    count = lambda cs, f: sum(c.family == f for c in cs)  # noqa: E731
    assert [count(tiny, f) for f in FAMILIES] == [20, 2, 2]
    assert [count(cpu, f) for f in FAMILIES] == [20, 8, 6]
    assert sweep_configs(FAMILIES, "cpu", seed=0) == cpu
    xgb = [c.params for c in cpu if c.family == "xgboost"]
    assert xgb[0]["n_estimators"] == 600 and len({json.dumps(p) for p in xgb}) == 8
    full = sweep_configs(("xgboost", "mlp"), "full")
    assert (count(full, "xgboost"), count(full, "mlp")) == (3**7, 3**5)
    with pytest.raises(ArgusInputError, match="budget"):
        sweep_configs(FAMILIES, "huge")


def test_missing_extra_is_skipped_unless_requested(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    with caplog.at_level("WARNING"):
        assert resolve_families(None) == ("ridge", "mlp")
    assert "xgboost" in caplog.text
    with pytest.raises(MissingExtraError, match=r"argus-ir\[xgboost\]"):
        resolve_families(("ridge", "xgboost"))
    with pytest.raises(ArgusInputError, match="unknown probe families"):
        resolve_families(("lasso",))


def test_ridge_matches_sklearn():
    linear = pytest.importorskip("sklearn.linear_model")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    rng = np.random.default_rng(0)
    for n, d in ((120, 10), (15, 40)):  # primal and dual solution paths
        X = rng.normal(size=(n, d)) * rng.uniform(0.1, 5, d) + 1.0
        y = np.clip(0.5 + 0.05 * X[:, 0] + rng.normal(0, 0.05, n), 0, 1)
        for alpha in (1e-3, 10.0):
            ours = RidgeProbe(alpha=alpha).fit(X, y, X, y)
            ref = linear.Ridge(alpha=alpha).fit(X, y)
            np.testing.assert_allclose(ours.coef, ref.coef_, rtol=1e-6, atol=1e-9)
            assert ours.intercept == pytest.approx(ref.intercept_, abs=1e-8)
            ours_std = RidgeProbe(alpha=alpha, standardize=True).fit(X, y, X, y)
            Z = preprocessing.StandardScaler().fit_transform(X)
            ref_std = linear.Ridge(alpha=alpha).fit(Z, y)
            np.testing.assert_allclose(
                ours_std._predict_raw(X), ref_std.predict(Z), rtol=1e-6, atol=1e-9
            )


# --------------------------------------------------------------------------- training


def _synthetic(n: int = 1500, d: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=d)
    w *= 2.5 / np.linalg.norm(w)
    y = np.clip(1 / (1 + np.exp(-(X @ w))) + rng.normal(0, 0.05, n), 0, 1)
    return X, y, [f"Q{i}" for i in range(n)]


CARD = {"retriever_id": "test/retriever", "pooling": "span-mean", "k": 10, "n_neutrals": 800}


@pytest.fixture(scope="module")
def trained():
    pytest.importorskip("torch")
    pytest.importorskip("xgboost")
    X, y, ids = _synthetic()
    result = train_probe(
        X, y, ids, families=FAMILIES, budget="tiny", seed=0, card_fields=CARD, show_progress=False
    )
    return X, y, ids, result


def test_every_family_learns_the_signal(trained):
    X, y, _, result = trained
    assert set(result.family_probes) == set(FAMILIES)
    for family, probe in result.family_probes.items():
        r = np.corrcoef(probe.predict(X[result.split.test]), y[result.split.test])[0, 1]
        assert r > 0.8, (family, r)
        assert probe.card.metrics["test"]["pearson"] == pytest.approx(r, abs=1e-6)
    assert len(result.sweep) == 24


def test_selection_and_card_contents(trained):
    _, y, _, result = trained
    card = result.card
    per_family = card.metrics["per_family"]
    assert card.family == min(per_family, key=lambda f: per_family[f]["val_rmse"])
    assert card.metrics["validation"]["rmse"] == min(r.val_rmse for r in result.sweep)
    assert card.metrics["test"]["rmse"] == pytest.approx(
        np.sqrt(np.mean((result.test_pred - result.test_y) ** 2))
    )
    assert set(card.metrics["baselines"]) == {"all_zero", "all_one"}
    assert (card.retriever_id, card.dim, card.k, card.pooling) == (
        "test/retriever",
        8,
        10,
        "span-mean",
    )
    assert sum(card.split_sizes.values()) == len(y)
    np.testing.assert_array_equal(result.test_y, y[result.split.test])
    names = [name for name, _ in result.table_rows()]
    assert names[:2] == ["All One", "All Zero"] and sum("(selected)" in n for n in names) == 1
    json.dumps(card.to_dict())  # JSON-serialisable


@pytest.mark.parametrize("family", FAMILIES)
def test_save_load_round_trip(trained, tmp_path, family):
    X, _, _, result = trained
    probe = result.family_probes[family]
    probe.save(tmp_path / "probe")
    loaded = TrainedProbe.load(
        tmp_path / "probe",
        expect_retriever="test/retriever",
        expect_dim=8,
        expect_pooling="span-mean",
    )
    assert loaded.card == probe.card
    np.testing.assert_array_equal(loaded.predict(X), probe.predict(X))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe"]  # no temp folders left
    probe.save(tmp_path / "probe")  # overwriting a probe folder is allowed


def test_mlp_loads_and_predicts_without_torch(trained, tmp_path, monkeypatch):
    X, _, _, result = trained
    probe = result.family_probes["mlp"]
    probe.save(tmp_path / "mlp")
    expected = probe.predict(X)
    monkeypatch.setitem(sys.modules, "torch", None)  # any `import torch` now fails
    loaded = TrainedProbe.load(tmp_path / "mlp")
    np.testing.assert_array_equal(loaded.predict(X), expected)


def test_mismatched_probe_names_both_sides(trained, tmp_path):
    X, _, _, result = trained
    result.probe.save(tmp_path / "p")
    with pytest.raises(ProbeMismatchError) as err:
        TrainedProbe.load(tmp_path / "p", expect_retriever="other/model", expect_dim=8)
    assert "test/retriever" in str(err.value) and "other/model" in str(err.value)
    with pytest.raises(ProbeMismatchError) as err:
        TrainedProbe.load(tmp_path / "p", expect_dim=768)
    assert "dim 8" in str(err.value) and "dim 768" in str(err.value)
    with pytest.raises(ValueError, match=r"dim 8.*dim 5"):
        result.probe.predict(X[:, :5])
    assert result.probe.predict(X[0]).shape == (1,)


def test_failed_save_leaves_nothing(trained, tmp_path, monkeypatch):
    _, _, _, result = trained
    probe = result.family_probes["ridge"]

    def broken_save(directory):
        with open(f"{directory}/ridge.npz", "wb") as fh:
            fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(probe.model, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        probe.save(tmp_path / "probe")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    probe.save(tmp_path / "probe")
    before = (tmp_path / "probe" / "card.json").read_text()
    monkeypatch.setattr(probe.model, "save", broken_save)
    with pytest.raises(OSError):
        probe.save(tmp_path / "probe")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe"]
    assert (tmp_path / "probe" / "card.json").read_text() == before


def test_load_rejects_bad_folders(trained, tmp_path):
    _, _, _, result = trained
    with pytest.raises(ArgusInputError, match=r"card\.json"):
        TrainedProbe.load(tmp_path)
    folder = result.probe.save(tmp_path / "p")
    data = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**data, "format_version": 99}))
    with pytest.raises(ArgusInputError, match="format_version"):
        TrainedProbe.load(folder)
    (folder / "card.json").write_text(json.dumps(data))
    for name in result.probe.model.files:
        (folder / name).unlink()
    with pytest.raises(ArgusInputError, match="model file"):
        TrainedProbe.load(folder)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ArgusInputError, match="not a probe folder"):
        result.probe.save(tmp_path / "other")


def test_from_saved_rebuilds_the_test_split(trained, tmp_path):
    X, y, ids, result = trained
    result.probe.save(tmp_path / "p")
    audit = SimpleNamespace(
        ids=ids,
        vectors=X,
        data_fingerprint=result.card.data_fingerprint,
        encoder=SimpleNamespace(retriever_id="test/retriever", dim=8, pooling="span-mean"),
        label=lambda k, kind="empirical": y,
    )
    again = ProbeTrainingResult.from_saved(tmp_path / "p", audit)
    np.testing.assert_array_equal(again.test_y, result.test_y)
    np.testing.assert_array_equal(again.test_pred, result.test_pred)
    assert again.table_rows() == result.table_rows()


def test_train_probe_checks_its_inputs():
    X, y, ids = _synthetic(n=60)
    with pytest.raises(ArgusInputError, match="card_fields"):
        train_probe(X, y, ids, families=("ridge",), card_fields={"retriever": "x"})
    with pytest.raises(ArgusInputError, match="dim 9"):
        train_probe(X, y, ids, families=("ridge",), card_fields={"dim": 9})
    with pytest.raises(ArgusInputError, match=r"\[0, 1\]"):
        train_probe(X, y * 2, ids, families=("ridge",))
    result = train_probe(X, y, ids, families=("ridge",), budget="tiny", show_progress=False)
    assert result.card.family == "ridge" and result.card.retriever_id == "unknown"


def test_card_round_trips_through_json():
    card = ProbeCard(
        retriever_id="m", pooling="span-mean", dim=4, k=5, n_neutrals=100, family="ridge", params={}
    )
    assert ProbeCard.from_dict(json.loads(json.dumps(card.to_dict()))) == card
    with pytest.raises(ArgusInputError, match="unknown keys"):
        ProbeCard.from_dict({**card.to_dict(), "extra": 1})


def test_importing_probes_loads_no_backend():
    code = (
        "import sys, argus_ir.probes; "
        "print([m for m in ('torch', 'xgboost', 'sklearn') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- shipped probes --------------------------------------------------------------------------------


def test_shipped_probes_load_and_beat_the_baselines_on_their_test_split():
    from argus_ir.probes import load_shipped_probe, shipped_probes

    found = {(p.retriever_id.split("/")[-1], p.k) for p in shipped_probes()}
    assert found == {(m, k) for m in ("all-MiniLM-L6-v2", "all-mpnet-base-v2") for k in (10, 50)}
    for alias, dim in (("minilm", 384), ("mpnet", 768)):
        for k in (10, 50):
            probe = load_shipped_probe(alias, k)
            card = probe.card
            assert card.dim == dim and card.k == k and card.n_neutrals == 800
            test, base = card.metrics["test"], card.metrics["baselines"]
            assert test["rmse"] < min(b["rmse"] for b in base.values())
            assert test["pearson"] > 0.3
            pred = probe.predict(np.random.default_rng(0).normal(size=(5, dim)).astype(np.float32))
            assert pred.shape == (5,) and ((pred >= 0) & (pred <= 1)).all()


def test_shipped_probe_refuses_another_retriever():
    from argus_ir.probes import load_shipped_probe

    probe = load_shipped_probe("mpnet", 10)
    with pytest.raises(ProbeMismatchError, match=r"all-mpnet-base-v2"):
        probe.check_compatible("sentence-transformers/all-MiniLM-L6-v2", 384, "span-mean")
    with pytest.raises(ArgusInputError, match=r"no shipped probe .* k=7"):
        load_shipped_probe("minilm", 7)


def _copy_shipped_mlp(tmp_path):
    import shutil

    from argus_ir.probes import shipped_probes

    source = next(p.path for p in shipped_probes() if p.family == "mlp")
    folder = tmp_path / "probe"
    shutil.copytree(source, folder)
    return folder


def _rewrite_mlp(folder, change):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(folder / "mlp.safetensors"))
    change(tensors)
    save_file(tensors, str(folder / "mlp.safetensors"))


def test_a_probe_with_nan_weights_is_refused_naming_the_file_and_tensor(tmp_path):
    from argus_ir.probes import TrainedProbe

    folder = _copy_shipped_mlp(tmp_path)
    TrainedProbe.load(folder)  # intact: loads

    def poison(t):
        t["layers.0.weight"][0, 0] = np.nan

    _rewrite_mlp(folder, poison)
    with pytest.raises(
        ArgusInputError, match=r"mlp\.safetensors: layers\.0\.weight holds non-finite"
    ):
        TrainedProbe.load(folder)


def test_a_probe_weight_of_the_wrong_shape_is_refused(tmp_path):
    from argus_ir.probes import TrainedProbe

    folder = _copy_shipped_mlp(tmp_path)

    def cut(t):
        t["layers.0.bias"] = t["layers.0.bias"][:-1].copy()

    _rewrite_mlp(folder, cut)
    with pytest.raises(ArgusInputError, match=r"layers\.0\.bias has shape \(\d+,\), expected"):
        TrainedProbe.load(folder)


def test_a_truncated_probe_file_is_refused_naming_it(tmp_path):
    from argus_ir.probes import TrainedProbe

    folder = _copy_shipped_mlp(tmp_path)
    data = (folder / "mlp.safetensors").read_bytes()
    (folder / "mlp.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ArgusInputError, match=r"mlp\.safetensors: cannot read the mlp probe"):
        TrainedProbe.load(folder)


def test_a_probe_that_predicts_nan_stops_the_diagnosis_instead_of_flagging_nothing():
    from argus_ir.diagnose import Diagnoser
    from argus_ir.text.mentions import SpacyMentions

    pytest.importorskip("spacy")
    from argus_ir.encoder import load_encoder
    from argus_ir.probes import load_shipped_probe

    probe = load_shipped_probe("minilm", 10)

    class Broken:
        card = probe.card

        def predict(self, X):
            return np.full(len(X), np.nan)

    encoder = load_encoder("minilm")
    diagnoser = Diagnoser(encoder, probe, SpacyMentions())
    diagnoser.probe = Broken()  # what a damaged booster does at predict time
    with pytest.raises(ArgusInputError, match=r"document 'd1': the probe .* non-finite RPS"):
        diagnoser.diagnose(["Niels Bohr visited Lucknow."], ["d1"])


def test_a_truncated_xgboost_probe_file_is_refused_naming_it(tmp_path):
    import shutil

    from argus_ir.probes import TrainedProbe, shipped_probes

    pytest.importorskip("xgboost")
    source = next(p.path for p in shipped_probes() if p.family == "xgboost")
    folder = tmp_path / "probe"
    shutil.copytree(source, folder)
    model = next(f for f in folder.iterdir() if f.name != "card.json")
    data = model.read_bytes()
    model.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArgusInputError, match=rf"{model.name}: cannot read the xgboost probe"):
        TrainedProbe.load(folder)


# --- the xgboost probe read without xgboost ------------------------------------------------------


def _shipped_xgboost_folder():
    from argus_ir.probes import shipped_probes

    return next(p.path for p in shipped_probes() if p.family == "xgboost")


def test_the_numpy_forest_predicts_what_xgboost_does():
    """Bit for bit, on vectors of several scales with missing values among them: the forest
    compares in float32 and adds the trees in XGBoost's order."""
    xgb = pytest.importorskip("xgboost")
    from argus_ir.probes.xgb import Forest

    path = _shipped_xgboost_folder() / "xgboost.json"
    forest = Forest(json.loads(path.read_text()))
    booster = xgb.Booster()
    booster.load_model(str(path))
    rng = np.random.default_rng(7)
    for scale in (0.05, 0.3, 1.0, 4.0):
        X = (rng.normal(size=(5000, forest.n_features)) * scale).astype(np.float32)
        X[::37, rng.integers(forest.n_features)] = np.nan
        want = booster.predict(xgb.DMatrix(X))
        got = forest.predict(X)
        assert got.dtype == want.dtype == np.float32
        assert np.array_equal(got, want)
    probe = TrainedProbe.load(_shipped_xgboost_folder())
    X = rng.normal(size=(300, forest.n_features)).astype(np.float32) * 0.3
    assert probe.model.forest is not None and probe.model.booster is None
    want = np.clip(booster.predict(xgb.DMatrix(X)).astype(np.float64), 0, 1)
    assert np.array_equal(probe.predict(X), want)


def test_a_trained_xgboost_probe_reads_back_the_same(trained, tmp_path):
    X, _, _, result = trained
    probe = result.family_probes["xgboost"]
    probe.save(tmp_path / "p")
    back = TrainedProbe.load(tmp_path / "p")
    assert back.model.forest is not None  # read without xgboost ...
    assert np.array_equal(back.predict(X), probe.predict(X))  # ... to the same numbers
    back.save(tmp_path / "again")  # and written back as read
    assert (tmp_path / "again" / "xgboost.json").read_bytes() == (
        tmp_path / "p" / "xgboost.json"
    ).read_bytes()


def test_loading_and_using_the_shipped_xgboost_probe_imports_no_xgboost():
    code = (
        "import sys, numpy as np; from argus_ir.probes import TrainedProbe; "
        f"p = TrainedProbe.load({str(_shipped_xgboost_folder())!r}); "
        "p.predict(np.zeros((3, p.card.dim), dtype=np.float32)); "
        "print([m for m in ('xgboost', 'sklearn', 'pandas') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_model_the_forest_does_not_take_is_read_by_xgboost(tmp_path):
    import shutil

    xgb = pytest.importorskip("xgboost")
    folder = tmp_path / "probe"
    shutil.copytree(_shipped_xgboost_folder(), folder)
    model = json.loads((folder / "xgboost.json").read_text())
    model["learner"]["objective"]["name"] = "reg:absoluteerror"  # same trees, another objective
    (folder / "xgboost.json").write_text(json.dumps(model))
    probe = TrainedProbe.load(folder)
    assert probe.model.forest is None and isinstance(probe.model.booster, xgb.Booster)
    X = np.random.default_rng(3).normal(size=(50, probe.card.dim)).astype(np.float32)
    assert probe.predict(X).shape == (50,)
