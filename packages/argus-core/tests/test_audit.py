"""The audit pipeline on a tiny real corpus: encoding once, caching, save/load, bad settings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from argus_ir.audit import AuditResult, AuditSettings, encode_entities, run_audit
from argus_ir.audit.entities import AuditData, Entity, EntityGraph

PARAGRAPHS = [
    ("Paris", "Paris is the capital and largest city of France."),
    ("France", "France is a country in Western Europe with Paris as its capital."),
    ("Seine", "The Seine is a river that flows through Paris in northern France."),
    ("Tokyo", "Tokyo is the capital of Japan and its most populous city."),
    ("Japan", "Japan is an island country in East Asia; its capital is Tokyo."),
    ("Mount Fuji", "Mount Fuji is the highest mountain in Japan, near Tokyo."),
    ("Violin", "The violin is a wooden string instrument played with a bow."),
    ("Cello", "The cello is a bowed string instrument larger than the violin."),
    ("Bach", "Johann Sebastian Bach wrote suites for the cello and violin."),
    ("Photosynthesis", "Photosynthesis lets plants turn light into chemical energy."),
    ("Chlorophyll", "Chlorophyll is the green pigment that drives photosynthesis."),
    ("Leaf", "A leaf is the main organ of photosynthesis in most plants."),
]
EDGES = [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5), (6, 7), (6, 8), (7, 8), (9, 10), (9, 11)]


def tiny_data() -> AuditData:
    ents = []
    for label, text in PARAGRAPHS:
        start = text.lower().index(label.lower().split()[-1])
        end = start + len(label.split()[-1])
        ents.append(Entity(id=label, label=label, text=text, start=start, end=end))
    return AuditData(ents, EntityGraph.from_edges(len(ents), EDGES), name="tiny")


SETTINGS = AuditSettings(ks=(1, 3), n_neutrals=6, n_grid=(4, 6, 8), k_grid=(1, 2, 3))


def test_audit_runs_and_related_entities_find_each_other(minilm):
    result = run_audit(tiny_data(), minilm, SETTINGS, show_progress=False)
    assert result.ids == [label for label, _ in PARAGRAPHS]  # every entity has a neighbour
    assert result.vectors.shape == (12, minilm.dim)
    # topical clusters: related entities rank each other well above chance (k/N = 1/6)
    assert result.expected[1].mean() > 0.5
    for k in SETTINGS.ks:
        assert ((result.rps[k] >= 0) & (result.rps[k] <= 1)).all()
        assert (result.expected[3] >= result.expected[1] - 1e-12).all()
    assert result.curves["fraction_vs_k"]["k"] == [1, 2, 3]


def test_save_load_round_trip(minilm, tmp_path):
    result = run_audit(tiny_data(), minilm, SETTINGS, show_progress=False)
    result.save(tmp_path / "audit")
    assert {p.name for p in (tmp_path / "audit").iterdir()} == {
        "entities.parquet",
        "entities.csv",
        "vectors.npz",
        "audit.json",
    }
    back = AuditResult.load(tmp_path / "audit")
    assert back.ids == result.ids and back.settings == result.settings
    np.testing.assert_array_equal(back.vectors, result.vectors)
    for k in SETTINGS.ks:
        np.testing.assert_array_equal(back.rps[k], result.rps[k])
        np.testing.assert_array_equal(back.expected[k], result.expected[k])
    for k in SETTINGS.ks:
        np.testing.assert_equal(
            dataclasses.astuple(back.reliability[k]), dataclasses.astuple(result.reliability[k])
        )
    assert back.encoder == result.encoder


def test_cache_makes_the_audit_resumable(minilm, tmp_path, monkeypatch):
    data = tiny_data()
    first = encode_entities(data, minilm, cache_dir=tmp_path, show_progress=False)
    calls = []
    original = type(minilm).encode

    def counting(self, texts, **kw):
        texts = list(texts)
        calls.append(len(texts))
        return original(self, texts, **kw)

    monkeypatch.setattr(type(minilm), "encode", counting)
    again = encode_entities(data, minilm, cache_dir=tmp_path, show_progress=False)
    np.testing.assert_array_equal(first, again)
    assert calls == []  # nothing re-encoded


def test_each_distinct_paragraph_is_encoded_once(minilm, monkeypatch):
    data = tiny_data()
    dup = AuditData(
        [*data.entities, Entity("Paris2", "Paris", data.entities[0].text, 0, 5)],
        EntityGraph.from_edges(13, EDGES),
        name="dup",
    )
    seen: list[str] = []
    original = type(minilm).encode

    def counting(self, texts, **kw):
        texts = list(texts)
        seen.extend(texts)
        return original(self, texts, **kw)

    monkeypatch.setattr(type(minilm), "encode", counting)
    vectors = encode_entities(dup, minilm, show_progress=False)
    assert len(seen) == len(set(seen)) == 12
    np.testing.assert_array_equal(vectors[0], vectors[12])


def test_no_partial_audit_folder_on_failure(minilm, tmp_path, monkeypatch):
    result = run_audit(tiny_data(), minilm, SETTINGS, show_progress=False)
    import pyarrow.csv

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pyarrow.csv, "write_csv", boom)
    with pytest.raises(OSError, match="disk full"):
        result.save(tmp_path / "audit")
    assert list(tmp_path.iterdir()) == []


def test_bad_settings_and_data():
    with pytest.raises(ValueError, match="k must be in"):
        AuditSettings(ks=(10,), n_neutrals=5)
    data = tiny_data()
    lonely = AuditData(list(data.entities), EntityGraph.from_edges(12, []), name="lonely")
    with pytest.raises(ValueError, match="no entity has a related entity"):
        run_audit(lonely, encoder=None, settings=SETTINGS)  # type: ignore[arg-type]
