"""argus_ir.kb.llm: one-line knowledge from an LLM for the mentions no KB knows by name.

Plumbing with a scripted LLM here; the same path against the real llama.cpp server on loopback is
``test_llm_real.py::test_llm_knowledge_against_a_real_llama_cpp_server`` (``nox -s integration``).
"""

from __future__ import annotations

import pytest

from argus_ir.kb import KnowledgeBase, Passage, ReferenceKB
from argus_ir.kb.llm import LLMKnowledge, clean_reply, with_llm_knowledge
from argus_ir.llm.base import Generation
from argus_ir.testing.llm import ScriptedLLM

POST = "We spent a week hiking above Kranjska Gora with Tom and his dog."


@pytest.mark.parametrize(
    ("reply", "line"),
    [
        ("town in Slovenia", "town in Slovenia"),
        (
            '"Kranjska Gora is a ski resort town in Slovenia."\nMore text',
            "ski resort town in Slovenia",
        ),
        ("Answer: village in the Alps.", "village in the Alps"),
        ("UNKNOWN", None),
        ("I don't know, unknown to me", None),
        ("Kranjska Gora", None),  # only the name again
        ("", None),
        (None, None),
        ("x" * 300, "x" * 120),
    ],
)
def test_clean_reply(reply, line):
    assert clean_reply("Kranjska Gora", reply) == line


def test_a_reply_becomes_a_cached_generated_passage(tmp_path):
    llm = ScriptedLLM(["ski resort town in Slovenia"])
    knowledge = LLMKnowledge(llm, tmp_path / "cache")
    assert isinstance(knowledge, KnowledgeBase)
    [(passage, score)] = knowledge.lookup("Kranjska Gora", context=POST)
    assert passage.id.startswith("llm:") and score == 1.0
    assert passage.text == "Kranjska Gora: ski resort town in Slovenia."
    assert passage.description == "ski resort town in Slovenia"
    assert "Kranjska Gora" in llm.prompts[0] and "hiking above Kranjska Gora" in llm.prompts[0]
    assert knowledge.lookup("Kranjska Gora", context=POST) == [(passage, 1.0)]  # no second call
    assert knowledge.passage(passage.id) == passage and knowledge.calls == 1
    # a new process with the same cache asks nothing (the script is empty: a call would fail)
    again = LLMKnowledge(ScriptedLLM([]), tmp_path / "cache")
    assert again.lookup("Kranjska Gora", context=POST)[0][0] == passage and again.calls == 0


def test_unknown_failed_and_unnameable_give_nothing():
    llm = ScriptedLLM(["UNKNOWN", Generation(None, error="HTTP 500")])
    knowledge = LLMKnowledge(llm)
    assert knowledge.lookup("Zorblax", context="Zorblax happened.") == []
    assert knowledge.lookup("Quux", context="Quux again.") == []
    assert knowledge.lookup("42") == [] and len(llm.prompts) == 2  # no letters: never asked
    with pytest.raises(ValueError, match="k must be"):
        knowledge.lookup("Quux", k=0)


def test_behind_a_kb_the_llm_answers_only_what_the_kb_does_not_know_by_name():
    wiki = ReferenceKB.from_passages(
        [
            Passage("Slovenia", "Slovenia", "Country in Central Europe.", "country in Europe"),
            Passage("Gora", "Gora", "Gora is a word for mountain in Slavic languages.", ""),
        ]
    )
    llm = ScriptedLLM(["ski resort town in Slovenia", "UNKNOWN"])
    kb = with_llm_knowledge(wiki, LLMKnowledge(llm))
    assert kb.lookup("Slovenia", 2, label="GPE", context=POST) == wiki.lookup("Slovenia", 2)
    [(passage, _)] = kb.lookup("Kranjska Gora", 2, label="GPE", context=POST)
    assert kb.source_of(passage.id) == "llm"  # not the BM25 word match "Gora"
    # the LLM says nothing: the KB's word matches, as without it
    assert kb.lookup("Gora Valley", 2, context="the Gora Valley") == wiki.lookup("Gora Valley", 2)
    assert len(llm.prompts) == 2


def test_views_from_generated_knowledge_say_so(minilm, tmp_path):
    from argus_ir.pipeline import Argus

    wiki = ReferenceKB.from_passages([Passage("Slovenia", "Slovenia", "Country in Europe.", "")])
    # flag every entity (tau 1.0) so the remedy asks about each; one line per distinct prompt
    replies = ["ski resort town in Slovenia"] + ["UNKNOWN"] * 10
    kb = with_llm_knowledge(wiki, LLMKnowledge(ScriptedLLM(replies), tmp_path / "c"))
    views = list(Argus(remedy="descriptor", kb=kb, tau=1.0).augment([("p1", POST)]))
    assert views[0].text == POST
    [view] = views[1:]
    assert view.metadata["argus_kb_generated"] is True
    assert "ski resort town in Slovenia" in view.text
    plain = list(Argus(remedy="descriptor", kb=wiki, tau=1.0).augment([("p1", POST)]))
    assert all("argus_kb_generated" not in v.metadata for v in plain)


def test_cli_names_a_bad_kb_llm_spec_before_any_work(tmp_path, capsys):
    import json

    from argus_ir.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"_id": "a", "text": "Hello Kranj."}) + "\n", encoding="utf-8")
    argv = ["--quiet", "augment", str(corpus), "--out", str(tmp_path / "o.jsonl")]
    assert main([*argv, "--kb-llm", "carrier-pigeon:coop"]) == 1
    assert "--kb-llm: " in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_cued_source_answers_before_the_llm():
    from argus_ir.kb import CompositeKB

    wiki = ReferenceKB.from_passages([Passage("Paris", "Paris", "Capital of France.", "")])
    towns = ReferenceKB.from_passages([Passage("Kranj", "Kranj", "Kranj is a town.", "town")])
    places = CompositeKB(
        {"wikipedia": wiki, "towns": towns},
        routes={"GPE": ("wikipedia", "towns")},
        fallback=("wikipedia",),
        cues={"towns": lambda surface, label, context: "in " + surface in (context or "")},
    )
    llm = ScriptedLLM(["a person"])
    kb = with_llm_knowledge(places, LLMKnowledge(llm))
    # the tagger called the town a person; the cue sends it to the towns, not to the LLM
    [(passage, _)] = kb.lookup("Kranj", 2, label="PERSON", context="a wedding in Kranj")
    assert passage.id == "Kranj" and llm.prompts == []
    [(passage, _)] = kb.lookup("Kranj", 2, label="PERSON", context="Kranj said hello")
    assert kb.source_of(passage.id) == "llm" and len(llm.prompts) == 1
