"""Diagnosis with real parts: the offline MiniLM retriever, the shipped MiniLM k=10 probe and spaCy NER."""

from __future__ import annotations

import numpy as np
import pytest

from argus_ir.errors import ArgusInputError, ProbeMismatchError
from argus_ir.probes import load_shipped_probe

pytest.importorskip("spacy")

DOC = "Niels Bohr lectured in Lucknow. Years later, Niels Bohr wrote about Lucknow again."


@pytest.fixture(scope="module")
def ner():
    from argus_ir.text.mentions import SpacyMentions

    return SpacyMentions()


@pytest.fixture(scope="module")
def diagnoser(minilm, ner):
    from argus_ir.diagnose import Diagnoser

    return Diagnoser(minilm, load_shipped_probe("minilm", 10), ner)


def test_known_blind_spot_is_flagged_and_a_reachable_entity_is_not(diagnoser):
    # In the shared-data audit Humphrey Bogart has empirical RPS_10 = 0 (5 related entities) and
    # Lucknow has 1.0 (2 related); the shipped probe places them the same way in a new sentence.
    (diag,) = diagnoser.diagnose(["Humphrey Bogart once filmed a scene in Lucknow."])
    risks = {e.surface: e for e in diag.entities}
    assert set(risks) == {"Humphrey Bogart", "Lucknow"}
    assert risks["Humphrey Bogart"].flagged and risks["Humphrey Bogart"].rps < 0.3
    assert not risks["Lucknow"].flagged and risks["Lucknow"].rps > 0.3
    assert [e.surface for e in diag.flagged] == ["Humphrey Bogart"]


def test_a_surface_form_takes_the_minimum_over_its_mentions(diagnoser, minilm, ner):
    (diag,) = diagnoser.diagnose([DOC])
    (mentions,) = ner.extract([DOC])
    (enc,) = minilm.encode([DOC])
    probe = load_shipped_probe("minilm", 10)
    by_form: dict[str, list[float]] = {}
    for m in mentions:
        by_form.setdefault(m.text, []).append(
            float(probe.predict(enc.pool_span(m.start, m.end))[0])
        )
    assert {e.surface: len(e.mentions) for e in diag.entities} == {"Niels Bohr": 2, "Lucknow": 2}
    for e in diag.entities:
        scores = by_form[e.surface]
        assert len(set(np.round(scores, 6))) == 2, "the two mentions should score differently"
        assert e.rps == pytest.approx(min(scores), abs=1e-6)


def test_tau_boundary_is_strict(minilm, ner, diagnoser):
    from argus_ir.diagnose import Diagnoser

    (diag,) = diagnoser.diagnose([DOC])
    rps = diag.entities[0].rps
    probe = load_shipped_probe("minilm", 10)
    at = Diagnoser(minilm, probe, ner, tau=rps).diagnose([DOC])[0].entities[0]
    above = Diagnoser(minilm, probe, ner, tau=float(np.nextafter(rps, 1.0))).diagnose([DOC])[0]
    assert not at.flagged  # RPS == tau is not below tau
    assert above.entities[0].flagged


def test_empty_and_whitespace_documents_have_no_entities(diagnoser, minilm):
    diags = diagnoser.diagnose(["", "   \n", "No names here at all."], ids=["a", "b", "c"])
    assert [d.doc_id for d in diags] == ["a", "b", "c"]
    assert all(d.entities == () and d.min_rps == 1.0 for d in diags)
    assert all(d.doc_vector.shape == (minilm.info.dim,) for d in diags)


def test_bad_documents_name_their_id(diagnoser):
    with pytest.raises(ArgusInputError, match="duplicate document id 'x'"):
        diagnoser.diagnose(["a", "b"], ids=["x", "x"])
    with pytest.raises(ArgusInputError, match="document 'd2': text is NoneType"):
        diagnoser.diagnose(["Paris.", None], ids=["d1", "d2"])  # type: ignore[list-item]
    with pytest.raises(ArgusInputError, match="2 texts but 1 ids"):
        diagnoser.diagnose(["a", "b"], ids=["x"])


def test_probe_for_another_retriever_is_refused(minilm, ner):
    from argus_ir.diagnose import Diagnoser

    with pytest.raises(ProbeMismatchError, match="all-mpnet-base-v2"):
        Diagnoser(minilm, load_shipped_probe("mpnet", 10), ner)
