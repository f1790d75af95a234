"""The evaluation harness: metrics against pytrec_eval, collapse, significance, BEIR reading."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.eval import dense_run, evaluate, load_beir, paired_test, score_run

QRELS = {"q1": {"d1": 2, "d2": 1, "d5": 0}, "q2": {"d3": 1}, "q3": {"d4": 1}}
RUN = {
    "q1": {"d2": 0.9, "d9": 0.8, "d1": 0.7, "d5": 0.6},
    "q2": {"d8": 0.5, "d7": 0.4, "d3": 0.3},
    "q3": {"d6": 0.9},
}


def test_metrics_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    agg, per_query = score_run(QRELS, RUN, ["nDCG@10", "nDCG@5", "R@10"])
    ref = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.5,10", "recall.10"}).evaluate(RUN)
    for q in QRELS:
        assert per_query[q]["nDCG@10"] == pytest.approx(ref[q]["ndcg_cut_10"])
        assert per_query[q]["nDCG@5"] == pytest.approx(ref[q]["ndcg_cut_5"])
        assert per_query[q]["R@10"] == pytest.approx(ref[q]["recall_10"])
    assert agg["nDCG@10"] == pytest.approx(np.mean([ref[q]["ndcg_cut_10"] for q in QRELS]))


def test_ndcg_by_hand():
    # trec_eval's nDCG (what BEIR reports) takes the grade itself as the gain.
    # q1: gain 1 (d2) at rank 1, 2 (d1) at rank 3; ideal order 2, 1
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    _, per_query = score_run(QRELS, RUN, ["nDCG@10"])
    assert per_query["q1"]["nDCG@10"] == pytest.approx(dcg / idcg)


def test_queries_missing_from_the_run_score_zero():
    agg, per_query = score_run(QRELS, {"q1": RUN["q1"]}, ["nDCG@10"])
    assert per_query["q2"]["nDCG@10"] == 0.0 and per_query["q3"]["nDCG@10"] == 0.0
    assert agg["nDCG@10"] == pytest.approx(per_query["q1"]["nDCG@10"] / 3)


def test_a_source_with_many_views_counts_once():
    # entries: d1's three views lead, then d2, then d1 itself; one query
    entries = ["v1", "v2", "v3", "d2", "d1", "d3"]
    source_of = {"v1": "d1", "v2": "d1", "v3": "d1"}
    # a 1-d space with query vector [1]: each entry's score is its own coordinate
    vectors = np.array([[0.9], [0.85], [0.8], [0.7], [0.6], [0.1]], dtype=np.float32)
    ones = np.ones((1, 1), dtype=np.float32)
    run = dense_run(ones, ["q"], vectors, entries, source_of, depth=2, view_discount=0.0)
    assert run == {"q": {"d1": pytest.approx(0.9), "d2": pytest.approx(0.7)}}
    qrels = {"q": {"d1": 1, "d2": 1}}
    _, per_query = score_run(qrels, run, ["R@10", "nDCG@10"])
    assert per_query["q"]["R@10"] == 1.0 and per_query["q"]["nDCG@10"] == pytest.approx(1.0)


def test_dense_run_depth_survives_crowding_views():
    # 3 sources with 4 views each ranked above every original: depth 3 must still see 3 sources
    rng = np.random.default_rng(0)
    entries, source_of, scores = [], {}, []
    for s in range(3):
        for v in range(4):
            entries.append(f"s{s}v{v}")
            source_of[f"s{s}v{v}"] = f"s{s}"
            scores.append(1.0 - 0.01 * (4 * s + v))
    for d in range(5):
        entries.append(f"s{d}")
        scores.append(0.1 * rng.random())
    vecs = np.array(scores, dtype=np.float32)[None, :]
    run = dense_run(np.ones((1, 1), dtype=np.float32), ["q"], vecs.T, entries, source_of, depth=3)
    assert list(run["q"]) == ["s0", "s1", "s2"]


def test_paired_test_matches_scipy_and_handles_ties():
    from scipy import stats

    a = {"q1": 0.1, "q2": 0.5, "q3": 0.3, "q4": 0.0}
    b = {"q1": 0.3, "q2": 0.5, "q3": 0.6, "q4": 0.1, "q9": 1.0}  # q9 unpaired: ignored
    sig = paired_test(a, b)
    ref = stats.ttest_rel([0.3, 0.5, 0.6, 0.1], [0.1, 0.5, 0.3, 0.0])
    assert sig.n == 4 and sig.delta == pytest.approx(0.15)
    assert sig.t == pytest.approx(ref.statistic) and sig.p == pytest.approx(ref.pvalue)
    same = paired_test(a, a)
    assert same.delta == 0.0 and same.p == 1.0 and math.isnan(same.t)


def _write_beir(root, docs, queries, qrels_rows):
    root.mkdir(parents=True, exist_ok=True)
    (root / "qrels").mkdir(exist_ok=True)
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


def test_load_beir_keeps_judged_queries_and_known_documents(tmp_path):
    root = _write_beir(
        tmp_path / "ds",
        [("d1", "one"), ("d2", "two")],
        [("q1", "first"), ("q2", "second"), ("q3", "unjudged")],
        [("q1", "d1", 1), ("q1", "gone", 1), ("q2", "d2", 0)],
    )
    data = load_beir(root)
    assert data.queries == {"q1": "first"}  # q2 has no relevant document, q3 no judgement
    assert data.qrels == {"q1": {"d1": 1}}
    assert [d.id for d in data.corpus] == ["d1", "d2"] and data.name == "ds"


def test_load_beir_names_the_bad_line(tmp_path):
    root = _write_beir(tmp_path / "ds", [("d1", "x")], [("q1", "y")], [("q1", "d1", 1)])
    (root / "qrels" / "test.tsv").write_text("q1\td1\tlots\n", encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"test\.tsv:1: score 'lots'"):
        load_beir(root)
    with pytest.raises(ArgusInputError, match="not a BEIR dataset"):
        load_beir(tmp_path / "missing")


def test_evaluate_end_to_end_rescues_the_scenario_query(tmp_path):
    from argus_ir.testing import SCENARIO

    root = _write_beir(
        tmp_path / "scenario",
        SCENARIO.documents,
        [("q1", SCENARIO.query), ("q2", "a ferry to an island off East Africa")],
        [("q1", SCENARIO.target, 1), ("q2", "geo-1", 1)],
    )
    result = evaluate(load_beir(root), remedies=("original", "expansion"), **SCENARIO.settings)
    original, expansion = result.conditions["original"], result.conditions["expansion"]
    assert original.per_query["q1"]["nDCG@5"] < 1.0  # film-1 is not first without argus
    assert expansion.per_query["q1"]["nDCG@5"] == pytest.approx(1.0)
    assert expansion.index_growth > 1.0 and expansion.entries > original.entries
    assert expansion.significance["nDCG@10"].n == 2
    summary = result.to_dict()
    assert summary["conditions"]["expansion"]["stats"]["views"] == expansion.entries - 14
    gold = summary["gold_rps"]  # both gold documents have entities: each is counted once
    assert gold["retrieved"]["n"] + gold["missed"]["n"] == 2
    json.dumps(summary)  # JSON-ready


def test_cli_evaluate_writes_results_per_query_and_table(tmp_path, capsys):
    from argus_ir.cli import main
    from argus_ir.testing import SCENARIO

    root = _write_beir(
        tmp_path / "scenario",
        SCENARIO.documents,
        [("q1", SCENARIO.query)],
        [("q1", SCENARIO.target, 1)],
    )
    out = tmp_path / "eval"
    code = main(["-q", "evaluate", str(root), "--out", str(out), "--remedy", "original,descriptor"])
    assert code == 0
    rows = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert {(r["condition"], r["query_id"]) for r in rows} == {
        ("original", "q1"),
        ("descriptor", "q1"),
    }
    summary = json.loads((out / "results.json").read_text())
    assert set(summary[0]["conditions"]) == {"original", "descriptor"}
    table = (out / "results.md").read_text()
    assert "| scenario | all-MiniLM-L6-v2 | descriptor |" in table
    assert "p=" in table and "![Change of nDCG@10" in table and (out / "delta.png").is_file()
    printed = capsys.readouterr().out
    assert "| scenario | all-MiniLM-L6-v2 | descriptor |" in printed


def test_written_results_get_the_usual_file_mode(tmp_path):
    import os
    import stat

    from argus_ir.io import atomic_path

    with atomic_path(tmp_path / "r.json") as tmp:
        tmp.write_text("{}", encoding="utf-8")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o666 & ~mask


def test_rps_of_gold_splits_retrieved_and_missed_by_hand():
    from argus_ir.eval import rps_of_gold

    qrels = {"q1": {"a": 1, "b": 1, "z": 0}, "q2": {"c": 2, "n": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.1}, "q2": {"y": 0.5, "c": 0.4}}
    max_rps = {"a": 0.8, "b": 0.1, "c": 0.6, "z": 0.0}  # "n" has no entity: left out
    out = rps_of_gold(max_rps, qrels, run, k=2)
    # top 2: q1 -> a, x (b missed); q2 -> y, c (c retrieved); z is not relevant
    assert out["retrieved"] == {"n": 2, "mean": pytest.approx(0.7), "median": pytest.approx(0.7)}
    assert out["missed"] == {"n": 1, "mean": pytest.approx(0.1), "median": pytest.approx(0.1)}
    assert 0.0 < out["mannwhitney_p"] <= 1.0


def test_load_beir_counts_what_it_leaves_out_and_reads_integer_ids(tmp_path):
    root = tmp_path / "odd"
    (root / "qrels").mkdir(parents=True)
    rows = [
        {"_id": 1, "text": "one"},
        {"_id": 2, "text": ""},
        {"_id": "3", "text": "three"},
        {"_id": 4, "title": "Only a title", "text": None},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    queries = [{"_id": 10, "text": "first"}, {"_id": 11, "text": "no judgement"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n10\t1\t1\n10\t99\t1\n12\t3\t1\n", "utf-8"
    )
    data = load_beir(root)
    assert data.queries == {"10": "first"} and data.qrels == {"10": {"1": 1}}
    assert [d.id for d in data.corpus] == ["1", "2", "3", "4"]  # empty documents stay indexed
    assert data.notes == {
        "judgements of documents not in the corpus": 1,
        "queries without judgements in test": 1,
        "judged queries missing from the queries file": 1,
        "documents with neither title nor text (indexed, nothing to diagnose)": 1,
        "documents with a title but no text (title indexed; not diagnosed, no views)": 1,
    }


def test_cli_evaluate_on_an_odd_dataset_says_what_it_left_out(tmp_path, capsys):
    from argus_ir.cli import main

    root = tmp_path / "odd"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": 1, "text": "Humphrey Bogart starred in Casablanca."}, {"_id": 2, "text": " "}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    queries = [{"_id": 7, "text": "Casablanca actor"}, {"_id": 8, "text": "unjudged"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    (root / "qrels" / "test.tsv").write_text("7\t1\t1\n7\t404\t1\n", "utf-8")
    out = tmp_path / "eval"
    assert main(["-q", "evaluate", str(root), "--out", str(out), "--remedy", "original"]) == 0
    printed = capsys.readouterr().out
    assert "note: 1 queries without judgements in test" in printed
    assert "note: 1 judgements of documents not in the corpus" in printed
    assert "note: 1 documents with neither title nor text" in printed
    summary = json.loads((out / "results.json").read_text())[0]
    assert summary["queries"] == 1 and summary["documents"] == 2
    assert summary["notes"]["queries without judgements in test"] == 1
    again = ["-q", "evaluate", str(root), "--out", str(out), "--overwrite", "--split", "dev"]
    assert main(again) == 1
    assert "no qrels for split 'dev'" in capsys.readouterr().err


def test_load_beir_names_a_missing_split_and_a_query_without_id(tmp_path):
    root = _write_beir(tmp_path / "ds", [("d1", "x")], [("q1", "y")], [("q1", "d1", 1)])
    with pytest.raises(ArgusInputError, match=r"no qrels for split 'dev'.*splits there: test"):
        load_beir(root, split="dev")
    with open(root / "queries.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "who am I"}) + "\n")
    with pytest.raises(ArgusInputError, match=r"queries\.jsonl:2: query has no id"):
        load_beir(root)


def test_subsample_keeps_judged_documents_and_is_seeded(tmp_path):
    from argus_ir.eval import subsample

    docs = [(f"d{i}", f"text {i}") for i in range(20)]
    queries = [(f"q{i}", f"query {i}") for i in range(5)]
    judged = [(f"q{i}", f"d{i}", 1) for i in range(5)] + [("q0", f"d{i}", 0) for i in range(10, 20)]
    root = _write_beir(tmp_path / "big", docs, queries, judged)
    data = load_beir(root)
    small = subsample(data, max_queries=2, max_docs=6, seed=1)
    ids = {d.id for d in small.corpus}
    assert sorted(small.queries) == ["q0", "q1"] and {"d0", "d1"} <= ids and len(ids) == 6
    assert ids == {d.id for d in subsample(data, max_queries=2, max_docs=6, seed=1).corpus}
    assert small.name == "big-sub6" and small.notes["queries left out by max_queries"] == 3
    assert small.subset and not data.subset
    same = subsample(data)  # no limits: the same data, not a subset
    assert same.corpus == data.corpus and not same.subset


def test_ablations_reuse_the_diagnosis_and_embed_each_text_once(tmp_path, monkeypatch):
    from argus_ir.eval import remedies, search
    from argus_ir.testing import SCENARIO

    embedded: list[str] = []
    real = search.embed_texts

    def counting(encoder, texts, show_progress):
        embedded.extend(texts)
        return real(encoder, texts, show_progress)

    # the queries are embedded by the evaluation loop, the corpus and views by the cache
    monkeypatch.setattr(remedies, "embed_texts", counting)
    monkeypatch.setattr(search, "embed_texts", counting)
    root = _write_beir(
        tmp_path / "scenario",
        SCENARIO.documents,
        [("q1", SCENARIO.query)],
        [("q1", SCENARIO.target, 1)],
    )
    result = evaluate(
        load_beir(root),
        remedies=("original", "expansion", "merged"),
        ablations={"tau": [0.0], "k_aug": [1], "context_threshold": [None]},
        ablate="expansion",
        **{**SCENARIO.settings, "precision": "auto"},  # the stats say what "auto" resolved to
    )
    c = result.conditions
    assert list(c) == [
        "original",
        "expansion",
        "merged",
        "expansion tau=0.0",
        "expansion k_aug=1",
        "expansion context_threshold=off",
    ]
    n = result.documents
    assert c["expansion tau=0.0"].entries == n  # nothing lies below 0: no views
    assert c["expansion tau=0.0"].per_query == c["original"].per_query
    flagged_docs = c["merged"].entries - n
    assert 0 < flagged_docs <= c["expansion k_aug=1"].entries - n < c["expansion"].entries - n
    assert c["expansion context_threshold=off"].entries == c["expansion"].entries  # off by default
    assert c["merged"].stats["remedy"] == "merged"
    assert c["merged"].stats["views_of_window_filling_documents"] == 0  # short documents
    assert c["expansion k_aug=1"].stats["overrides"] == {"k_aug": 1}
    from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
    from argus_ir.encoder.base import native_bf16

    assert c["expansion k_aug=1"].stats["settings"] == {
        "targeting": "probe",
        "tau": 0.3,
        "k_aug": 1,
        "context_threshold": None,
        "max_views": None,
        "view_discount": DEFAULT_VIEW_DISCOUNT,
        "precision": "bf16" if native_bf16("cpu") else "fp32",  # "auto" as resolved here
    }
    assert c["expansion tau=0.0"].stats["settings"]["tau"] == 0.0
    texts = embedded[1:]  # the query batch, then the corpus and views
    assert len(texts) == len(set(texts))  # every text embedded once over all conditions
    assert c["expansion k_aug=1"].ingest_s > c["original"].ingest_s  # cached views still count
    # a remedy's ingest is its stages (the diagnosis computes the originals' vectors), as in
    # benchmarks/ingest_bench.py; conditions of one diagnosis scope share its seconds
    for name in ("expansion", "merged", "expansion k_aug=1"):
        stages = c[name].stats["ingest_stages_s"]
        assert c[name].ingest_s == pytest.approx(sum(stages.values()), abs=0.01)
    assert (
        c["expansion"].stats["ingest_stages_s"]["diagnosis"]
        == c["merged"].stats["ingest_stages_s"]["diagnosis"]
    )


def test_ablation_specs_parse_and_bad_ones_are_named():
    from argus_ir.eval import parse_ablations

    assert parse_ablations(["tau=0.1,0.2", "context_threshold=off,0.15", "k_aug=1"]) == {
        "tau": [0.1, 0.2],
        "context_threshold": [None, 0.15],
        "k_aug": [1],
    }
    with pytest.raises(
        ArgusInputError,
        match="'ablation depth=3': 'depth' is not a setting; choose from tau, k_aug, context_threshold",
    ):
        parse_ablations(["depth=3"])
    with pytest.raises(ArgusInputError, match="'x' is not a valid k_aug"):
        parse_ablations(["k_aug=1,x"])
    with pytest.raises(ArgusInputError, match="expected SETTING=V1,V2"):
        parse_ablations(["tau"])


def test_half_width_matches_scipy_confidence_interval():
    from scipy import stats

    from argus_ir.eval import half_width

    a = {f"q{i}": v for i, v in enumerate([0.2, 0.5, 0.1, 0.9, 0.4, 0.3])}
    b = {f"q{i}": v for i, v in enumerate([0.3, 0.5, 0.4, 0.8, 0.6, 0.2])}
    sig = paired_test(a, b)
    diff = np.array([b[q] - a[q] for q in sorted(a)])
    ci = stats.ttest_1samp(diff, 0.0).confidence_interval(0.95)
    assert half_width(sig) == pytest.approx((ci.high - ci.low) / 2)
    assert half_width(paired_test(a, a)) == 0.0  # no spread, no interval


def test_report_round_trips_through_json_and_draws_its_charts(tmp_path):
    from argus_ir.eval import Condition, EvalResult, report_markdown, write_results

    per_q = {"q1": {"nDCG@10": 0.5}, "q2": {"nDCG@10": 1.0}, "q3": {"nDCG@10": 0.0}}
    better = {"q1": {"nDCG@10": 1.0}, "q2": {"nDCG@10": 1.0}, "q3": {"nDCG@10": 0.5}}

    def cond(name, pq, overrides=None, tau=0.3):
        sig = (
            {}
            if name == "original"
            else {
                "nDCG@10": paired_test(
                    {q: v["nDCG@10"] for q, v in per_q.items()},
                    {q: v["nDCG@10"] for q, v in pq.items()},
                )
            }
        )
        stats = (
            {}
            if name == "original"
            else {
                "remedy": "expansion",
                "overrides": overrides or {},
                "settings": {"tau": tau, "k_aug": 2, "context_threshold": None},
            }
        )
        agg = {"nDCG@10": sum(v["nDCG@10"] for v in pq.values()) / 3}
        return Condition(name, 12, 1.2, 3.0, 0, stats, agg, pq, sig)

    result = EvalResult(
        "toy",
        "sentence-transformers/all-MiniLM-L6-v2",
        3,
        10,
        {
            "original": cond("original", per_q),
            "expansion": cond("expansion", better),
            "expansion tau=0.1": cond("expansion tau=0.1", per_q, {"tau": 0.1}, 0.1),
        },
        notes={"queries without judgements in test": 2},
    )
    write_results([result], tmp_path)
    back = EvalResult.from_dict(json.loads((tmp_path / "results.json").read_text())[0])
    assert back.conditions["expansion"].aggregate == pytest.approx({"nDCG@10": 5 / 6}, abs=1e-5)
    assert math.isnan(back.conditions["expansion tau=0.1"].significance["nDCG@10"].t)
    assert back.notes == result.notes
    text = (tmp_path / "results.md").read_text()
    assert "![Change of nDCG@10" in text and "## Ablations" in text
    assert "2 queries without judgements in test" in text
    for png in ("delta.png", "ablations.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the report drawn from the JSON alone says the same
    again = tmp_path / "again"
    again.mkdir()
    assert report_markdown([back], again) == text


def test_full_benchmark_average_is_per_retriever_and_skips_subsets():
    from argus_ir.eval import Condition, EvalResult, results_markdown

    def result(dataset, retriever, value, subset=False):
        c = Condition("original", 1, 1.0, 0.0, 0, {}, {"nDCG@10": value}, {})
        return EvalResult(dataset, retriever, 1, 1, {"original": c}, subset=subset)

    table = results_markdown(
        [
            result("a", "m/one", 0.2),
            result("b", "m/one", 0.4),
            result("a-sub9", "m/one", 0.9, subset=True),
            result("a", "m/two", 0.5),
        ]
    )
    assert "| Full Benchmark Avg | one | original | 0.3000 |" in table  # the subset left out
    assert "Full Benchmark Avg | two" not in table  # one dataset: no average


def test_documents_that_fill_the_window_are_found(minilm):
    from argus_ir.eval.search import _filling_the_window

    limit = minilm.sentence_transformer.max_seq_length  # 256 word pieces for MiniLM
    docs = [
        ("short", "Humphrey Bogart starred in Casablanca."),
        ("long", " ".join(["casablanca"] * limit)),  # + [CLS], [SEP]: past the limit
        ("edge", " ".join(["casablanca"] * (limit - 2))),  # exactly the limit
    ]
    assert _filling_the_window(minilm, docs) == {"long", "edge"}
