"""argus_ir.kb.llm: one-line knowledge from an LLM for the mentions no KB knows by name.

Plumbing with a scripted LLM here, and ``argus augment --kb-llm`` against an OpenAI-compatible
server on loopback that answers, fails or never answers (what the stats count, the timeout and
retries it is given, the give-up); the same path against the real llama.cpp server on loopback is
``test_llm_real.py::test_llm_knowledge_against_a_real_llama_cpp_server`` (``nox -s integration``).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from argus_ir.kb import KnowledgeBase, Passage, ReferenceKB
from argus_ir.kb.llm import GIVE_UP_AFTER, LLMKnowledge, clean_reply, with_llm_knowledge
from argus_ir.llm.base import Generation
from argus_ir.remedy import RemedyStats
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


def test_lookups_are_counted_and_failures_in_a_row_stop_the_asking():
    failed = Generation(None, error="HTTP 500", attempts=3, server_failed=True)
    replies = ["town", failed, failed, "UNKNOWN", *[failed] * GIVE_UP_AFTER]
    llm = ScriptedLLM(replies)
    wiki = ReferenceKB.from_passages([Passage("Gora", "Gora", "Gora is a mountain word.", "")])
    knowledge = LLMKnowledge(llm)
    kb = with_llm_knowledge(wiki, knowledge)
    stats = RemedyStats()
    for name in ["Aa", "Bb", "Cc", "Dd"]:  # a reply (even UNKNOWN) ends a run of failures
        kb.lookup(name, 2, context=f"{name} was here.")
    stats.count_kb_llm(kb)
    assert (stats.kb_llm_calls, stats.kb_llm_failures, stats.kb_llm_gave_up) == (8, 2, "")
    assert stats.kb_llm_last_error == "'Cc': HTTP 500"
    for name in [f"Name{i}" for i in range(GIVE_UP_AFTER)]:
        kb.lookup(name, 2, context=f"{name} was here.")
    assert (
        knowledge.gave_up and f"after {GIVE_UP_AFTER} failed lookups in a row" in knowledge.gave_up
    )
    # given up: nothing more is asked, and the KB's own word matches answer as without the LLM
    assert kb.lookup("Gora Valley", 2, context="the Gora Valley") == wiki.lookup("Gora Valley", 2)
    assert len(llm.prompts) == 4 + GIVE_UP_AFTER and not knowledge.knows("Gora Valley")
    stats.count_kb_llm(kb)
    assert stats.kb_llm_calls == 8 + 3 * GIVE_UP_AFTER == knowledge.calls
    assert stats.kb_llm_failures == 2 + GIVE_UP_AFTER == knowledge.failures
    assert stats.kb_llm_gave_up == knowledge.gave_up
    # a checkpoint keeps the counts; one written before they existed reads as none
    assert RemedyStats.from_dict(stats.to_dict()) == stats
    old = {k: v for k, v in stats.to_dict().items() if not k.startswith("kb_llm")}
    assert RemedyStats.from_dict(old).kb_llm_calls == 0
    assert RemedyStats.from_dict(old).kb_llm_gave_up == ""


def test_I8_lookups_the_server_refused_never_stop_the_asking():
    """Issue 54, item 8: HTTP 400s and malformed replies are the prompt's failures, not the
    server's: any number of them in a row leaves the LLM on (three used to switch it off)."""
    refused = Generation(None, error="HTTP 400: prompt too long", attempts=1)
    llm = ScriptedLLM([*[refused] * (2 * GIVE_UP_AFTER), "town in Slovenia"])
    knowledge = LLMKnowledge(llm)
    for i in range(2 * GIVE_UP_AFTER):
        assert knowledge.lookup(f"Name{i}", context=f"Name{i} was here.") == []
    assert knowledge.gave_up == "" and knowledge.failures == 2 * GIVE_UP_AFTER
    assert knowledge.lookup("Kranjska Gora", context=POST)[0][0].description == "town in Slovenia"


def test_I8_a_given_up_llm_is_asked_again_after_the_cool_down():
    """Issue 54, item 8: after giving up, nothing is asked until the cool-down has passed; then one
    lookup asks, a failure gives up again, and a reply brings the LLM back for good."""
    import time

    down = Generation(None, error="cannot reach the server", attempts=1, server_failed=True)
    llm = ScriptedLLM([*[down] * GIVE_UP_AFTER, down, "town in Slovenia", "ski resort"])
    knowledge = LLMKnowledge(llm, cool_down=0.2)
    for i in range(GIVE_UP_AFTER):
        knowledge.lookup(f"Name{i}", context="x")
    assert knowledge.gave_up and "asks again 0.2 s later" in knowledge.gave_up
    assert knowledge.lookup("Other", context="x") == [] and len(llm.prompts) == GIVE_UP_AFTER
    time.sleep(0.25)
    assert knowledge.lookup("Probe", context="x") == []  # one probe, failed: given up again
    assert knowledge.gave_up and len(llm.prompts) == GIVE_UP_AFTER + 1
    assert knowledge.lookup("Other", context="x") == [] and len(llm.prompts) == GIVE_UP_AFTER + 1
    time.sleep(0.25)
    assert knowledge.lookup("Kranjska Gora", context=POST)  # the server is back
    assert knowledge.gave_up == ""
    assert knowledge.lookup("Bled", context="Bled")[0][0].description == "ski resort"
    with pytest.raises(ValueError, match="cool_down"):
        LLMKnowledge(llm, cool_down=-1)


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


# -- argus augment --kb-llm against a real OpenAI-compatible server on loopback ------------------

KB_LLM_CORPUS = [
    {"_id": "d1", "text": "We spent a week hiking above Kranjska Gora with Tom Vrhovnik."},
    {"_id": "d2", "text": "Zorblax Quintero sold his bakery in Vemmerkrag to Ilsa Brandvold."},
    {"_id": "d3", "text": "Rain fell all day."},
    {"_id": "d4", "text": "The train to Paris was late again."},
]


class LoopbackLLM:
    """An OpenAI-compatible chat server on 127.0.0.1 that answers request ``i`` with
    ``answer(i)``: a reply text, an HTTP status (int), or ``None`` to hold the request without
    a reply until the server stops (a server that never answers)."""

    def __init__(self, answer):
        self.requests = 0
        self.statuses: list[int] = []
        lock, release = threading.Lock(), threading.Event()
        self.release = release
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    reply = answer(server.requests)
                    server.requests += 1
                if reply is None:
                    release.wait(30)  # held past any client timeout; freed at shutdown
                    return
                status = reply if isinstance(reply, int) else 200
                server.statuses.append(status)
                body = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                self.send_response(status)
                self.end_headers()
                self.wfile.write(json.dumps(body).encode() if status == 200 else b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.spec = f"openai:http://127.0.0.1:{self.httpd.server_address[1]}/v1@tiny"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _augment_with_kb_llm(tmp_path, name, spec, *options):
    """``argus augment`` of the corpus above with a two-passage KB and ``--kb-llm spec``, every
    entity flagged; its exit status, stats totals and output records."""
    from argus_ir.cli import main

    corpus, kb = tmp_path / "c.jsonl", tmp_path / "kb.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in KB_LLM_CORPUS), encoding="utf-8")
    kb.write_text(
        json.dumps({"id": "Paris", "title": "Paris", "text": "Paris is the capital of France."})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / f"{name}.jsonl"
    argv = ["--quiet", "augment", str(corpus), "--out", str(out), "--kb", str(kb)]
    code = main([*argv, "--tau", "1.0", "--kb-llm", spec, *options])
    if code != 0:
        return code, None, None
    totals = json.loads(out.with_name(out.name + ".stats.json").read_text())["totals"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return code, totals, rows


def test_augment_stats_count_the_kb_llm_calls_and_failures(tmp_path, capsys):
    pytest.importorskip("spacy")
    # every other call is refused (HTTP 400, not retried): never three failures in a row, so
    # every flagged mention is asked once
    server = LoopbackLLM(lambda i: 400 if i % 2 else "village in the Alps")
    try:
        code, totals, rows = _augment_with_kb_llm(tmp_path, "half", server.spec)
    finally:
        server.close()
    assert code == 0, capsys.readouterr().err
    failed = server.statuses.count(400)
    assert server.requests >= 4 and failed >= 2
    assert totals["kb_llm_calls"] == server.requests
    assert totals["kb_llm_failures"] == failed and "HTTP 400" in totals["kb_llm_last_error"]
    assert totals["kb_llm_gave_up"] == "" and totals["llm_calls"] == 0  # no synthesis here
    assert any(r["metadata"].get("argus_kb_generated") for r in rows)
    out = capsys.readouterr().out
    assert f"{server.requests} KB-LLM calls ({failed} failed lookups)" in out
    # a server answering 500: each lookup's retries count as calls, until the run gives up
    server = LoopbackLLM(lambda i: 500)
    try:
        code, totals, _ = _augment_with_kb_llm(tmp_path, "down", server.spec, "--llm-retries", "1")
    finally:
        server.close()
    assert code == 0, capsys.readouterr().err
    assert totals["kb_llm_calls"] == server.requests == 2 * GIVE_UP_AFTER
    assert totals["kb_llm_failures"] == GIVE_UP_AFTER and "HTTP 500" in totals["kb_llm_gave_up"]
    out = capsys.readouterr().out
    assert f"{2 * GIVE_UP_AFTER} KB-LLM calls ({GIVE_UP_AFTER} failed lookups)" in out


def test_llm_cool_down_sets_when_a_given_up_kb_llm_is_asked_again(tmp_path, capsys):
    """``--llm-cool-down`` reaches the --kb-llm's give-up: at 0 s every lookup after the give-up
    asks the server again (one call each, the server still failing), where the default 60 s asks
    no more in this run; the give-up says when it asks again."""
    pytest.importorskip("spacy")
    calls = {}
    for cool_down in (None, "0"):
        server = LoopbackLLM(lambda i: 500)
        extra = ["--llm-cool-down", cool_down] if cool_down else []
        try:
            code, totals, _ = _augment_with_kb_llm(
                tmp_path, f"cool-{cool_down}", server.spec, "--llm-retries", "0", *extra
            )
        finally:
            server.close()
        assert code == 0, capsys.readouterr().err
        assert totals["kb_llm_calls"] == server.requests
        calls[cool_down] = server.requests
        assert f"asks again {cool_down or 60} s later" in totals["kb_llm_gave_up"]
    lookups = calls["0"]  # every lookup asked once
    assert calls[None] == GIVE_UP_AFTER < lookups


def test_a_dead_kb_llm_is_bounded_and_given_up_on_and_the_run_goes_on(tmp_path, capsys):
    pytest.importorskip("spacy")
    # a server that never answers: --llm-timeout and --llm-retries reach the --kb-llm backend
    # (the default 30 s timeout and 2 retries would make 3 calls per lookup, not 2)
    server = LoopbackLLM(lambda i: None)
    try:
        code, totals, rows = _augment_with_kb_llm(
            tmp_path, "silent", server.spec, "--llm-timeout", "0.3", "--llm-retries", "1"
        )
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 0, err
    assert server.requests == totals["kb_llm_calls"] == 2 * GIVE_UP_AFTER
    assert totals["kb_llm_failures"] == GIVE_UP_AFTER
    assert f"after {GIVE_UP_AFTER} failed lookups in a row" in totals["kb_llm_gave_up"]
    assert "within 0.3 s" in totals["kb_llm_last_error"]
    assert "stopped asking" in err and "goes on without LLM knowledge" in err
    # the run went on: every original written, the KB's own passage still given as a view
    originals = [r["_id"] for r in rows if r["metadata"]["argus_view"] == "original"]
    assert originals == ["d1", "d2", "d3", "d4"]
    assert any(r["metadata"].get("argus_kb_id") == "Paris" for r in rows)
    # nothing listening at all: the same, at once
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = f"openai:http://127.0.0.1:{port}/v1@tiny"
    code, totals, _ = _augment_with_kb_llm(tmp_path, "nobody", spec, "--llm-retries", "0")
    assert code == 0, capsys.readouterr().err
    assert (totals["kb_llm_calls"], totals["kb_llm_failures"]) == (GIVE_UP_AFTER, GIVE_UP_AFTER)
    assert "cannot reach" in totals["kb_llm_gave_up"]


def test_kb_llm_waits_30_seconds_by_default_and_what_llm_timeout_says(tmp_path):
    # the bound on a server that never answers: 30 s a reply unless --llm-timeout says otherwise
    from argus_ir.cli.augment import _kb_with_llm
    from argus_ir.cli.main import build_parser
    from argus_ir.kb.llm import TIMEOUT

    def timeout(*extra: str) -> float:
        out = str(tmp_path / "o.jsonl")
        spec = "openai:http://127.0.0.1:9/v1"
        args = build_parser().parse_args(
            ["augment", "c.jsonl", "--out", out, "--kb", "wikipedia", "--kb-llm", spec, *extra]
        )
        kb = _kb_with_llm(args)
        return float(kb.sources["llm"].llm.timeout)

    assert timeout() == TIMEOUT == 30.0
    assert timeout("--llm-timeout", "2.5") == 2.5


def test_L12_lines_that_break_the_prompts_rules_are_refused_and_counted():
    """Issue 48, L12: 120-character "(blah blah ...)" lines became views' descriptions. A line of
    more than the prompt's twelve words, or with a control or bidirectional character or an
    over-long word, gives no passage now, and is counted (``kb_llm_refused``)."""
    blah = "(" + " ".join(["blah"] * 24) + ")"
    llm = ScriptedLLM([blah, "town in \u202eainevolS", "y" * 60, "ski resort town in Slovenia"])
    knowledge = LLMKnowledge(llm)
    for name in ("Kranjska Gora", "Bled", "Bohinj"):
        assert knowledge.lookup(name, context=f"{name} was lovely.") == []
    [(passage, _)] = knowledge.lookup("Vogel", context="Vogel was lovely.")
    assert passage.description == "ski resort town in Slovenia"
    stats = RemedyStats()
    stats.count_kb_llm(knowledge)
    assert stats.kb_llm_refused == 3 and stats.kb_llm_failures == 0
    assert stats.to_dict()["kb_llm_refused"] == 3
