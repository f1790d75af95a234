"""Semantic stratification: strata, coverage metrics, micro vs macro, bootstrap win rates, gaps."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from argus_ir.coverage import (
    NO_ENTITIES,
    Strata,
    bootstrap_win_rate,
    build_strata,
    coverage_metrics,
    entities_of,
    gap_queries,
    is_name,
    stratified_means,
    stratify_queries,
)
from argus_ir.errors import ArgusInputError
from argus_ir.llm import Generation
from argus_ir.testing import ScriptedLLM

# a hand-made space: cities along x, drugs along y, a lone planet along z
SPACE = {
    "paris": [1.0, 0.1, 0.0],
    "london": [0.9, 0.0, 0.1],
    "rome": [1.0, 0.0, 0.0],
    "aspirin": [0.0, 1.0, 0.1],
    "ibuprofen": [0.1, 1.0, 0.0],
    "mars": [0.0, 0.0, 1.0],
    "a trip to lyon": [0.95, 0.05, 0.0],  # a query without entities, near the cities
}


def embed(texts):
    return np.array([SPACE[t] for t in texts], dtype=np.float64)


DOCS = ["d1", "d2", "d3", "d4", "d5", "d6"]
ENTITIES = [
    ["paris", "london"],
    ["rome", "paris"],
    ["aspirin", "ibuprofen"],
    ["aspirin"],
    ["mars", "rome"],  # tie between strata: the lower id wins
    [],  # no entity
]


@pytest.mark.parametrize("linkage", ["ward", "average"])
def test_strata_on_a_hand_made_space(linkage):
    strata = build_strata(DOCS, ENTITIES, embed, n_clusters=3, min_df=1, linkage=linkage)
    assert len(strata) == 3
    city, drug, planet = (strata.entity_stratum[e] for e in ("paris", "aspirin", "mars"))
    assert len({city, drug, planet}) == 3
    assert {strata.entity_stratum[e] for e in ("london", "rome")} == {city}
    assert strata.doc_primary == {
        "d1": city,
        "d2": city,
        "d3": drug,
        "d4": drug,
        "d5": min(city, planet),
        "d6": NO_ENTITIES,
    }
    assert strata.labels[city].split(" / ")[0] in ("paris", "rome")  # most frequent first
    assert strata.notes["documents without entities"] == 1
    assert strata.notes["strata no document has as primary"] == (1 if city < planet else 0)


@pytest.mark.parametrize(
    ("surface", "expected"),
    [
        ("saccharomyces cerevisiae", True),
        ("il-18", True),  # 2 letters of 5 characters
        ("ifn", True),
        ("nf-κb", True),  # Greek letters are letters
        ("united states", True),
        ("p<0.05", False),
        ("n=17", False),
        ("95%", False),
        ("c.", False),  # one letter
        ("iii:09/3.33", False),  # 3 letters of 11 characters
        ("background", False),
        ("background patients", False),
        ("abstract hyperhomocysteinemia", False),
        ("the background", True),  # a heading word only counts first
    ],
)
def test_statistics_and_section_headings_are_not_names(surface, expected):
    assert is_name(surface) is expected


def test_entities_of_drops_non_names_unless_asked():
    class M:
        def __init__(self, text):
            self.text = text

    mentions = [[M("BACKGROUND"), M("Paris"), M("p < 0.05"), M("paris")], [M("n=17")]]
    assert entities_of(mentions) == [["paris"], []]
    assert entities_of(mentions, keep=None) == [["background", "paris", "p < 0.05"], ["n=17"]]


@pytest.mark.parametrize(
    ("surface", "expected"),
    [
        ("CD4(", "cd4"),
        ("CD4(+", "cd4(+"),  # open inside: left for is_name and the clustering to judge
        ("IL-2)", "il-2"),
        ("(Wnt", "wnt"),
        ("(NF)-kB", "(nf)-kb"),  # balanced
        ("  Saccharomyces   cerevisiae ", "saccharomyces cerevisiae"),
    ],
)
def test_normalised_forms_lose_stray_brackets(surface, expected):
    class M:
        text = surface

    assert entities_of([[M()]], keep=None) == [[expected]]


def test_an_unknown_linkage_is_refused():
    with pytest.raises(ArgusInputError, match="linkage must be"):
        build_strata(DOCS, ENTITIES, embed, linkage="single")


def test_rare_entities_join_their_nearest_stratum():
    strata = build_strata(DOCS, ENTITIES, embed, n_clusters=2, min_df=2)
    # only paris, rome and aspirin are in two documents; london, ibuprofen, mars are placed
    assert strata.notes["entities defining the strata"] == 3
    assert strata.entity_stratum["london"] == strata.entity_stratum["paris"]
    assert strata.entity_stratum["ibuprofen"] == strata.entity_stratum["aspirin"]


def test_a_corpus_without_entities_has_one_defined_outcome():
    strata = build_strata(["a", "b"], [[], []], embed)
    assert len(strata) == 0 and set(strata.doc_primary.values()) == {NO_ENTITIES}
    assert strata.notes["corpus without entities: every document in the no-entity stratum"] == 1
    vectors, notes = stratify_queries({"q": "x"}, {"q": []}, strata, embed)
    assert vectors == {"q": {}} and notes["queries placed nowhere: the corpus has no strata"] == 1
    cov = coverage_metrics(strata, vectors)
    assert cov["strata"] == 0 and math.isnan(cov["msc"])


def _hand_strata():
    # strata 0, 1, 2 with 3, 2 and 1 documents (the last a one-document stratum)
    primary = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 2, "g": NO_ENTITIES}
    return Strata(
        ["zero", "one", "two"],
        {"x": 0, "y": 1, "z": 2},
        {d: Counter({c: 1}) for d, c in primary.items()},
        primary,
        np.eye(3),
    )


def test_coverage_metrics_on_a_hand_made_clustering():
    strata = _hand_strata()
    vectors = {"q1": {0: 1.0}, "q2": {0: 0.5, 1: 0.5}, "q3": {0: 1.0}}
    cov = coverage_metrics(strata, vectors)
    assert cov["msc"] == pytest.approx(2 / 3)
    assert cov["document_coverage"] == pytest.approx(5 / 6)  # d..e and a..c of 6 placed
    assert cov["documents"] == [3, 2, 1] and cov["queries"] == [2.5, 0.5, 0.0]
    # JS divergence by hand (base 2): P = (5/6, 1/6, 0), Q = (1/2, 1/3, 1/6)
    p, q = np.array([5 / 6, 1 / 6, 0]), np.array([0.5, 1 / 3, 1 / 6])
    m = (p + q) / 2

    def kl(a, b):
        return sum(x * math.log2(x / y) for x, y in zip(a, b) if x > 0)

    assert cov["js_divergence"] == pytest.approx((kl(p, m) + kl(q, m)) / 2)


def test_queries_are_stratified_by_entities_or_by_embedding():
    strata = build_strata(DOCS, ENTITIES, embed, n_clusters=3, min_df=1)
    queries = {"q1": "paris and aspirin", "q2": "a trip to lyon", "q3": "rome"}
    ents = {"q1": ["paris", "aspirin", "aspirin"], "q2": [], "q3": ["rome"]}
    vectors, notes = stratify_queries(queries, ents, strata, embed)
    city, drug = strata.entity_stratum["paris"], strata.entity_stratum["aspirin"]
    assert vectors["q1"] == {city: pytest.approx(1 / 3), drug: pytest.approx(2 / 3)}
    assert vectors["q2"] == {city: 1.0}  # no entity: its embedding is nearest the cities
    assert notes["queries without entities (placed by their embedding)"] == 1


def test_micro_and_macro_disagree_when_strata_are_uneven():
    # 80 queries in a big stratum where a is better, 20 in a small one where b is much better
    primary = {f"q{i}": 0 for i in range(80)} | {f"r{i}": 1 for i in range(20)}
    a = {f"q{i}": 0.85 for i in range(80)} | {f"r{i}": 0.1 for i in range(20)}
    b = {f"q{i}": 0.7 for i in range(80)} | {f"r{i}": 0.5 for i in range(20)}
    micro_a, macro_a, groups = stratified_means(a, primary)
    assert micro_a == pytest.approx((80 * 0.85 + 20 * 0.1) / 100)
    assert macro_a == pytest.approx((0.85 + 0.1) / 2)
    assert groups == {0: [0.85] * 80, 1: [0.1] * 20}
    micro_b, macro_b, _ = stratified_means(b, primary)
    assert micro_a > micro_b and macro_a < macro_b
    wins = bootstrap_win_rate(a, b, primary, samples=300, seed=1)
    assert wins["micro"] > 0.9 and wins["macro"] < 0.1


def test_bootstrap_against_itself_is_a_coin_and_seeded():
    rng = np.random.default_rng(0)
    scores = {f"q{i}": float(rng.random()) for i in range(50)}
    primary = {q: i % 4 for i, q in enumerate(scores)}
    assert bootstrap_win_rate(scores, scores, primary, samples=200) == {
        "micro": 0.5,
        "macro": 0.5,
    }
    other = {q: v + float(rng.normal(0, 0.05)) for q, v in scores.items()}
    first = bootstrap_win_rate(scores, other, primary, samples=200, seed=7)
    assert bootstrap_win_rate(scores, other, primary, samples=200, seed=7) == first


def test_gap_queries_keep_good_replies_and_count_the_rest():
    strata = _hand_strata()
    texts = {d: f"Document {d} is about the topic of stratum {d} with details." for d in "abcdefg"}
    # strata 1 and 2 uncovered: d and e (1), f (2); per_stratum=2 gives 3 prompts
    llm = ScriptedLLM(["Question: What is stratum one about?", Generation(None, "timeout"), ""])
    out, notes = gap_queries(strata, texts, [1, 2], llm, per_stratum=2, seed=3)
    assert len(llm.prompts) == 3 and notes["LLM calls"] == 3
    assert notes["failed calls"] == 1 and notes["empty replies"] == 1
    assert [(q.text, q.stratum) for q in out] == [("What is stratum one about?", 1)]
    assert out[0].source in ("d", "e") and out[0].id == f"synthetic-1-{out[0].source}"
    copy = ScriptedLLM([texts["f"]])
    out, notes = gap_queries(strata, texts, [2], copy, per_stratum=1)
    assert out == [] and notes["replies copying the document"] == 1


TINY_DOCS = {
    "d1": "Marie Curie worked in Paris on radium.",
    "d2": "Pierre Curie taught physics in Paris.",
    "d3": "Aspirin was sold by Bayer in Germany.",
    "d4": "Bayer built a factory in Leverkusen, Germany.",
    "d5": "The weather was mild that year.",
}


def _tiny_dataset(root):
    (root / "qrels").mkdir(parents=True)
    queries = {"q1": "What did Marie Curie study?", "q2": "Who sold aspirin first?"}
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in TINY_DOCS.items()), "utf-8"
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()), "utf-8"
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    return root


def test_the_coverage_command_on_a_tiny_dataset(tmp_path, capsys):
    from argus_ir.cli import main

    root = _tiny_dataset(tmp_path / "ds")
    out = tmp_path / "cov"
    args = ["-q", "coverage", str(root), "--out", str(out), "--clusters", "2", "--min-df", "1"]
    assert main([*args, "--bootstrap", "50"]) == 0
    saved = json.loads((out / "results.json").read_text())
    assert set(saved["averages"]) == {"minilm", "bm25"}
    assert saved["coverage"]["strata"] == 2 and 0 < saved["coverage"]["msc"] <= 1
    assert "bm25 vs minilm" in saved["win_rates"] or "minilm vs bm25" in saved["win_rates"]
    assert (out / "strata.png").exists() and (out / "coverage.png").exists()
    assert "Minimum Semantic Coverage" in capsys.readouterr().out
    # the per-query rows reproduce the averages (micro: every query; macro: every stratum)
    rows = saved["queries"]
    assert set(rows) == {"q1", "q2"}
    for name in ("minilm", "bm25"):
        by_stratum: dict[int, list[float]] = {}
        for row in rows.values():
            by_stratum.setdefault(row["stratum"], []).append(row["scores"][name])
        micro = sum(r["scores"][name] for r in rows.values()) / len(rows)
        macro = sum(sum(v) / len(v) for v in by_stratum.values()) / len(by_stratum)
        assert saved["averages"][name] == {
            "micro": pytest.approx(micro),
            "macro": pytest.approx(macro),
        }


def test_a_rerun_with_a_vector_cache_does_not_embed_the_corpus_again(tmp_path, monkeypatch):
    import argus_ir.eval
    from argus_ir.cli import main

    embedded: list[str] = []
    real = argus_ir.eval.embed_texts

    def counting(encoder, texts, show_progress):
        embedded.extend(texts)
        return real(encoder, texts, show_progress)

    monkeypatch.setattr(argus_ir.eval, "embed_texts", counting)
    root = _tiny_dataset(tmp_path / "ds")
    cache = tmp_path / "vectors"
    args = ["-q", "coverage", str(root), "--clusters", "2", "--min-df", "1", "--bootstrap", "50"]
    args += ["--vector-cache", str(cache)]
    assert main([*args, "--out", str(tmp_path / "first")]) == 0
    assert set(TINY_DOCS.values()) <= set(embedded)
    assert len(list(cache.glob("*/shard-*.npz"))) == 1  # one model, one chunk
    embedded.clear()
    assert main([*args, "--out", str(tmp_path / "again"), "--clusters", "3"]) == 0
    assert embedded and not set(TINY_DOCS.values()) & set(embedded)  # names, queries only
    first = json.loads((tmp_path / "first" / "results.json").read_text())
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["averages"]["minilm"]["micro"] == first["averages"]["minilm"]["micro"]


def test_llm_entities_define_the_strata_and_are_counted(tmp_path, monkeypatch):
    import argus_ir.llm
    from argus_ir.cli import main
    from argus_ir.testing import ScriptedLLM

    # corpus order, then the queries; "Bayer AG" is not in d3 and is counted, d5 has no names
    replies = ["Marie Curie\nParis", "Pierre Curie, Paris", "Aspirin\nBayer AG", "Bayer\nGermany"]
    replies += ["", "Marie Curie", "aspirin"]
    llm = ScriptedLLM(replies)
    monkeypatch.setattr(argus_ir.llm, "load_llm", lambda spec: llm)
    out = tmp_path / "cov"
    args = ["-q", "coverage", str(_tiny_dataset(tmp_path / "ds")), "--out", str(out)]
    args += ["--entities", "llm", "--llm", "openai:http://127.0.0.1:9/v1", "--bootstrap", "20"]
    assert main([*args, "--clusters", "2", "--min-df", "1", "--retriever", "bm25"]) == 0
    assert len(llm.prompts) == 7 and "Marie Curie worked in Paris" in llm.prompts[0]
    saved = json.loads((out / "results.json").read_text())
    notes = saved["notes"]
    assert notes["entity extraction: listed names not in the text"] == 1
    assert notes["entity extraction: LLM calls"] == 7
    assert notes["documents without entities"] == 1  # d5
    assert (
        notes["distinct entities"] == 6
    )  # marie curie, paris, pierre curie, aspirin, bayer, germany
    labels = " / ".join(s["label"] for s in saved["strata"])
    assert "paris" in labels and "bayer" in labels
    assert (out / "llm-cache" / "calls.jsonl").exists()
