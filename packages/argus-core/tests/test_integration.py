"""The adapter-facing core: fold_hits, the record rules and the settings card."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from argus_ir import Argus
from argus_ir.collapse import collapse, fold_hits
from argus_ir.errors import ArgusInputError
from argus_ir.remedy import View
from argus_ir.remedy.texts import view_id, view_key
from argus_ir.runners.integration import (
    Record,
    aaugment_records,
    augment_records,
    content_id,
    is_view,
    view_metadata,
)

HITS = [  # (id, metadata, score) as a retriever returns them
    ("v1", {"argus_source_id": "a", "argus_view": "expansion"}, 0.9),
    ("b", {}, 0.8),
    ("a", {}, 0.5),
    ("v2", {"argus_source_id": "a", "argus_view": "expansion"}, 0.7),
    ("c", {"argus_source_id": ""}, 0.6),
]


def _fold(hits, **kw):  # plain folding: the discount has its own tests
    kw.setdefault("view_discount", 0.0)
    return fold_hits(
        hits, id_of=lambda h: h[0], metadata_of=lambda h: h[1], score_of=lambda h: h[2], **kw
    )


def test_fold_hits_by_hand():
    folded = _fold(HITS)
    # a: max(0.9, 0.5, 0.7) = 0.9; b 0.8; c 0.6 (an empty source id means "itself")
    assert [(f.source_id, f.score) for f in folded] == [("a", 0.9), ("b", 0.8), ("c", 0.6)]
    a = folded[0]
    assert [h[0] for h in a.hits] == ["v1", "v2", "a"] and a.best[0] == "v1"
    assert a.original == HITS[2]
    assert folded[1].original == HITS[1]


def test_fold_hits_sum_matches_collapse():
    folded = _fold(HITS, how="sum", top_k=2)
    expected = collapse(
        [(h[0], h[2]) for h in HITS], {"v1": "a", "v2": "a"}, how="sum", top_k=2, view_discount=0.0
    )
    assert [(f.source_id, pytest.approx(f.score)) for f in folded] == expected
    assert folded[0].score == pytest.approx(0.9 + 0.5 + 0.7)


def test_fold_hits_without_scores_keeps_retriever_order():
    hits = [(h[0], h[1], None) for h in HITS]
    folded = _fold(hits, top_k=2)
    assert [(f.source_id, f.score) for f in folded] == [("a", None), ("b", None)]
    assert folded[0].original is not None and folded[0].best[0] == "v1"


def test_fold_hits_view_without_its_original():
    folded = _fold([HITS[0]])
    assert folded[0].source_id == "a" and folded[0].original is None


def test_fold_hits_rejects_bad_input():
    with pytest.raises(ArgusInputError, match="how"):
        _fold(HITS, how="mean")
    with pytest.raises(ArgusInputError, match="top_k"):
        _fold([(h[0], h[1], None) for h in HITS], top_k=-1)
    with pytest.raises(ArgusInputError, match="'x'"):
        _fold([("x", {}, float("nan"))])


def test_view_metadata_inherits_and_overrides():
    view = View("v", "t", {"argus_source_id": "d", "argus_view": "descriptor"})
    meta = view_metadata({"year": 3, "argus_view": "stale", "argus_rps": 0.1}, view)
    assert meta == {"year": 3, "argus_source_id": "d", "argus_view": "descriptor"}


def test_is_view_and_content_id():
    assert is_view({"argus_view": "expansion"}) and not is_view({"argus_view": "original"})
    assert not is_view({}) and not is_view(None)
    assert content_id("x") == content_id("x") != content_id("y")


class _NoModel(Argus):
    """Fails if asked to load anything: for inputs that must never reach the models."""

    def _get(self, name):  # type: ignore[override]
        raise AssertionError(f"loaded {name}")


def test_records_without_text_never_load_models():
    key = view_key("z", "expansion", "Bogart", "Humphrey Bogart", "s")
    view = {"argus_view": "expansion", "argus_source_id": "z", "argus_view_key": key}
    records = [
        Record("a", None),
        Record("b", "  "),
        Record(view_id(key), "view text", view),  # argus's own view, trusted as asked
        Record(None, ""),
    ]
    result = augment_records(_NoModel(), records, trust_lineage=True)
    assert [(e.position, e.view) for e in result.entries] == [
        (0, None),
        (1, None),
        (2, None),
        (3, None),
    ]
    assert [s[1] for s in result.skipped] == [
        "no text content",
        "empty text",
        "already an argus view",
        "empty text",
    ]
    assert result.ids[3] == content_id("")
    assert result.metadata[2] == view and result.trusted == frozenset({2})
    assert result.stats_dict()["documents"] == 0


def test_async_records_match_sync():
    argus = Argus(batch_size=2)
    records = [
        Record(f"d{i}", t)
        for i, t in enumerate(["Marie Curie kept notes.", "", "Niels Bohr argued.", "Plain words."])
    ]
    sync = augment_records(argus, records)
    result = asyncio.run(aaugment_records(argus, records))
    assert result.entries == sync.entries and result.stats == sync.stats


def test_settings_card_follows_probe_and_kb_contents(tmp_path):
    from argus_ir.probes import shipped_probes

    shipped = next(p for p in shipped_probes() if p.name == "minilm-k10")
    probe = tmp_path / "probe"
    shutil.copytree(shipped.path, probe)
    card = Argus(probe=str(probe)).settings_card()
    assert card == {**Argus().settings_card(), "probe": card["probe"]}
    assert card["probe"] == Argus().settings_card()["probe"]  # same bytes, same checksum
    weights = next(p for p in probe.iterdir() if p.name != "card.json")
    weights.write_bytes(weights.read_bytes() + b" ")
    assert Argus(probe=str(probe)).settings_card()["probe"] != card["probe"]  # retrained

    kb = tmp_path / "kb.jsonl"
    kb.write_text(json.dumps({"id": "a", "title": "A", "text": "x"}) + "\n", encoding="utf-8")
    first = Argus(kb=str(kb)).settings_card()["kb"]
    kb.write_text(json.dumps({"id": "a", "title": "A", "text": "y"}) + "\n", encoding="utf-8")
    assert Argus(kb=str(kb)).settings_card()["kb"] != first
    assert Argus(tau=0.2).settings_card()["tau"] == 0.2
    assert Argus().settings_card()["tau"] == 0.3  # the probe's own
    assert "llm" not in Argus().settings_card()
    assert (
        Argus(remedy="synthesis", llm="openai:http://x/v1").settings_card()["llm"]
        == "openai:http://x/v1"
    )


def test_settings_card_names_a_missing_probe_or_kb(tmp_path):
    with pytest.raises(ArgusInputError, match=r"card\.json"):
        Argus(probe=str(tmp_path)).settings_card()
    with pytest.raises(ArgusInputError, match="not found"):
        Argus(kb=str(tmp_path / "nope.jsonl")).settings_card()
    with pytest.raises(ArgusInputError, match=r"kb\.json"):
        Argus(kb=str(tmp_path)).settings_card()
