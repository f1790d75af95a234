"""The ColDeR bias audit: pairs differ only in their factor, statistics, templates, bad input."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from argus_ir.bias import (
    SETTINGS,
    audit_biases,
    bm25_scorer,
    build_pairs,
    find_samples,
    load_redocred,
    load_templates,
    pair_corpus,
    paired_stat,
    score_settings,
)
from argus_ir.bias.data import _sentence
from argus_ir.bias.pairs import _replace_head
from argus_ir.errors import ArgusInputError


def _m(name, sent, start, end):
    return {"name": name, "sent_id": sent, "pos": [start, end], "type": "X"}


def _doc(title, sents, entities, labels):
    return {
        "title": title,
        "sents": [s.split() for s in sents],
        "vertexSet": entities,
        "labels": labels,
    }


# Marie Curie (head, entity 0; also "Curie"), Warsaw (tail, entity 1)
CURIE = _doc(
    "Marie Curie",
    [
        "Marie Curie was born in Warsaw in 1867 .",
        "Curie studied physics in Paris .",
        "Curie won two Nobel prizes .",
        "The university opened a new laboratory .",
        "Radium glows in the dark .",
        "Many prizes exist today .",
    ],
    [
        [_m("Marie Curie", 0, 0, 2), _m("Curie", 1, 0, 1), _m("Curie", 2, 0, 1)],
        [_m("Warsaw", 0, 5, 6)],
        [_m("Paris", 1, 4, 5)],
        [],  # an entity without mentions
    ],
    [
        {"r": "P19", "h": 0, "t": 1, "evidence": [0]},  # place of birth: usable
        {"r": "P69", "h": 0, "t": 2, "evidence": [1]},  # no template in Table A.5
        {"r": "P19", "h": 0, "t": 2, "evidence": []},  # no evidence annotation
        {"r": "P19", "h": 0, "t": 3, "evidence": [0]},  # tail without mentions
    ],
)
FILLER = _doc(
    "Rivers",
    [
        "Rivers flow into the sea .",
        "Fish live in rivers .",
        "Boats carry goods .",
        "Bridges cross water .",
        "Floods happen in spring .",
    ],
    [[_m("Rivers", 0, 0, 1)]],
    [],
)


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([CURIE, FILLER]), "utf-8")
    return path


def test_bad_input_is_counted_not_raised(tiny):
    docs, notes = load_redocred(tiny)
    assert notes == {"entities without mentions": 1, "documents without labels": 1}
    samples, notes = find_samples(docs)
    assert len(samples) == 1 and samples[0].query == "Where was Marie Curie born?"
    assert notes["relations without a template"] == 1
    assert notes["relations without a single evidence sentence"] == 1
    assert notes["relations whose head or tail has no mention"] == 1
    assert notes["relation ids without a template: P69 (1)"] == 1
    s = samples[0]
    assert (s.evidence, s.head_only, s.neutral) == (0, (1, 2), (3, 4, 5))
    assert (s.short_name, s.long_name) == ("Curie", "Marie Curie")
    pairs, notes = build_pairs(docs, n=5)
    assert {k: len(v) for k, v in pairs.items()} == dict.fromkeys(SETTINGS, 1)
    assert notes["foil: 1 pairs of the 5 asked"] == 1  # fewer than asked: counted


def test_malformed_files_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"title": "T", "sents": [["a"]]}]), "utf-8")
    with pytest.raises(ArgusInputError, match=r"bad.json: document 0 \('T'\): no 'vertexSet'"):
        load_redocred(bad)
    bad.write_text("{", "utf-8")
    with pytest.raises(ArgusInputError, match="not valid JSON"):
        load_redocred(bad)
    with pytest.raises(ArgusInputError, match="no such"):
        load_redocred(tmp_path / "missing.json")
    tpl = tmp_path / "t.json"
    tpl.write_text(json.dumps({"P1": "What is it?"}), "utf-8")
    with pytest.raises(ArgusInputError, match=r"'P1' lacks the \{head\} placeholder"):
        load_templates(tpl)


def test_paired_t_matches_a_hand_computation():
    s1 = np.array([3.0, 5.0, 4.0, 6.0])
    s2 = np.array([1.0, 4.0, 4.0, 3.0])
    # differences 2, 1, 0, 3: mean 1.5, sample sd sqrt(5/3), t = 1.5 / (sd / 2)
    sd = math.sqrt(((0.5**2) + (0.5**2) + (1.5**2) + (1.5**2)) / 3)
    stat = paired_stat("brevity", "x", s1, s2)
    assert stat.t == pytest.approx(1.5 / (sd / 2))
    assert stat.d_z == pytest.approx(1.5 / sd) == pytest.approx(stat.t / 2)
    from scipy.stats import t as student

    assert stat.p == pytest.approx(2 * student.sf(stat.t, 3))
    assert stat.d1_wins == 0.75 and stat.mean_diff == 1.5 and stat.n == 4
    same = paired_stat("position", "bm25", s1, s1)
    assert math.isnan(same.t) and same.p == 1.0 and same.d1_wins == 0.0


@pytest.fixture(scope="module")
def dev(shared_data):
    path = shared_data / "redocred" / "dev_revised.json"
    if not path.exists():
        pytest.skip("the shared Re-DocRED dev file is not here")
    docs, _ = load_redocred(path)
    samples, _ = find_samples(docs)
    pairs, notes = build_pairs(docs, n=250, seed=0)
    return path, docs, samples, pairs, notes


def _names(text, names):
    low = text.lower()
    return sum(low.count(n.lower()) for n in names)


def test_each_pair_differs_only_in_its_factor(dev):
    _, docs, samples, pairs, _ = dev
    checked = Counter()
    for setting, ps in pairs.items():
        for p in ps:
            s = samples[p.sample]
            doc = docs[s.doc]

            def text(i, doc=doc):
                return _sentence(doc.sents[i])

            ev, rest = text(s.evidence), " ".join(text(i) for i in s.neutral)
            assert p.query == s.query or setting == "literal"
            if setting == "answer_importance":
                h = text(s.head_only[0])
                assert (p.d1, p.d2) == (f"{ev} {rest}", f"{h} {rest}")
            elif setting == "position":
                assert (p.d1, p.d2) == (f"{ev} {rest}", f"{rest} {ev}")
            elif setting == "literal":
                ids = range(len(doc.sents))
                masked = " ".join(_replace_head(doc, s.head, "@@HEAD@@", ids))
                assert "@@HEAD@@" in masked
                assert p.d1 == masked.replace("@@HEAD@@", s.short_name)
                assert p.d2 == masked.replace("@@HEAD@@", s.long_name)
                assert p.query == s.query.replace(s.long_name, s.short_name)
            elif setting == "brevity":
                assert p.d1 == ev and p.d2 == f"{ev} {rest}"
            elif setting == "repetition":
                more = [text(i) for i in s.head_only[:2]]
                assert p.d1 == " ".join([ev, *more])
                tail = p.d2.removeprefix(ev + " ")
                assert tail != p.d2 and tail in [
                    f"{text(a)} {text(b)}" for a in s.neutral for b in s.neutral if a != b
                ]
            elif setting == "foil":
                before, _, after = p.d1.partition(f" {ev} ")
                assert before == after and _names(before, [s.long_name]) == 0
                assert p.d2.startswith(f"{s.long_name}. {s.long_name}. ")
            checked[setting] += 1
            # what the settings hold fixed: the rest mentions neither head nor tail
            tails = {m.name for m in doc.entities[s.tail]}
            assert _names(rest, tails) == 0 and _names(rest, {s.short_name, s.long_name}) == 0
            if setting in ("answer_importance", "foil", "repetition"):
                assert _names(p.d2, tails) == 0 or setting == "repetition"
    assert set(checked) == set(SETTINGS) and min(checked.values()) >= 200


def test_templates_cover_the_relations_in_the_data(dev):
    path, _, samples, _, _ = dev
    raw = json.loads(path.read_text("utf-8"))
    relations = Counter(lab["r"] for d in raw for lab in d["labels"])
    templates = load_templates()
    assert len(templates) == 51 and set(templates) <= set(relations)
    assert {s.relation for s in samples} <= set(templates)
    without = sum(c for r, c in relations.items() if r not in templates)
    _, found = find_samples(load_redocred(path)[0])
    assert found["relations without a template"] == without > 0


def test_bm25_prefers_the_foil_and_ignores_position(dev):
    *_, pairs, _ = dev
    stats = {s.setting: s for s in score_settings(pairs, bm25_scorer(pair_corpus(pairs)), "bm25")}
    assert math.isnan(stats["position"].t)  # a bag of words has no positions
    assert stats["foil"].t < 0 and stats["brevity"].t > 0


def test_the_audit_with_minilm_writes_its_report(tiny, tmp_path, capsys):
    from argus_ir.cli import main

    out = tmp_path / "bias"
    assert main(["-q", "bias", str(tiny), "--out", str(out), "--n", "5"]) == 0
    saved = json.loads((out / "results.json").read_text())
    assert {(s["setting"], s["retriever"]) for s in saved["stats"]} >= {
        ("foil", "bm25"),
        ("foil", "minilm"),
    }
    assert (out / "bias.png").stat().st_size > 1000
    assert "| foil |" in (out / "README.md").read_text()
    report = audit_biases(tiny, [], n=5)
    assert report.pairs == dict.fromkeys(SETTINGS, 1)


def test_an_earlier_report_of_the_same_pairs_supplies_its_steps(tiny):
    first = audit_biases(tiny, [], n=5)
    assert first.pending == [] and len(first.pairs_sha256) == 64
    marked = [replace(s, t=123.0) if s.setting == "foil" else s for s in first.stats]
    again = audit_biases(tiny, [], n=5, previous=replace(first, stats=marked))
    assert {s.setting: s.t for s in again.stats}["foil"] == 123.0  # taken, not scored again
    with pytest.raises(ArgusInputError, match="other pairs"):
        audit_biases(tiny, [], n=5, previous=replace(first, pairs_sha256="0" * 64))
    with pytest.raises(ArgusInputError, match="no pairs fingerprint"):
        audit_biases(tiny, [], n=5, previous=replace(first, pairs_sha256=""))


def test_a_stopped_audit_resumes_from_its_saved_steps(tiny, tmp_path, capsys):
    from argus_ir.bias import load_bias_report, write_bias_report
    from argus_ir.cli import main

    out = tmp_path / "bias"

    def stop_after_bm25(partial):
        write_bias_report(partial, out)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        audit_biases(tiny, ["minilm"], n=5, on_step=stop_after_bm25)
    saved = load_bias_report(out)
    assert {s.retriever for s in saved.stats} == {"bm25"}
    assert saved.pending == ["minilm: " + ", ".join(SETTINGS)]
    assert "Not measured yet" in (out / "README.md").read_text()
    marked = [replace(s, t=99.0) if s.setting == "foil" else s for s in saved.stats]
    write_bias_report(replace(saved, stats=marked), out)
    assert main(["-q", "bias", str(tiny), "--out", str(out), "--n", "5", "--resume"]) == 0
    done = load_bias_report(out)
    assert done.pending == [] and {s.retriever for s in done.stats} == {"bm25", "minilm"}
    assert next(s for s in done.stats if s.setting == "foil").t == 99.0  # bm25 was not rerun
    assert "Not measured yet" not in (out / "README.md").read_text()
