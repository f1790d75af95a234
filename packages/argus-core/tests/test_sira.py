"""SIRA: the DF filter, eq. 2 against bm25s, n-gram injection, reply filters and the call cache.

BM25 scores are checked against ``bm25s`` (Lucene variant), an independent implementation. The LLM
here is scripted (plumbing); the real offline SmolLM2 runs in ``test_sira_real_llm`` below and over
HTTP in the integration suite.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.llm import Generation
from argus_ir.sira import (
    Analyzer,
    CallCache,
    SiraEnricher,
    SiraIndex,
    build_prompt,
    enrich_corpus,
    evaluate_sira,
    expand_queries,
    parse_terms,
)
from argus_ir.testing import ScriptedLLM

bm25s = pytest.importorskip("bm25s")

CORPUS = [
    ("d1", "Aspirin reduces fever and pain in adults."),
    ("d2", "Statins lower cholesterol; cholesterol drives plaque in arteries."),
    ("d3", "Influenza vaccines prevent seasonal flu in older adults."),
    ("d4", "Plaque builds up in coronary arteries over decades."),
    ("d5", "Fever in children is rarely dangerous."),
    ("d6", "Vaccines train the immune system."),
]


def _bm25s_index(token_lists, **kw):
    index = bm25s.BM25(method="lucene", **kw)
    index.index(token_lists, show_progress=False)
    return index


# -- the index ---------------------------------------------------------------------------------------


def test_bm25_matches_bm25s_lucene():
    index = SiraIndex.build(CORPUS)
    ref = _bm25s_index([index.analyzer.tokens(t) for _, t in CORPUS])
    for query in ["fever adults", "cholesterol plaque arteries", "vaccines immune flu", "aspirin"]:
        toks = index.analyzer.tokens(query)
        np.testing.assert_allclose(index.bm25(toks), ref.get_scores(toks), rtol=1e-5, atol=1e-6)


def test_df_filter_bounds_on_a_hand_made_corpus():
    # DF: "common" 6 of 10 documents, "mid" 2, "rare" 1, "unseen" 0
    docs = [(f"d{i}", "common filler") for i in range(6)] + [
        ("d6", "mid word"),
        ("d7", "mid again"),
        ("d8", "rare thing"),
        ("d9", "nothing here"),
    ]
    index = SiraIndex.build(docs, tau=0.2, analyzer=Analyzer(stemmer=None))  # bound: DF <= 2
    assert [index.df(t) for t in ("common", "mid", "rare", "unseen")] == [6, 2, 1, 0]
    kept, dropped = index.filter_terms(["common", "mid", "rare", "unseen"], require_present=True)
    assert kept == ["mid", "rare"]  # DF = tau * |C| exactly is kept
    assert dropped == {"too_common": 1, "absent": 1}
    kept, dropped = index.filter_terms(["common", "mid", "unseen"], require_present=False)
    assert kept == ["mid", "unseen"] and dropped == {"too_common": 1}
    tighter = SiraIndex.build(docs, tau=0.1, analyzer=Analyzer(stemmer=None))  # DF <= 1
    assert tighter.filter_terms(["mid", "rare"], require_present=True)[0] == ["rare"]


def test_eq2_is_two_bm25s_calls():
    index = SiraIndex.build(CORPUS, tau=0.5)
    ref = _bm25s_index([index.analyzer.tokens(t) for _, t in CORPUS])
    query = "fever in adults"
    terms, _ = index.expansion_terms(["aspirin", "pain relief"], query)
    assert terms == ["aspirin", "pain"]  # "relief" is in no document, "pain relief" neither
    expected = ref.get_scores(index.analyzer.tokens(query)) + 0.4 * ref.get_scores(terms)
    np.testing.assert_allclose(index.score(query, terms, 0.4), expected, rtol=1e-5, atol=1e-6)
    top = index.search(query, expansion=["aspirin", "pain relief"], weight=0.4, k=2)
    assert [d for d, _ in top] == ["d1", "d5"]
    assert top[0][1] == pytest.approx(float(expected[0]), rel=1e-5)


def test_eq2_on_an_enriched_index_is_two_bm25s_calls_on_the_enriched_postings():
    # without length normalisation (b = 0) the injected postings are ordinary postings
    enrichment = {"d4": ["heart attack", "atherosclerosis"]}
    index = SiraIndex.build(CORPUS, enrichment=enrichment, b=0.0, tau=0.5)
    tokens = [index.analyzer.tokens(t) + index.injected.get(i, []) for i, t in CORPUS]
    ref = _bm25s_index(tokens, b=0.0)
    terms, _ = index.expansion_terms(["heart attack"], "arteries")
    assert terms == ["heart", "attack", "heart_attack"]
    expected = ref.get_scores(index.analyzer.tokens("arteries")) + 0.5 * ref.get_scores(terms)
    np.testing.assert_allclose(index.score("arteries", terms, 0.5), expected, rtol=1e-5)


def test_injection_changes_retrieval_only_through_the_added_postings():
    plain = SiraIndex.build(CORPUS)
    # "heart attack" is new to the corpus; "vaccines" exists elsewhere (d3, d6) but not in d1
    enriched = SiraIndex.build(CORPUS, enrichment={"d1": ["heart attack", "vaccines"]}, tau=0.5)
    assert enriched.injected == {
        "d1": ["heart", "attack", "heart_attack", "vaccin"]
    }  # n-grams of each phrase, stemmed
    new_df = {"heart", "attack", "heart_attack", "vaccin"}
    for term, j in plain.vocab.items():
        column_plain = plain.matrix[:, j].toarray().ravel()
        column_enriched = enriched.matrix[:, enriched.vocab[term]].toarray().ravel()
        if term in new_df:
            # one more posting (d1): IDF drops, the old postings keep their tf and length part
            idf_ratio = np.log(1 + (6 - 3 + 0.5) / 3.5) / np.log(1 + (6 - 2 + 0.5) / 2.5)
            np.testing.assert_allclose(column_enriched[1:], column_plain[1:] * idf_ratio, rtol=1e-5)
            assert column_plain[0] == 0 and column_enriched[0] > 0
        else:
            # every other term scores exactly as before, in every document
            np.testing.assert_array_equal(column_enriched, column_plain)
    assert [d for d, _ in enriched.search("heart attack")] == ["d1"]
    assert plain.search("heart attack") == []


def test_injection_skips_what_the_document_has_and_common_words():
    docs = [*CORPUS, ("d7", "adults adults"), ("d8", "adults")]
    index = SiraIndex.build(
        docs, enrichment={"d1": ["fever", "adults", "antipyretic"]}, tau=0.25
    )  # "adults" is in 3 of 8 documents > 0.25 * 8 = 2
    assert index.injected == {"d1": ["antipyret"]}
    assert index.stats.already_present == 2  # "fever" and "adults" are in d1 already
    assert index.stats.injected_postings == 1 and index.stats.enriched_documents == 1
    index = SiraIndex.build(docs, enrichment={"d5": ["adults"]}, tau=0.25)
    assert index.injected == {} and index.stats.too_common == 1


def test_enrichment_never_edits_the_stored_original_text(tmp_path):
    enrichment = {"d2": ["hypercholesterolemia", "LDL"]}
    index = SiraIndex.build(CORPUS, enrichment=enrichment, tau=0.5)
    folder = index.save(tmp_path / "idx", documents=CORPUS)
    stored = [json.loads(line) for line in (folder / "documents.jsonl").open()]
    assert [(r["id"], r["text"]) for r in stored] == CORPUS
    rows = [json.loads(line) for line in (folder / "enrichment.jsonl").open()]
    assert rows == [
        {
            "id": "d2",
            "phrases": ["hypercholesterolemia", "LDL"],
            "injected": ["hypercholesterolemia", "ldl"],
        }
    ]
    again = SiraIndex.load(folder)
    assert again.search("LDL levels") == index.search("LDL levels") != []
    assert again.enrichment == enrichment and again.stats == index.stats


def test_bad_index_input_is_named(tmp_path):
    with pytest.raises(ArgusInputError, match="duplicate document id 'd1'"):
        SiraIndex.build([("d1", "a b"), ("d1", "c d")])
    with pytest.raises(ArgusInputError, match="unknown document id"):
        SiraIndex.build(CORPUS, enrichment={"nope": ["x"]})
    with pytest.raises(ArgusInputError, match="tau"):
        SiraIndex.build(CORPUS, tau=0)
    (tmp_path / "card.json").write_text('{"kind": "something-else", "format": 1}')
    with pytest.raises(ArgusInputError, match="not a SIRA index"):
        SiraIndex.load(tmp_path)


# -- replies -----------------------------------------------------------------------------------------


def test_parse_terms_reads_the_usual_list_shapes():
    assert parse_terms("1. heart attack\n2) LDL\n- statin therapy\n* CVD") == [
        "heart attack",
        "LDL",
        "statin therapy",
        "CVD",
    ]
    assert parse_terms("Terms: myocardial infarction, MI; heart attack") == [
        "myocardial infarction",
        "MI",
        "heart attack",
    ]
    assert parse_terms('["LDL", "low-density lipoprotein", 3]') == [
        "LDL",
        "low-density lipoprotein",
    ]
    assert parse_terms("1,000 genomes") == ["1,000 genomes"]  # no split inside a number
    assert parse_terms("```\nfoo\nFoo\n```") == ["foo"]  # fences gone, repeats once
    assert parse_terms("!!! ...") == []


def test_unusable_replies_are_counted_never_raised():
    docs = CORPUS[:5]
    llm = ScriptedLLM(
        [
            "",  # empty
            Generation(None, "HTTP 500"),  # failed call
            "influenza\nseasonal flu",  # both already in d3
            "### ??? ###",  # nothing parseable
            "antipyretic\nfever\n" + "a very long sentence that is not a search term at all",
        ]
    )
    result = enrich_corpus(docs, llm)
    s = result.stats
    assert (s.calls, s.empty, s.failed, s.unparseable) == (5, 1, 1, 1)
    assert s.copied == 3 and s.too_long == 1  # "fever" is in d5 already
    assert s.kept == 1
    assert result.phrases == {"d5": ["antipyretic"]}
    assert s.errors == ["HTTP 500"]


def test_repeating_the_document_is_caught_as_a_whole():
    text = (
        "Plaque builds up in coronary arteries over decades in most adults with high cholesterol."
    )
    llm = ScriptedLLM([text + "\natherosclerosis"])
    result = enrich_corpus([("d", text)], llm)
    assert result.stats.repeats_input == 1 and result.phrases == {}


def test_query_sketch_drops_answer_like_phrases():
    llm = ScriptedLLM(
        [
            "2004\nTrue\nvaccine efficacy\n35%",
            "Marie Curie\nradioactivity research\nNobel Prize",
        ]
    )
    result = expand_queries(
        {"q1": "Flu vaccines work in older adults.", "q2": "Who discovered polonium?"},
        llm,
        task="qa",
    )
    assert result.phrases == {
        "q1": ["vaccine efficacy"],
        "q2": ["radioactivity research"],
    }
    assert result.stats.answer_like == 5


def test_prompts_are_task_aware_and_versioned():
    versions = {build_prompt("corpus", t, "x")[0] for t in ("fact", "argument", "duplicate", "qa")}
    assert versions == {f"sira-corpus-{t}-v1" for t in ("fact", "argument", "duplicate", "qa")}
    version, prompt = build_prompt("query", "fact", "  Statins prevent strokes. ")
    assert version == "sira-query-fact-v1" and "Statins prevent strokes." in prompt
    assert "$" not in prompt
    with pytest.raises(ArgusInputError, match="unknown task"):
        build_prompt("query", "chat", "x")
    with pytest.raises(ArgusInputError, match="side must be"):
        build_prompt("answer", "fact", "x")
    with pytest.raises(ArgusInputError, match="unknown task"):
        SiraEnricher(ScriptedLLM([]), task="chat")


def test_sira_loads_its_prompts_from_the_prompts_package():
    from argus_ir.prompts import load_prompt

    version, prompt = build_prompt("corpus", "qa", "Statins prevent strokes.")
    assert prompt == load_prompt(version).substitute(text="Statins prevent strokes.", max_terms=12)
    with pytest.raises(ArgusInputError, match="unknown prompt version 'sira-v0'"):
        load_prompt("sira-v0")


# -- the shared lexical layer ------------------------------------------------------------------------


def test_the_lexical_layer_is_the_one_sira_uses():
    from argus_ir import lexical, sira

    assert sira.SiraIndex is lexical.BM25Index and sira.Analyzer is lexical.Analyzer
    index = lexical.BM25Index.build(CORPUS)
    assert lexical.top_k(index.ids, index.bm25(index.analyzer.tokens("fever")), 1) == (
        index.search("fever", k=1)
    )


def test_copied_share_counts_words_in_verbatim_runs():
    from argus_ir.lexical import copied_share

    source = ["a", "cat", "sat", "on", "the", "mat", "today"]
    assert copied_share(["the", "cat", "sat", "on", "the", "mat"], source) == pytest.approx(5 / 6)
    assert copied_share(["cat", "sat", "on"], source) == 0.0  # shorter than a run
    assert copied_share(["dogs", "run", "in", "the", "park"], source) == 0.0
    assert copied_share(source, source) == 1.0


def test_a_rerun_with_the_cache_costs_no_call(tmp_path):
    cache = CallCache(tmp_path / "cache")
    first = enrich_corpus(CORPUS[:2], ScriptedLLM(["antipyretic", "LDL"]), cache=cache)
    again_llm = ScriptedLLM([])  # any call would fail: the script is empty
    again = enrich_corpus(CORPUS[:2], again_llm, cache=CallCache(tmp_path / "cache"))
    assert again_llm.prompts == [] and again.stats.cache_hits == 2
    assert again.phrases == first.phrases
    # another model, prompt side or input is another key
    other = ScriptedLLM(["x1", "x2"], model="other")
    enrich_corpus(CORPUS[:2], other, cache=cache)
    assert len(other.prompts) == 2
    failed = ScriptedLLM([Generation(None, "down")])
    enrich_corpus(CORPUS[2:3], failed, cache=cache)
    retry = ScriptedLLM(["flu shot"])
    assert enrich_corpus(CORPUS[2:3], retry, cache=cache).phrases == {"d3": ["flu shot"]}
    assert len(retry.prompts) == 1  # failures are not cached


def test_a_broken_cache_file_is_named(tmp_path, caplog):
    # a damaged line (a write cut short) is named and its reply asked again; the rest is read
    (tmp_path / "calls.jsonl").write_text('{"format": 1, "key": "k", "reply": "r"}\nnot json\n')
    with caplog.at_level("WARNING"):
        assert CallCache(tmp_path).get("k") == "r"
    assert "calls.jsonl: 1 damaged line(s) skipped (first: line 2" in caplog.text
    (tmp_path / "calls.jsonl").write_text('{"format": 1, "key": "k", "reply": "r"}\n[1, 2]\n')
    with pytest.raises(ArgusInputError, match=r"calls.jsonl:2: not an argus LLM cache record"):
        CallCache(tmp_path)  # a record of something else: a foreign file


# -- evaluation and the command ----------------------------------------------------------------------


def _beir(root, docs, queries, qrels):
    (root / "qrels").mkdir(parents=True)
    rows = [{"_id": d, "title": "", "text": t} for d, t in docs]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    rows = [{"_id": q, "text": t} for q, t in queries]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    lines = "".join(f"{q}\t{d}\t1\n" for q, d in qrels)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + lines, "utf-8")
    return root


QUERIES = [("q1", "drugs against high temperature"), ("q2", "flu shots for older adults")]
QRELS = [("q1", "d1"), ("q2", "d3")]


def test_evaluate_sira_scores_each_condition_against_bm25(tmp_path):
    from argus_ir.eval import load_beir, score_run

    data = load_beir(_beir(tmp_path / "ds", CORPUS, QUERIES, QRELS))
    replies = ["antipyretic\nhigh temperature", "", "", "", "", ""]  # corpus side, d1..d6
    replies += ["antipyretic", "influenza vaccines"]  # query side, q1 and q2
    result = evaluate_sira(data, ScriptedLLM(replies), tau=0.5, weight=0.5)
    assert list(result.conditions) == ["original", "sira-corpus", "sira-query", "sira-both"]
    assert result.retriever == "bm25"
    # plain BM25 matches bm25s's ranking, scored by ir-measures
    plain = SiraIndex.build(CORPUS)
    ref = _bm25s_index([plain.analyzer.tokens(t) for _, t in CORPUS])
    run = {}
    for qid, text in QUERIES:
        scores = ref.get_scores(plain.analyzer.tokens(text))
        run[qid] = {CORPUS[i][0]: float(s) for i, s in enumerate(scores) if s > 0}
    expected, _ = score_run({q: {d: 1} for q, d in QRELS}, run)
    assert result.conditions["original"].aggregate == pytest.approx(expected)
    # q1 reaches d1 only through d1's enrichment ("high temperature" is not in d1's text)
    corpus = result.conditions["sira-corpus"]
    assert (
        corpus.per_query["q1"]["nDCG@10"] > result.conditions["original"].per_query["q1"]["nDCG@10"]
    )
    assert corpus.llm_calls == len(CORPUS) and corpus.stats["index"]["enriched_documents"] == 1
    assert corpus.stats["corpus"]["empty"] == 5
    both = result.conditions["sira-both"]
    assert both.llm_calls == len(CORPUS) + 2 and "nDCG@10" in both.significance
    assert result.conditions["sira-query"].stats["query"]["cache_hits"] == 0


def test_evaluate_sira_names_bad_conditions(tmp_path):
    from argus_ir.eval import load_beir

    data = load_beir(_beir(tmp_path / "ds", CORPUS, QUERIES, QRELS))
    with pytest.raises(ArgusInputError, match="unknown SIRA condition 'bm42'"):
        evaluate_sira(data, None, conditions=["bm42"])
    with pytest.raises(ArgusInputError, match="sira-query need an LLM"):
        evaluate_sira(data, None, conditions=["original", "sira-query"])


def test_the_sira_command_without_llm(tmp_path, capsys):
    from argus_ir.cli import main

    root = _beir(tmp_path / "ds", CORPUS, QUERIES, QRELS)
    idx = tmp_path / "idx"
    assert (
        main(["-q", "sira", "index", str(root / "corpus.jsonl"), "--out", str(idx), "--no-llm"])
        == 0
    )
    assert "6 documents, 0 enriched" in capsys.readouterr().out
    assert main(["-q", "sira", "search", str(idx), "cholesterol", "plaque", "--no-llm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in lines] == ["d2", "d4"]
    assert "Statins lower cholesterol" in lines[0]
    out = tmp_path / "eval"
    assert (
        main(["-q", "sira", "evaluate", str(root), "--out", str(out), "--conditions", "original"])
        == 0
    )
    saved = json.loads((out / "results.json").read_text())
    assert saved[0]["retriever"] == "bm25" and list(saved[0]["conditions"]) == ["original"]
    assert (out / "results.md").exists() and (out / "per_query.jsonl").exists()


def test_the_sira_command_names_bad_input(tmp_path, capsys):
    from argus_ir.cli import main

    assert main(["sira", "search", str(tmp_path), "x", "--no-llm"]) == 1
    assert "not a SIRA index (no card.json)" in capsys.readouterr().err
    root = _beir(tmp_path / "ds", CORPUS, QUERIES, QRELS)
    args = ["sira", "evaluate", str(root), "--out", str(tmp_path / "o"), "--conditions", "bm42"]
    assert main(args) == 1
    assert "unknown SIRA condition 'bm42'" in capsys.readouterr().err


def test_a_reply_cut_at_another_length_is_another_cache_entry(tmp_path):
    cache = CallCache(tmp_path)
    enrich_corpus(CORPUS[:1], ScriptedLLM(["antipyretic"]), cache=cache, max_tokens=96)
    shorter = ScriptedLLM(["NSAID"])
    result = enrich_corpus(CORPUS[:1], shorter, cache=cache, max_tokens=16)
    assert len(shorter.prompts) == 1 and result.phrases == {"d1": ["NSAID"]}


def test_L16_phrases_that_break_the_prompts_rules_are_dropped_and_counted():
    """Issue 48, L16: every injected or rule-breaking phrase was kept (72 of 72). A phrase of
    more than the prompt's 4 words, with a control or bidirectional character, an over-long word
    or markup is dropped now, and counted."""
    reply = "\n".join(
        [
            "statin therapy for plaque regression",  # 5 words: the prompt says 1 to 4
            "\u202etxt.exe",
            "z" * 300,
            '{"_id": "evil',
            "<script>alert</script>",
            "statin therapy",
        ]
    )
    result = enrich_corpus([("d", "Plaque builds up in coronary arteries.")], ScriptedLLM([reply]))
    s = result.stats
    assert (s.too_long, s.rule_breaking, s.kept) == (1, 4, 1)
    assert result.phrases == {"d": ["statin therapy"]}
