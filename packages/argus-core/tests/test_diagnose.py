"""Diagnosis with real parts: the offline MiniLM retriever, the shipped MiniLM k=10 probe and spaCy NER."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_ir.encoder.tokens import backend_json
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


def test_a_tree_probe_scores_a_whole_batch_in_one_call_with_each_documents_own_numbers(
    minilm, ner, monkeypatch
):
    from argus_ir.diagnose import Diagnoser

    texts = [
        DOC,
        "Humphrey Bogart once filmed a scene in Lucknow.",
        "No names here at all.",
        "Marie Curie worked in Paris with Pierre Curie and later visited Warsaw.",
    ]
    alone = Diagnoser(minilm, load_shipped_probe("minilm", 10), ner)
    expected = [alone.diagnose([t])[0] for t in texts]
    together = Diagnoser(minilm, load_shipped_probe("minilm", 10), ner)
    assert together.probe.model.rows_apart  # XGBoost: each row walks the trees alone
    calls = []
    real = type(together.probe.model).predict
    monkeypatch.setattr(
        type(together.probe.model), "predict", lambda self, X: calls.append(len(X)) or real(self, X)
    )
    got = together.diagnose(texts)
    assert len(calls) == 1  # one call for the batch's 4 documents (it was one per document)
    for one, many in zip(expected, got, strict=True):
        assert [(e.surface, e.rps) for e in one.entities] == [
            (e.surface, e.rps) for e in many.entities
        ]  # the same numbers to the bit


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


# -- reading only the retriever's window (the descriptor remedy) ---------------------------------

FILLER = " ".join(["The committee reviewed the annual budget and the staffing plan."] * 40)
LONG_DOC = f"Humphrey Bogart once filmed a scene in Lucknow. {FILLER} Later Humphrey Bogart met Ingrid Bergman in Casablanca."


def test_window_ends_cut_between_words_where_the_retriever_stops(minilm):
    ends = minilm.window_ends([LONG_DOC, DOC])
    assert ends[1] == len(DOC)  # a text that fits is read whole
    cut = ends[0]
    assert 0 < cut < len(LONG_DOC)
    assert not (LONG_DOC[cut - 1].isalnum() and LONG_DOC[cut].isalnum())  # never inside a word
    tok = minilm.tokenizer([LONG_DOC, LONG_DOC[:cut]], add_special_tokens=False)["input_ids"]
    width = minilm.info.max_length - 2  # [CLS] and [SEP]
    assert len(tok[0]) > width >= len(tok[1])
    assert tok[1] == tok[0][: len(tok[1])]  # the prefix is the text's own first tokens
    assert width - len(tok[1]) < 8  # and only the last partial word is left out


def test_window_only_finds_no_mention_past_the_window_and_keeps_the_vector(diagnoser, minilm):
    (whole,) = diagnoser.diagnose([LONG_DOC])
    (window,) = diagnoser.diagnose([LONG_DOC], window_only=True)
    cut = minilm.window_ends([LONG_DOC])[0]
    past = [m for e in whole.entities for m in e.mentions if m.start >= cut]
    assert {m.text for m in past} >= {"Ingrid Bergman", "Casablanca"}
    assert all(m.end <= cut for e in window.entities for m in e.mentions)
    assert {e.surface for e in window.entities} == {"Humphrey Bogart", "Lucknow"}
    # the first window's states are the ones the retriever computes for the document
    assert np.array_equal(whole.doc_vector, window.doc_vector)
    st = minilm.sentence_transformer.encode([LONG_DOC], normalize_embeddings=True)[0]
    np.testing.assert_allclose(window.doc_vector, st, atol=1e-5)
    (enc,) = minilm.encode([LONG_DOC], first_window=True)
    probe = load_shipped_probe("minilm", 10)
    bogart = next(e for e in window.entities if e.surface == "Humphrey Bogart")
    (m,) = bogart.mentions  # the second mention is past the window
    assert bogart.rps == pytest.approx(float(probe.predict(enc.pool_span(m.start, m.end))[0]))


def test_a_description_past_the_window_cannot_move_a_views_vector(minilm):
    from argus_ir.diagnose import EntityRisk
    from argus_ir.kb import Passage
    from argus_ir.remedy import descriptor_text
    from argus_ir.text.mentions import Mention

    start = LONG_DOC.index("Ingrid Bergman")
    m = Mention(start, start + len("Ingrid Bergman"), "Ingrid Bergman", "PERSON")
    risk = EntityRisk("Ingrid Bergman", "PERSON", 0.1, True, (m,))
    view = descriptor_text(
        LONG_DOC, [(risk, Passage("x", "Ingrid Bergman", "", "Swedish actress"))]
    )
    assert "(Swedish actress)" in view
    vectors = minilm.sentence_transformer.encode([LONG_DOC, view])
    assert np.array_equal(vectors[0], vectors[1])  # why augment never diagnoses past the window


def test_augment_reads_the_window_for_the_descriptor_alone(diagnoser):
    from argus_ir import Argus

    def mentions(remedy: str) -> tuple[set[str], dict]:
        argus = Argus(remedy=remedy)
        argus._loaded["diagnoser"] = diagnoser
        ((diagnosis, _),) = argus.plan([{"_id": "d", "text": LONG_DOC}])
        return {m.text for e in diagnosis.entities for m in e.mentions}, argus.settings_card()

    descriptor, card = mentions("descriptor")
    focus, focus_card = mentions("focus")
    assert "Casablanca" in focus and "Casablanca" not in descriptor
    assert descriptor == {"Humphrey Bogart", "Lucknow"}
    assert (card["diagnosis"], focus_card["diagnosis"]) == ("window", "whole")


# -- NER in worker processes, ahead of the retriever's pass --------------------------------------


def test_ner_in_workers_runs_ahead_of_the_cpu_pass_and_says_the_same(diagnoser, minilm, ner):
    """With NER in worker processes and the retriever on the CPU, NER finishes before the pass
    starts (no thread shares the cores with torch); the diagnosis is the one-process one, bit
    for bit."""
    from argus_ir.diagnose import Diagnoser
    from argus_ir.text.mentions import WORKER_MIN_TEXTS, SpacyMentions

    texts = [DOC, "Ada Lovelace met Charles Babbage in London.", "Nothing named here."] * 30
    assert len(texts) >= WORKER_MIN_TEXTS
    workers = SpacyMentions(processes=2)
    ahead = Diagnoser(minilm, diagnoser.probe, workers)
    events: list[str] = []
    extract, encode = workers.extract, minilm.encode

    def logged_extract(*args, **kwargs):
        events.append("ner starts")
        out = extract(*args, **kwargs)
        events.append("ner ends")
        return out

    def logged_encode(*args, **kwargs):
        events.append("pass starts")
        yield from encode(*args, **kwargs)

    try:
        workers.extract = logged_extract  # type: ignore[method-assign]
        minilm.encode = logged_encode  # type: ignore[method-assign]
        found = ahead.diagnose(texts, window_only=True)
        assert workers._workers is not None  # the workers read them
    finally:
        del minilm.encode
        workers.close()
    assert events == ["ner starts", "ner ends", "pass starts"]
    alone = diagnoser.diagnose(texts, window_only=True)  # NER in this process, beside the pass
    for a, b in zip(alone, found, strict=True):
        assert a.entities == b.entities
        assert np.array_equal(a.doc_vector, b.doc_vector)


def test_ner_processes_follow_the_device(monkeypatch):
    torch = pytest.importorskip("torch")
    from argus_ir.diagnose import ner_processes

    before = torch.get_num_threads()
    try:
        # one NER process per 8 torch threads, at most 8 copies of spaCy
        for threads, processes in ((1, 1), (2, 1), (8, 1), (9, 2), (16, 2), (17, 3), (96, 8)):
            torch.set_num_threads(threads)
            assert ner_processes("cpu") == processes
    finally:
        torch.set_num_threads(before)

    import argus_ir.diagnose as module

    for cores, processes in ((1, 1), (2, 1), (16, 8), (64, 8)):  # a GPU: all cores but one
        monkeypatch.setattr(module, "_cores", lambda cores=cores: cores)
        assert ner_processes("cuda") == ner_processes("cuda:1") == processes
    monkeypatch.undo()
    assert module._cores() >= 1  # the module's own count, back in place
    assert module.ner_apart("cuda:0") and not module.ner_apart("cpu")


def test_argus_runs_ner_in_one_process_per_eight_cpu_threads():
    torch = pytest.importorskip("torch")
    from argus_ir import Argus

    diagnoser = Argus(device="cpu").diagnoser
    threads = torch.get_num_threads()
    assert diagnoser.mentions.processes == min(-(-threads // 8), 8)
    assert diagnoser._ner_ahead(256) is (threads > 8)  # else NER in a thread beside the pass
    assert not diagnoser._ner_ahead(1)  # the first record's lone document: read here


# -- NER apart from the pass, a batch ahead of it (a GPU machine) --------------------------------

CORPUS = [
    {"_id": f"d{i}", "text": text}
    for i, text in enumerate(
        [
            DOC,
            "Ada Lovelace met Charles Babbage in London in 1833.",
            "The Treaty of Westphalia was signed in Osnabrueck and Muenster.",
            "Nothing named here at all.",
        ]
        * 50
    )
]


def _apart(minilm, diagnoser, processes: int = 1):
    """An Argus whose NER runs apart from the pass, as on a GPU, with the pass on the CPU here."""
    from argus_ir import Argus
    from argus_ir.diagnose import Diagnoser
    from argus_ir.text.mentions import SpacyMentions

    argus = Argus(batch_size=64)
    workers = SpacyMentions(processes=processes, apart=True)
    argus._loaded["encoder"] = minilm
    argus._loaded["diagnoser"] = Diagnoser(minilm, diagnoser.probe, workers, ner_apart=True)
    return argus, workers


def test_ner_apart_works_a_batch_ahead_of_the_pass_and_says_the_same(
    diagnoser, minilm, monkeypatch
):
    """Issue 49: on a GPU machine NER runs in worker processes, each batch handed to it before
    the pass reads the batch before, so the card never waits for a whole batch's NER; the views
    are those of the CPU path, byte for byte, and this process reads no text itself."""
    from argus_ir import Argus

    argus, workers = _apart(minilm, diagnoser)
    events: list[str] = []
    start, encode, here = argus.diagnoser.start, minilm.encode, workers._extract_here
    read_here: list[int] = []

    def logged_start(texts, *args, **kwargs):
        events.append("ner")
        return start(texts, *args, **kwargs)

    def logged_encode(*args, **kwargs):
        events.append("pass")
        yield from encode(*args, **kwargs)

    def logged_here(texts, *args, **kwargs):
        read_here.append(len(texts))
        return here(texts, *args, **kwargs)

    monkeypatch.setattr(argus.diagnoser, "start", logged_start)
    monkeypatch.setattr(minilm, "encode", logged_encode)
    monkeypatch.setattr(workers, "_extract_here", logged_here)
    try:
        views = [(v.id, v.text, v.metadata) for v in argus.augment(CORPUS)]
        assert workers._workers is not None and workers._workers.processes == 1
    finally:
        workers.close()
    monkeypatch.undo()
    # batches of 1, 64, 64, 64 and 7 documents: NER of batch n + 1 is asked for before the pass
    # reads batch n
    assert events == ["ner", "ner", "pass", "ner", "pass", "ner", "pass", "ner", "pass", "pass"]
    # the first batch is read here (the workers start with the second: the first record comes
    # out without waiting for them); the short last one goes to the running workers
    assert read_here == [1, 0, 0, 0, 0]
    cpu = Argus(batch_size=64)
    cpu._loaded["encoder"], cpu._loaded["diagnoser"] = minilm, diagnoser
    assert views == [(v.id, v.text, v.metadata) for v in cpu.augment(CORPUS)]


class _CountingTokenizer:
    """The encoder's tokenizer, counting the texts this process tokenises (in lists: a single
    string is the encoder finding its special tokens)."""

    def __init__(self, inner):
        self.inner, self.texts = inner, 0

    def __call__(self, texts, *args, **kwargs):
        self.texts += len(texts) if isinstance(texts, list) else 0
        return self.inner(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("remedy", ["descriptor", "expansion"])
def test_ner_apart_leaves_the_tokens_to_its_workers(diagnoser, minilm, monkeypatch, remedy):
    """Issue 60: the process that feeds a GPU spent half its CPU tokenising; NER's workers now
    tokenise what they read, short batches too once they run, and this process only the first
    batch (before they run) and one text to check theirs, with the same views: cut at the first
    window (the descriptor) or not."""
    from argus_ir import Argus

    argus, workers = _apart(minilm, diagnoser)
    argus.remedy = remedy
    counting = _CountingTokenizer(minilm.tokenizer)
    monkeypatch.setattr(minilm, "_token_memo", None, raising=False)  # nothing remembered
    minilm.__dict__.pop("_token_memo")
    monkeypatch.setattr(minilm, "tokenizer", counting)
    try:
        views = [(v.id, v.text, v.metadata) for v in argus.augment(CORPUS)]
        assert argus.diagnoser._worker_tokens.agree is True
    finally:
        workers.close()
    monkeypatch.undo()
    # of 200 documents: the first batch's one (the workers start with the second) and one text
    # of the first batch the workers tokenised, to compare with theirs; the last batch's seven
    # go to the running workers
    assert counting.texts == 1 + 1
    cpu = Argus(batch_size=64, remedy=remedy)
    cpu._loaded["encoder"], cpu._loaded["diagnoser"] = minilm, diagnoser
    assert views == [(v.id, v.text, v.metadata) for v in cpu.augment(CORPUS)]


def test_workers_that_tokenise_otherwise_are_noticed(diagnoser, minilm, caplog):
    """Workers whose tokenizer is not the encoder's (here: one that keeps the case) are caught
    on the first batch they answer; this process tokenises from then on, with the same views."""
    from argus_ir import Argus

    argus, workers = _apart(minilm, diagnoser)
    other = json.loads(backend_json(minilm.tokenizer))
    assert other["normalizer"]["lowercase"] is True
    other["normalizer"]["lowercase"] = False
    argus.diagnoser._worker_tokens._json = json.dumps(other)
    # no two batches alike: the batch started before the first answer was checked must not
    # take the workers' tokens either
    corpus = [{**doc, "text": f"{doc['text']} Note {i}."} for i, doc in enumerate(CORPUS)]
    try:
        with caplog.at_level("WARNING", logger="argus_ir.worker_tokens"):
            views = [(v.id, v.text, v.metadata) for v in argus.augment(corpus)]
        assert argus.diagnoser._worker_tokens.agree is False
        assert argus.diagnoser._worker_tokens.tokenizer(64) is None  # never asked again
    finally:
        workers.close()
    assert "tokenise for 'sentence-transformers/all-MiniLM-L6-v2' otherwise" in caplog.text
    cpu = Argus(batch_size=64)
    cpu._loaded["encoder"], cpu._loaded["diagnoser"] = minilm, diagnoser
    assert views == [(v.id, v.text, v.metadata) for v in cpu.augment(corpus)]


def test_ner_apart_goes_on_here_when_its_workers_die(diagnoser, minilm):
    """Workers that die while they tokenise and read a batch are reported; the batch is
    tokenised and read in this process, with the diagnoses it would have had."""
    from argus_ir.diagnose import Diagnoser
    from argus_ir.text.mentions import SpacyMentions

    texts = [doc["text"] for doc in CORPUS[:80]]
    workers = SpacyMentions(processes=1, apart=True)
    apart = Diagnoser(minilm, diagnoser.probe, workers, ner_apart=True)
    try:
        first = apart.diagnose(texts, window_only=True)
        for proc in workers._workers._procs:
            proc.kill()
            proc.wait()
        with pytest.warns(RuntimeWarning, match="NER in 1 worker process failed"):
            again = apart.diagnose(texts, window_only=True)
    finally:
        apart.close()
    alone = diagnoser.diagnose(texts, window_only=True)
    for a, b, c in zip(alone, first, again, strict=True):
        assert a.entities == b.entities == c.entities
        assert np.array_equal(a.doc_vector, b.doc_vector) and np.array_equal(
            a.doc_vector, c.doc_vector
        )


def test_an_input_error_met_reading_ahead_comes_after_the_batch_before(diagnoser, minilm):
    """Reading a batch ahead must not lose the batch before: a repeated id in the third batch is
    raised once the second batch is out, as without the look-ahead."""
    argus, workers = _apart(minilm, diagnoser)
    corpus = [*CORPUS[:100], {"_id": "d3", "text": "A repeated id."}, *CORPUS[100:]]
    out = []
    try:
        with pytest.raises(ArgusInputError, match="duplicate document id 'd3'"):
            for batch in argus.process_batches(corpus):
                out.append([doc.id for doc, _, _ in batch])
    finally:
        workers.close()
    assert [len(b) for b in out] == [1, 64]  # the batches before the one holding the repeat


def test_ner_processes_is_a_setting_of_argus_and_the_cli(diagnoser, minilm):
    from argus_ir import Argus
    from argus_ir.cli.common import argus_settings
    from argus_ir.cli.main import build_parser

    argus = Argus(ner_processes=3)
    argus._loaded["encoder"] = minilm
    assert argus.diagnoser.mentions.processes == 3
    assert argus.settings_card() == Argus().settings_card()  # it never changes the output
    with pytest.raises(ValueError, match="ner_processes must be >= 1"):
        Argus(ner_processes=0)
    args = build_parser().parse_args(["augment", "c.jsonl", "--out", "o", "--ner-processes", "3"])
    assert argus_settings(args)["ner_processes"] == 3
    with pytest.raises(SystemExit):
        build_parser().parse_args(["augment", "c.jsonl", "--out", "o", "--ner-processes", "0"])


def test_a_closed_diagnoser_leaves_no_ner_thread_behind(minilm, ner, diagnoser):
    """Issue 54: the thread NER runs in beside the pass was never shut down: a diagnoser dropped
    by a long-lived owner left it waiting for work for the life of the process."""
    import threading

    from argus_ir.diagnose import Diagnoser

    before = set(threading.enumerate())
    with Diagnoser(minilm, diagnoser.probe, ner) as fresh:
        (diag,) = fresh.diagnose([DOC])
        ner = [t for t in set(threading.enumerate()) - before if t.name.startswith("argus-ner")]
        assert len(ner) == 1 and ner[0].is_alive()  # NER ran beside the pass, in its thread
    assert not ner[0].is_alive()
    # closed, it can still be used: the thread starts again, and close() ends it again
    assert fresh.diagnose([DOC])[0].entities == diag.entities
    fresh.close()
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("argus-ner")]
