"""The adapter contract: what every framework package promises, as pytest tests.

A framework's test module subclasses :class:`AdapterContract` and implements its hooks (build the
adapter, make and read a framework document, run the ingest step, collapse scored hits). The tests
run real parts: MiniLM, its shipped probe, spaCy, and a small KB written here.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from argus_ir.collapse import is_view_entry
from argus_ir.kb import Passage, ReferenceKB
from argus_ir.kb.reference import CARD_FILE
from argus_ir.lineage import ARGUS_KEYS, SOURCE_KEY, VIEW_KEY
from argus_ir.runners.integration import TRUST_LINEAGE, Record, original_lineage

__all__ = ["AdapterContract", "contract_kb"]

# Short passages written for these tests (not copied from any source).
_PASSAGES = (
    Passage(
        "Humphrey Bogart",
        "Humphrey Bogart",
        "Humphrey Bogart was an American film actor, remembered for Casablanca and The Maltese "
        "Falcon.",
        "American actor (1899-1957)",
    ),
    Passage(
        "Casablanca (film)",
        "Casablanca (film)",
        "Casablanca is a 1942 wartime romance film in which Humphrey Bogart plays a nightclub "
        "owner.",
    ),
    Passage(
        "Marie Curie",
        "Marie Curie",
        "Marie Curie was a physicist and chemist who discovered polonium and radium.",
        "Polish-French physicist and chemist",
    ),
    Passage("Lucknow", "Lucknow", "Lucknow is the capital of the Indian state of Uttar Pradesh."),
)

BOGART = "Humphrey Bogart once filmed a scene in Lucknow, and the crew still talks about the heat."
CURIE = "Marie Curie kept her notebooks in a lead-lined box, and they are still radioactive today."
PLAIN = "The restored print premiered at a small festival; critics praised the new score."
# What a user's documents carry: numbers, lists, nested maps, dates, None.
RICH_META: dict[str, Any] = {
    "year": 1942,
    "score": 0.5,
    "tags": ["film", "archive"],
    "nested": {"shelf": 3, "box": "B"},
    "added": dt.date(2024, 5, 1),
    "reviewed": None,
}
_MAX_LINEAGE_BYTES = 400


def contract_kb(folder: Path) -> Path:
    """Write the contract's small KB into ``folder`` (if not there yet) and return it."""
    if not (folder / CARD_FILE).is_file():
        ReferenceKB.from_passages(_PASSAGES).save(folder)
    return folder


class AdapterContract:
    """Tests every adapter must pass. Subclass it (name the subclass ``Test...``) and implement:

    - :meth:`make_adapter` (settings are :class:`~argus_ir.pipeline.Argus` fields),
    - :meth:`make_document` and :meth:`read_document`,
    - :meth:`run` (the ingest step; returns the output documents and the stats dict),
    - :meth:`use_argus` (swap in a prepared facade; a test seam for failure paths),
    - :meth:`collapse` (the query-time collapse over scored framework documents),
    - :meth:`settings_defaults` (the ingest step's settings and their defaults).

    Set ``supports_none_text = False`` when the framework's documents cannot lack text. The
    settings must be :func:`~argus_ir.pipeline.argus_settings` with the core's defaults; declare
    what a framework's own conventions change: ``renamed_settings`` (core name -> the adapter's),
    ``own_defaults`` (adapter name -> its default) and ``own_settings`` (names the core lacks).
    """

    supports_none_text: ClassVar[bool] = True
    renamed_settings: ClassVar[dict[str, str]] = {}
    own_defaults: ClassVar[dict[str, Any]] = {}
    own_settings: ClassVar[frozenset[str]] = frozenset()

    # -- hooks -------------------------------------------------------------------------------

    def make_adapter(self, **settings: Any) -> Any:
        raise NotImplementedError

    def make_document(self, doc_id: str, text: str | None, metadata: dict[str, Any]) -> Any:
        raise NotImplementedError

    def read_document(self, doc: Any) -> Record:
        raise NotImplementedError

    def run(self, adapter: Any, documents: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        raise NotImplementedError

    def use_argus(self, adapter: Any, argus: Any) -> None:
        raise NotImplementedError

    def collapse(
        self, adapter: Any, hits: list[tuple[Any, float]], top_k: int
    ) -> list[tuple[str, float | None]]:
        """Return ``(document id, score)`` of the collapsed results, best first."""
        raise NotImplementedError

    def settings_defaults(self) -> dict[str, Any]:
        """The ingest step's settings (its fields or keyword arguments) and their defaults."""
        raise NotImplementedError

    # -- fixtures ----------------------------------------------------------------------------

    # Class-scoped, so models load once per adapter class; they call the hooks on a fresh instance.

    @pytest.fixture(scope="class")
    @classmethod
    def kb_path(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return contract_kb(tmp_path_factory.mktemp("argus-contract") / "kb")

    @pytest.fixture(scope="class")
    @classmethod
    def adapter(cls, kb_path: Path) -> Any:
        # the paper's remedy, named: the checks below count its views (one per passage)
        return cls().make_adapter(kb=str(kb_path), remedy="expansion")

    @pytest.fixture(scope="class")
    @classmethod
    def corpus(cls) -> list[Any]:
        hooks = cls()
        return [
            hooks.make_document("bogart", BOGART, dict(RICH_META)),
            hooks.make_document("plain", PLAIN, {"year": 2001}),
            hooks.make_document("curie", CURIE, {}),
        ]

    @pytest.fixture(scope="class")
    @classmethod
    def output(cls, adapter: Any, corpus: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        return cls().run(adapter, corpus)

    # -- helpers -----------------------------------------------------------------------------

    def _records(self, docs: list[Any]) -> list[Record]:
        return [self.read_document(d) for d in docs]

    @staticmethod
    def _views(records: list[Record]) -> list[Record]:
        return [r for r in records if is_view_entry(r.metadata)]

    @staticmethod
    def _originals(records: list[Record]) -> list[Record]:
        return [r for r in records if not is_view_entry(r.metadata)]

    @staticmethod
    def _as_given(record: Record) -> Record:
        """An output original without the lineage the adapter added (checked to be its own)."""
        lineage = original_lineage(str(record.id))
        assert {k: record.metadata.get(k) for k in lineage} == lineage, record
        meta = {k: v for k, v in record.metadata.items() if k not in lineage}
        return Record(record.id, record.text, meta)

    # -- the contract ------------------------------------------------------------------------

    def test_settings_and_defaults_are_the_cores(self) -> None:
        from argus_ir.settings import argus_settings

        core = {self.renamed_settings.get(n, n): d for n, d in argus_settings().items()}
        mine = self.settings_defaults()
        # every ingest step has trust_lineage, with the core's default (docs/adapters.md)
        assert mine.pop("trust_lineage", None) is TRUST_LINEAGE is False
        assert set(mine) - self.own_settings == set(core), (
            "settings the core has and the adapter lacks: "
            f"{sorted(set(core) - set(mine))}; the adapter's alone: "
            f"{sorted(set(mine) - set(core) - self.own_settings)}"
        )
        differ = {
            name: (mine[name], self.own_defaults.get(name, default))
            for name, default in core.items()
            if mine[name] != self.own_defaults.get(name, default)
        }
        assert not differ, f"defaults unlike the core's (adapter's, expected): {differ}"

    def test_originals_pass_through_first_and_unchanged(self, corpus, output):
        """Unchanged but for their lineage (their own id as source), so a store that re-keys or
        hides ids still folds them with their views."""
        records = self._records(output[0])
        originals = [self._as_given(r) for r in self._originals(records)]
        assert [(r.id, r.text, dict(r.metadata)) for r in originals] == [
            (r.id, r.text, dict(r.metadata)) for r in self._records(corpus)
        ]
        current = None
        for record in records:  # each view follows its own original
            if not is_view_entry(record.metadata):
                current = record.id
            else:
                assert record.metadata["argus_source_id"] == current

    def test_inputs_are_not_mutated(self, adapter, corpus):
        before = copy.deepcopy(self._records(corpus))
        self.run(adapter, corpus)
        assert self._records(corpus) == before

    def test_flagged_document_gets_views_with_lineage(self, output):
        views = self._views(self._records(output[0]))
        by_source: dict[str, list[Record]] = {}
        for v in views:
            by_source.setdefault(v.metadata["argus_source_id"], []).append(v)
        assert set(by_source) == {"bogart", "curie"}  # "plain" has no entity
        for view in by_source["bogart"]:
            meta = view.metadata
            assert meta["argus_view"] == "expansion"
            assert meta["argus_entity"] == "Humphrey Bogart"
            assert meta["argus_kb_id"] in {"Humphrey Bogart", "Casablanca (film)"}
            assert isinstance(meta["argus_rps"], float) and meta["argus_rps"] < 0.3
            assert view.text is not None and view.text.startswith(BOGART)
            assert view.id not in {"bogart", "plain", "curie"}
        assert output[1]["views"] == len(views)
        assert output[1]["documents"] == 3

    def test_views_inherit_the_originals_metadata(self, output):
        for view in self._views(self._records(output[0])):
            if view.metadata["argus_source_id"] == "bogart":
                for key, value in RICH_META.items():
                    assert view.metadata[key] == value, key

    def test_metadata_stays_small(self, output):
        passage_texts = [p.text for p in _PASSAGES]
        for view in self._views(self._records(output[0])):
            lineage = {k: v for k, v in view.metadata.items() if k in ARGUS_KEYS}
            assert len(json.dumps(lineage)) <= _MAX_LINEAGE_BYTES, lineage
            assert len(repr(lineage["argus_rps"])) <= 10
            for value in view.metadata.values():
                assert not any(isinstance(value, str) and t in value for t in passage_texts)

    def test_ids_are_kept_and_stable(self, adapter, corpus, output):
        again = self._records(self.run(adapter, corpus)[0])
        first = self._records(output[0])
        assert [r.id for r in again] == [r.id for r in first]
        ids = [r.id for r in first]
        assert len(set(ids)) == len(ids)
        assert [r.id for r in self._originals(first)] == [
            "bogart",
            "plain",
            "curie",
        ]

    def test_empty_and_missing_text_pass_through(self, adapter):
        docs = [self.make_document("blank", "   ", {}), self.make_document("empty", "", {})]
        if self.supports_none_text:
            docs.append(self.make_document("none", None, {"kind": "image"}))
        out, stats = self.run(adapter, docs)
        assert [self._as_given(r) for r in self._records(out)] == self._records(docs)
        assert sorted(doc_id for doc_id, _ in stats["skipped"]) == sorted(
            str(r.id) for r in self._records(docs)
        )
        assert stats["views"] == 0

    def test_repeated_id_passes_through_without_more_views(self, adapter):
        docs = [self.make_document("bogart", BOGART, {}), self.make_document("bogart", BOGART, {})]
        out, stats = self.run(adapter, docs)
        records = self._records(out)
        assert [r.id for r in self._originals(records)] == ["bogart", "bogart"]
        assert records[-1].id == "bogart"  # the repeat comes last, with no views after it
        assert [s[0] for s in stats["skipped"]] == ["bogart"]

    def test_rerun_over_its_own_output_adds_nothing(self, kb_path, output):
        """With ``trust_lineage=True`` argus's own views pass through as they came."""
        trusting = self.make_adapter(kb=str(kb_path), remedy="expansion", trust_lineage=True)
        out, stats = self.run(trusting, list(output[0]))
        assert [r.id for r in self._records(out)] == [r.id for r in self._records(output[0])]
        assert stats["views"] == output[1]["views"]  # rebuilt, recognised, not emitted twice
        assert stats["lineage_rewritten"] == []

    def test_input_lineage_is_not_trusted_by_default(self, adapter, output):
        """A view given back in without ``trust_lineage`` is an original like any other."""
        views = self._views(self._records(output[0]))
        docs = [self.make_document(str(v.id), v.text, dict(v.metadata)) for v in views]
        out, stats = self.run(adapter, docs)
        assert sorted(stats["lineage_rewritten"]) == sorted(str(v.id) for v in views)
        records = self._records(out)
        assert [r.id for r in self._originals(records)] == [v.id for v in views]
        for record in self._originals(records):
            assert record.metadata[SOURCE_KEY] == record.id  # its own source now
            assert {k for k in record.metadata if k in ARGUS_KEYS} == {SOURCE_KEY, VIEW_KEY}

    def test_forged_lineage_and_look_alike_keys_make_an_original(self, adapter):
        """A document naming another's id as its source, or a user's own ``argus_view``, comes
        out as an original with its own lineage (its other metadata kept), never as a view."""
        forged = {"tenant": "b", SOURCE_KEY: "bogart", VIEW_KEY: "expansion"}
        mine = {"tenant": "b", VIEW_KEY: "summary"}
        docs = [
            self.make_document("payroll", "Quarterly payroll export for the finance team.", forged),
            self.make_document("summary", "A summary of the payroll export, March.", mine),
        ]
        out, stats = self.run(adapter, docs)
        assert stats["lineage_rewritten"] == ["payroll", "summary"]
        records = self._records(out)
        assert not self._views(records)
        assert [(r.id, dict(r.metadata)) for r in records] == [
            ("payroll", {"tenant": "b", **original_lineage("payroll")}),
            ("summary", {"tenant": "b", **original_lineage("summary")}),
        ]

    def test_tau_zero_flags_nothing(self, kb_path):
        strict = self.make_adapter(kb=str(kb_path), tau=0.0)
        out, stats = self.run(strict, [self.make_document("bogart", BOGART, {})])
        assert len(out) == 1 and stats["flagged_entities"] == 0

    def test_failed_views_are_reported_and_originals_kept(self, adapter, kb_path):
        from argus_ir.pipeline import Argus

        class BrokenKB(ReferenceKB):
            def lookup(
                self,
                surface: str,
                k: int = 2,
                *,
                label: str | None = None,
                context: str | None = None,
            ) -> list[tuple[Passage, float]]:
                if surface == "Marie Curie":
                    raise RuntimeError("KB shard offline")
                return super().lookup(surface, k, label=label, context=context)

        kb = ReferenceKB.load(kb_path)
        broken = BrokenKB(kb.passages, kb.index, kb.fingerprint)
        fresh = self.make_adapter(kb=str(kb_path))
        self.use_argus(fresh, Argus(kb=broken))
        docs = [self.make_document("curie", CURIE, {}), self.make_document("bogart", BOGART, {})]
        out, stats = self.run(fresh, docs)
        records = self._records(out)
        assert [r.id for r in self._originals(records)] == ["curie", "bogart"]
        assert [f[0] for f in stats["failures"]] == ["curie"]
        assert "KB shard offline" in stats["failures"][0][1]
        assert {v.metadata["argus_source_id"] for v in self._views(records)} == {"bogart"}

    def test_a_document_whose_diagnosis_raises_is_kept_and_reported(self, adapter, kb_path):
        from argus_ir.diagnose import Diagnoser
        from argus_ir.pipeline import Argus

        class Choking:
            """The real mentions, except that a text holding "Curie" makes the call raise."""

            def __init__(self, real: Any) -> None:
                self.real, self.labels = real, real.labels

            def extract(self, texts: Any, *, show_progress: bool = False) -> Any:
                if any("Curie" in t for t in texts):
                    raise RuntimeError("tokenizer choked")
                return self.real.extract(texts, show_progress=show_progress)

        argus = Argus(kb=str(kb_path), tau=1.0)
        real = argus.diagnoser
        argus._loaded["diagnoser"] = Diagnoser(
            real.encoder, real.probe, Choking(real.mentions), tau=real.tau
        )
        fresh = self.make_adapter(kb=str(kb_path))
        self.use_argus(fresh, argus)
        docs = [self.make_document("curie", CURIE, {}), self.make_document("bogart", BOGART, {})]
        out, stats = self.run(fresh, docs)
        records = self._records(out)
        assert [r.id for r in self._originals(records)] == ["curie", "bogart"]
        failures = [tuple(f) for f in stats["failures"]]
        assert failures == [("curie", "diagnosis: RuntimeError: tokenizer choked")]
        assert {v.metadata["argus_source_id"] for v in self._views(records)} == {"bogart"}

    def test_collapse_folds_views_into_their_source(self, adapter, output):
        docs = output[0]
        records = self._records(docs)
        scores = {"bogart": 0.40, "plain": 0.45, "curie": 0.10}
        hits = []
        for doc, record in zip(docs, records):
            if not is_view_entry(record.metadata):
                hits.append((doc, scores[str(record.id)]))
            elif record.metadata["argus_source_id"] == "bogart":
                hits.append((doc, 0.9 - 0.1 * len(hits)))  # every bogart view beats "plain"
        ranked = self.collapse(adapter, hits, 2)
        assert [doc_id for doc_id, _ in ranked] == ["bogart", "plain"]
        best_view = max(s for d, s in hits if self.read_document(d).id not in scores)
        if ranked[0][1] is not None:  # views count less the default discount, as in the core
            from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT

            folded = max(best_view - DEFAULT_VIEW_DISCOUNT, scores["bogart"])
            assert ranked[0][1] == pytest.approx(folded)
            assert ranked[1][1] == pytest.approx(0.45)
