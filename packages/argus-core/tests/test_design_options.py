"""The remedy design options: damped folding (view_discount), the view budget (max_views), variants
as evaluation conditions, dev/test splits indexed once, the evaluation's vector cache and
``--explain``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, collapse, fold_hits, rank_sources
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.errors import ArgusInputError
from argus_ir.eval import evaluate, load_beir, paired_test, parse_variant, results_markdown
from argus_ir.kb import Passage, ReferenceKB
from argus_ir.remedy import RemedyStats, apply_remedy, plan_remedy
from argus_ir.text.mentions import Mention

KB_PASSAGES = [
    Passage("bohr", "Niels Bohr", "Niels Bohr was a Danish physicist.", "Danish physicist"),
    Passage("bohr-model", "Bohr model", "The Bohr model of the atom, proposed by Niels Bohr."),
    Passage("lucknow", "Lucknow", "Lucknow is the capital of Uttar Pradesh, India. It is old."),
    Passage("lucknow-pact", "Lucknow Pact", "The Lucknow Pact was an agreement of 1916."),
]
DOCS = [("d1", "Niels Bohr visited Lucknow. Niels Bohr liked it."), ("d2", "The Nile floods.")]


def _risk(text: str, surface: str, rps: float) -> EntityRisk:
    starts = [i for i in range(len(text)) if text.startswith(surface, i)]
    mentions = tuple(Mention(s, s + len(surface), surface, "X") for s in starts)
    return EntityRisk(surface, "X", rps, rps < 0.3, mentions)


def _diagnoses() -> list[Diagnosis]:
    d1, d2 = (t for _, t in DOCS)
    vec = np.zeros(3, dtype=np.float32)
    # Lucknow is written first but Niels Bohr is the riskier entity
    return [
        Diagnosis("d1", (_risk(d1, "Lucknow", 0.2), _risk(d1, "Niels Bohr", 0.1)), 0.3, vec),
        Diagnosis("d2", (_risk(d2, "Nile", 0.9),), 0.3, vec),
    ]


def _write_beir(root, docs, queries, qrels_rows):
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc_id, text in docs:
            fh.write(json.dumps({"_id": doc_id, "title": "", "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for qid, text in queries:
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels_rows),
        encoding="utf-8",
    )
    return root


HITS = [("d1#v1", 0.9), ("d2", 0.8), ("d1", 0.5), ("d3#v1", 0.85), ("d3", 0.1)]
SOURCE = {"d1#v1": "d1", "d3#v1": "d3"}


# -- folding ---------------------------------------------------------------------------------------


def test_view_discount_by_hand():
    # views lose 0.2: d1's view 0.9 -> 0.7 still beats its original 0.5; d3's 0.85 -> 0.65
    ranked = collapse(HITS, SOURCE, view_discount=0.2)
    assert [(src, round(v, 9)) for src, v in ranked] == [("d2", 0.8), ("d1", 0.7), ("d3", 0.65)]
    # a discount larger than any lift: every source scores as its original
    assert collapse(HITS, SOURCE, view_discount=1.0) == [("d2", 0.8), ("d1", 0.5), ("d3", 0.1)]
    assert collapse(HITS, SOURCE) == collapse(HITS, SOURCE, view_discount=DEFAULT_VIEW_DISCOUNT)


def test_rank_sources_names_the_entry_behind_each_score():
    assert rank_sources(HITS, SOURCE, view_discount=0.0) == [
        ("d1", 0.9, "d1#v1"),
        ("d3", 0.85, "d3#v1"),
        ("d2", 0.8, "d2"),
    ]
    assert rank_sources(HITS, SOURCE, view_discount=0.5)[1:] == [
        ("d1", 0.5, "d1"),  # the discounted view (0.4) no longer gives d1 its score
        ("d3", 0.35, "d3#v1"),
    ]


def test_bad_view_discount_is_named():
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ArgusInputError, match="view_discount must be a finite number >= 0"):
            collapse(HITS, SOURCE, view_discount=bad)


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "a#1", "a#2", "b", "b#1", "c"]), st.integers(-50, 50)),
        max_size=30,
    ),
    st.sampled_from([0, 3, 10]),
)
def test_discounted_max_equals_brute_force(hits, discount):
    ranked = collapse(hits, lambda h: h.split("#")[0], view_discount=discount)
    expected: dict[str, float] = {}
    for h, v in hits:
        src = h.split("#")[0]
        value = v - (discount if "#" in h else 0)
        expected[src] = max(expected.get(src, -1e9), value)
    assert dict(ranked) == expected


def test_fold_hits_discounts_views_only():
    hits = [
        ("d1#v", {"argus_source_id": "d1"}, 0.9),
        ("d2", {"argus_source_id": "d2"}, 0.8),  # an original names itself
        ("d1", {}, 0.5),
    ]
    folded = fold_hits(
        hits,
        id_of=lambda h: h[0],
        metadata_of=lambda h: h[1],
        score_of=lambda h: h[2],
        view_discount=0.0,
    )
    assert [(f.source_id, f.score) for f in folded] == [("d1", 0.9), ("d2", 0.8)]
    damped = fold_hits(
        hits,
        id_of=lambda h: h[0],
        metadata_of=lambda h: h[1],
        score_of=lambda h: h[2],
        view_discount=0.3,
    )
    assert [(f.source_id, round(f.score, 9)) for f in damped] == [("d2", 0.8), ("d1", 0.6)]
    assert damped[1].original == hits[2] and len(damped[1].hits) == 2
    assert damped[1].best == hits[0]  # the view still counts most (0.6 against 0.5)
    deep = fold_hits(
        hits,
        id_of=lambda h: h[0],
        metadata_of=lambda h: h[1],
        score_of=lambda h: h[2],
        view_discount=0.5,
    )
    assert deep[1].best == hits[2]  # 0.9 - 0.5 < 0.5: the original is what scored d1


# -- view budget -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kb() -> ReferenceKB:
    return ReferenceKB.from_passages(KB_PASSAGES)


def _views(kb, **kw):
    stats = RemedyStats()
    out = [v for v in apply_remedy(DOCS, _diagnoses(), kb, stats=stats, **kw) if not v.is_original]
    return out, stats


def test_max_views_spends_the_budget_on_the_riskiest_entity_first(kb):
    # d1: Niels Bohr (RPS 0.1) and Lucknow (0.2), two passages each
    views, stats = _views(kb, k_aug=2, max_views=1)
    assert [(v.metadata["argus_entity"], v.metadata["argus_kb_id"]) for v in views] == [
        ("Niels Bohr", "bohr")
    ]
    assert stats.over_budget == 1 and stats.views == 1
    views, stats = _views(kb, k_aug=2, max_views=3)
    assert [v.metadata["argus_entity"] for v in views] == ["Niels Bohr", "Niels Bohr", "Lucknow"]
    assert stats.over_budget == 0
    unbounded, _ = _views(kb, k_aug=2)
    assert len(unbounded) == 4
    # the budget keeps a subset of the same texts (so an evaluation embeds them once)
    assert {v.text for v in views} <= {v.text for v in unbounded}


def test_max_views_limits_what_a_descriptor_view_describes(kb):
    (view,), _ = _views(kb, kind="descriptor", max_views=1)
    assert view.metadata["argus_entity"] == "Niels Bohr"
    assert "(Danish physicist)" in view.text and "Uttar Pradesh" not in view.text


def test_dry_run_counts_the_budget_like_apply(kb):
    stats = RemedyStats()
    counts = dict(plan_remedy(_diagnoses(), kb, k_aug=2, max_views=3, stats=stats))
    assert counts == {"d1": 3, "d2": 0} and stats.views == 3


def test_max_views_below_one_is_refused(kb):
    with pytest.raises(ValueError, match="max_views must be at least 1"):
        _views(kb, max_views=0)


# -- variants, splits, cache, explain --------------------------------------------------------------


def test_variant_specs_parse_and_bad_ones_are_named():
    assert parse_variant("expansion  max_views=1 view_discount=0.05") == (
        "expansion max_views=1 view_discount=0.05",
        "expansion",
        {"max_views": 1, "view_discount": 0.05},
    )
    assert parse_variant("descriptor max_views=off")[2] == {"max_views": None}
    with pytest.raises(ArgusInputError, match="start with a remedy"):
        parse_variant("original tau=0.1")
    with pytest.raises(ArgusInputError, match="'depth' is not a setting"):
        parse_variant("expansion depth=3")
    with pytest.raises(ArgusInputError, match="'x' is not a valid max_views"):
        parse_variant("expansion max_views=x")
    with pytest.raises(ArgusInputError, match="tau given twice"):
        parse_variant("expansion tau=0.1 tau=0.2")


def _scenario(tmp_path, splits=("test",)):
    from argus_ir.testing import SCENARIO

    root = _write_beir(
        tmp_path / "scenario",
        SCENARIO.documents,
        [("q1", SCENARIO.query), ("q2", "a ferry to an island off East Africa")],
        [("q1", SCENARIO.target, 1), ("q2", "geo-1", 1)],
    )
    if "dev" in splits:  # q2 becomes a dev query
        (root / "qrels" / "test.tsv").write_text(
            f"query-id\tcorpus-id\tscore\nq1\t{SCENARIO.target}\t1\n", encoding="utf-8"
        )
        (root / "qrels" / "dev.tsv").write_text(
            "query-id\tcorpus-id\tscore\nq2\tgeo-1\t1\n", encoding="utf-8"
        )
    return root, SCENARIO.settings


def test_a_discount_larger_than_any_lift_gives_the_original_ranking(tmp_path):
    root, settings = _scenario(tmp_path)
    result = evaluate(
        load_beir(root),
        remedies=("original", "expansion"),
        variants=["expansion view_discount=5"],
        **settings,
    )
    c = result.conditions
    assert c["expansion view_discount=5"].per_query == c["original"].per_query
    assert c["expansion view_discount=5"].entries == c["expansion"].entries  # same views
    assert c["expansion"].per_query != c["original"].per_query  # the views do move q1
    assert c["expansion view_discount=5"].stats["settings"]["view_discount"] == 5.0


def test_two_splits_are_indexed_once_and_reported_apart(tmp_path):
    root, settings = _scenario(tmp_path, splits=("dev", "test"))
    data = load_beir(root, "dev,test")
    assert data.query_split == {"q2": "dev", "q1": "test"} and set(data.qrels) == {"q1", "q2"}
    result = evaluate(data, remedies=("original", "expansion"), **settings)
    dev, test = result.split_by()
    assert (dev.dataset, test.dataset) == ("scenario[dev]", "scenario[test]")
    assert dev.queries == 1 and test.queries == 1
    whole = result.conditions["expansion"].per_query
    assert test.conditions["expansion"].aggregate["nDCG@5"] == whole["q1"]["nDCG@5"]
    assert dev.conditions["expansion"].aggregate["nDCG@5"] == whole["q2"]["nDCG@5"]
    ref = {"q1": result.conditions["original"].per_query["q1"]["nDCG@5"]}
    assert test.conditions["expansion"].significance["nDCG@5"] == paired_test(
        ref, {"q1": whole["q1"]["nDCG@5"]}
    )
    # App. E.1 per split: each split counts its own one (query, gold document) pair
    for part in (dev, test):
        gold = part.gold_rps
        assert gold["retrieved"]["n"] + gold["missed"]["n"] == 1
    whole_gold = result.gold_rps
    assert whole_gold["retrieved"]["n"] + whole_gold["missed"]["n"] == 2
    with pytest.raises(ArgusInputError, match="judged in split 'test' and in 'test'"):
        load_beir(root, "test,test")


def test_the_vector_cache_makes_a_rerun_embed_nothing(tmp_path, monkeypatch):
    from argus_ir.eval import remedies, search

    root, settings = _scenario(tmp_path)
    embedded: list[str] = []
    real = search.embed_texts

    def counting(encoder, texts, show_progress):
        embedded.extend(texts)
        return real(encoder, texts, show_progress)

    # the queries are embedded by the evaluation loop, the corpus and views by the cache
    monkeypatch.setattr(remedies, "embed_texts", counting)
    monkeypatch.setattr(search, "embed_texts", counting)
    cache = tmp_path / "vectors"
    args = dict(remedies=("original", "expansion"), vector_cache=cache, **settings)
    first = evaluate(load_beir(root), **args)
    n_first = len(embedded)
    assert n_first > 14 and not first.conditions["expansion"].stats["ingest_estimated"]
    embedded.clear()
    second = evaluate(load_beir(root), **args)
    queries = 2
    # only the queries and a rate sample (at most 64 cached texts) are embedded again
    assert len(embedded) <= queries + 64
    assert second.conditions["expansion"].stats["ingest_estimated"]
    for name in ("original", "expansion"):
        assert second.conditions[name].per_query == first.conditions[name].per_query
    assert second.conditions["expansion"].ingest_s > second.conditions["original"].ingest_s > 0


def test_cli_explain_writes_the_moves_of_each_query(tmp_path):
    from argus_ir.cli import main

    root, _ = _scenario(tmp_path)
    out = tmp_path / "eval"
    code = main(
        [
            *("-q", "evaluate", str(root), "--out", str(out), "--remedy", "original,expansion"),
            *("--explain", "--variant", "expansion max_views=1", "--tau", "0.99"),
            # the scenario's passages are word matches, which the default no longer inserts
            *("--kb-match", "bm25"),
        ]
    )
    assert code == 0
    rows = [
        json.loads(x)
        for x in (out / "explain" / "scenario-expansion.jsonl").read_text().splitlines()
    ]
    assert {r["qid"] for r in rows} == {"q1", "q2"}
    # expansion reorders q1 inside the top 10 of these 14 documents: a loss without moves
    lost = next(r for r in rows if r["qid"] == "q1")
    assert lost["after_metric"] < lost["before_metric"] and lost["metric"] == "nDCG@10"
    report = (out / "explain" / "scenario-expansion.md").read_text()
    assert "1 lost" in report and "the ranking changed inside it" in report
    assert (out / "explain" / "scenario-expansion_max_views=1.md").is_file()


def test_cli_refuses_a_bad_variant_before_any_work(tmp_path, capsys, monkeypatch):
    import argus_ir.eval as ev
    from argus_ir.cli import main

    root, _ = _scenario(tmp_path)
    monkeypatch.setattr(ev, "evaluate", lambda *a, **k: pytest.fail("evaluated"))
    code = main(["-q", "evaluate", str(root), "--out", str(tmp_path / "o"), "--variant", "x"])
    assert code != 0
    assert "start with a remedy" in capsys.readouterr().err


def test_dense_rankings_apply_the_discount_before_choosing_entries():
    from argus_ir.eval import dense_rankings

    # one query along x; d1's view is closest, but loses 0.5
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    vectors = np.array([[0.5, 0], [0.8, 0], [0.9, 0]], dtype=np.float32)
    ids = ["d1", "d2", "d1#v"]
    ranked = dense_rankings(q, ["q"], vectors, ids, {"d1#v": "d1"}, depth=2, view_discount=0.5)
    assert [(s, round(v, 6), e) for s, v, e in ranked["q"]] == [
        ("d2", 0.8, "d2"),
        ("d1", 0.5, "d1"),
    ]


def test_dense_run_takes_the_default_discount_once():
    from argus_ir.eval import dense_run

    q = np.array([[1.0]], dtype=np.float32)
    vectors = np.array([[0.9], [0.5], [0.3]], dtype=np.float32)
    run = dense_run(q, ["q"], vectors, ["d1#v", "d1", "d2"], {"d1#v": "d1"}, depth=2)
    assert run["q"]["d1"] == pytest.approx(0.9 - DEFAULT_VIEW_DISCOUNT, abs=1e-6)


def test_the_evaluation_search_refuses_a_negative_discount():
    from argus_ir.eval import dense_run

    q = np.array([[1.0]], dtype=np.float32)
    with pytest.raises(ArgusInputError, match="view_discount must be a finite number >= 0"):
        dense_run(q, ["q"], q, ["d1"], {}, view_discount=-0.1)


def test_corpus_targeting_flags_the_entities_whose_name_misses_their_document(
    tmp_path, monkeypatch
):
    import argus_ir.remedy.targeting as tg
    from argus_ir.pipeline import Argus
    from argus_ir.testing import SCENARIO

    target = SCENARIO.target
    monkeypatch.setattr(tg, "DEFAULT_REACH_K", 1)  # a corpus this small: reached = ranked first
    root, settings = _scenario(tmp_path)
    data = load_beir(root)
    result = evaluate(data, remedies=("original",), variants=["focus targeting=corpus"], **settings)
    cond = result.conditions["focus targeting=corpus"]
    assert cond.stats["settings"]["targeting"] == "corpus" and cond.stats["settings"]["tau"] == 1.0

    # independently: rank every document for each entity name by brute force
    argus = Argus(**settings)
    encoder = argus.diagnoser.encoder
    docs = [d.index_text for d in data.corpus]
    ids = [d.id for d in data.corpus]
    dvec = encoder.embed_documents(docs)
    dvec = dvec / np.linalg.norm(dvec, axis=1, keepdims=True)
    expected, best = 0, {}
    for diagnosis in argus.diagnose(data.corpus):
        for e in diagnosis.entities:
            q = encoder.embed_documents([e.surface])[0]
            order = np.argsort(-(dvec @ (q / np.linalg.norm(q))), kind="stable")
            rank = [ids[i] for i in order].index(diagnosis.doc_id) + 1
            expected += rank > 1
            best[diagnosis.doc_id] = max(best.get(diagnosis.doc_id, 0.0), 1.0 / rank)
    assert expected > 0
    assert cond.stats["flagged_entities"] == expected
    assert result.targeting_scores["corpus"] == pytest.approx(best)
    gold = result.gold_by_targeting["corpus"]
    judged = [d for d in ("geo-1", target) if d in best]
    assert gold["retrieved"]["n"] + gold["missed"]["n"] == len(judged)
    assert result.to_dict()["gold_rps_by_targeting"]["corpus"] == gold
    if gold["retrieved"]["n"] and gold["missed"]["n"]:
        assert "targeting=corpus" in results_markdown([result])
