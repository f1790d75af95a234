"""Synthesis with the real offline LLM, SmolLM2-135M-Instruct (GGUF):

- ``slow``: in-process through the transformers backend;
- ``integration``: over HTTP through llama.cpp's OpenAI-compatible server on loopback
  (``nox -s integration`` installs it).

A 135M model often fails the guard; what must hold is that every reply either passes the guard or
ends in a descriptor fallback with its reason, the original always comes first, and the same input
gives the same output.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from argus_ir import Argus, RemedyStats
from argus_ir.remedy.synthesis import insertions_only

DOC = ("bogart", "Humphrey Bogart once filmed a scene in Lucknow.")


def _smollm2():
    from argus_ir.errors import MissingExtraError
    from argus_ir.llm import smollm2_gguf

    try:
        return smollm2_gguf()
    except MissingExtraError as exc:
        pytest.skip(str(exc))


def _check_synthesis(llm):
    stats = RemedyStats()
    argus = Argus(remedy="synthesis", llm=llm)
    views = list(argus.augment([DOC], stats=stats))
    assert views[0].is_original and views[0].text == DOC[1]
    assert stats.llm_calls in (1, 2) and not stats.failures
    for view in views[1:]:
        kind = view.metadata["argus_view"]
        assert kind in ("synthesis", "descriptor")
        assert insertions_only(DOC[1], view.text)
        if kind == "descriptor":
            assert view.metadata["argus_fallback"].startswith("synthesis rejected twice")
    assert len(views) - 1 + stats.llm_unchanged == 1  # one view, or the model added nothing
    again = list(Argus(remedy="synthesis", llm=llm).augment([DOC]))
    assert [(v.id, v.text) for v in again] == [(v.id, v.text) for v in views]
    return views, stats


@pytest.mark.slow
def test_synthesis_through_transformers_with_smollm2():
    pytest.importorskip("gguf")
    _smollm2()
    from argus_ir.llm import TransformersLLM

    llm = TransformersLLM(device="cpu", max_tokens=96)
    (gen,) = llm.generate(["Name one colour. Answer with one word."], max_tokens=8)
    assert gen.ok and gen.text.strip()
    _check_synthesis(llm)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (nox -s integration installs it)")
    gguf = _smollm2()
    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", str(os.cpu_count() or 1), "--seed", "0",
    ]  # fmt: skip
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = open(log_path, "wb")  # noqa: SIM115 (open for the server's life; a pipe would fill up)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited: {log_path.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"no server within 120 s: {log_path.read_text()[-2000:]}")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.mark.integration
def test_http_backend_against_a_real_llama_cpp_server(llama_server):
    from argus_ir.llm import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM(llama_server, "smollm2", timeout=120, concurrency=1, max_tokens=96)
    first = llm.generate(["Name one colour. Answer with one word.", "Say hello."], max_tokens=8)
    assert all(g.ok and g.text.strip() for g in first)
    assert [g.text for g in llm.generate(["Say hello."], max_tokens=8)] == [first[1].text]
    _check_synthesis(llm)


@pytest.mark.integration
def test_a_server_that_goes_away_leaves_fallbacks_not_failures(llama_server):
    from argus_ir.llm import OpenAICompatibleLLM

    dead = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    llm = OpenAICompatibleLLM(dead, "smollm2", timeout=2, max_retries=1, backoff=0.05)
    stats = RemedyStats()
    views = list(Argus(remedy="synthesis", llm=llm).augment([DOC], stats=stats))
    assert views[0].text == DOC[1] and views[1].metadata["argus_view"] == "descriptor"
    assert "cannot reach" in stats.fallback_reasons[0][1] and stats.llm_calls == 2


SIRA_DOCS = [
    ("d1", "Aspirin reduces fever and pain in adults."),
    ("d2", "Statins lower cholesterol, which drives plaque in coronary arteries."),
]


def _check_sira(llm, cache_folder):
    from argus_ir.sira import CallCache, SiraIndex, enrich_corpus, expand_queries

    first = enrich_corpus(SIRA_DOCS, llm, cache=CallCache(cache_folder), max_tokens=48)
    s = first.stats
    assert s.calls == 2 and s.failed == 0 and s.cache_hits == 0
    # every reply is used or counted, every parsed phrase kept or counted
    assert s.kept + s.too_long + s.copied == s.phrases
    again = enrich_corpus(SIRA_DOCS, llm, cache=CallCache(cache_folder), max_tokens=48)
    assert again.stats.cache_hits == 2 and again.phrases == first.phrases
    index = SiraIndex.build(SIRA_DOCS, enrichment=first.phrases, tau=1.0)
    assert index.stats.phrases == sum(len(p) for p in first.phrases.values())
    sketch = expand_queries({"q": "Do statins prevent heart attacks?"}, llm, max_tokens=48)
    assert sketch.stats.calls == 1 and sketch.stats.failed == 0
    terms, _ = index.expansion_terms(
        sketch.phrases.get("q", []), "Do statins prevent heart attacks?"
    )
    assert all(index.df(t) > 0 for t in terms)


@pytest.mark.slow
def test_sira_through_transformers_with_smollm2(tmp_path):
    pytest.importorskip("gguf")
    _smollm2()
    from argus_ir.llm import TransformersLLM

    _check_sira(TransformersLLM(device="cpu", max_tokens=48), tmp_path)


@pytest.mark.integration
def test_sira_command_against_a_real_llama_cpp_server(llama_server, tmp_path, capsys):
    import json

    from argus_ir.cli import main
    from argus_ir.llm import OpenAICompatibleLLM

    _check_sira(OpenAICompatibleLLM(llama_server, "smollm2", max_tokens=48), tmp_path / "api")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in SIRA_DOCS))
    llm = ["--llm", f"openai:{llama_server}@smollm2"]
    idx = tmp_path / "idx"
    assert main(["-q", "sira", "index", str(corpus), "--out", str(idx), *llm]) == 0
    assert "corpus: 2 LLM calls (0 cached" in capsys.readouterr().err
    stored = [json.loads(line)["text"] for line in (idx / "documents.jsonl").open()]
    assert stored == [t for _, t in SIRA_DOCS]
    for cached in (0, 1):  # the second search is answered from the cache
        assert main(["-q", "sira", "search", str(idx), "statins", "and", "heart", *llm]) == 0
        assert f"query: 1 LLM calls ({cached} cached" in capsys.readouterr().err


ENTITY_TEXTS = [
    "Marie Curie discovered radium and polonium in Paris with Pierre Curie.",
    "Aspirin, sold by Bayer since 1899, lowers the risk of a heart attack.",
]


def _check_llm_entities(llm, cache_folder):
    from argus_ir.llm import CallCache
    from argus_ir.text.mentions import LLMMentions

    first = LLMMentions(llm, cache=CallCache(cache_folder), max_tokens=64)
    found = first.extract(ENTITY_TEXTS)
    assert first.notes["LLM calls"] == 2 and not first.notes["failed calls"]
    for text, mentions in zip(ENTITY_TEXTS, found):  # grounded, whatever the model listed
        assert all(text[m.start : m.end] == m.text and m.label == "LLM" for m in mentions)
        assert all(a.end <= b.start for a, b in itertools.pairwise(mentions))
    again = LLMMentions(llm, cache=CallCache(cache_folder), max_tokens=64)
    assert again.extract(ENTITY_TEXTS) == found and again.notes["cached"] == 2
    return found


@pytest.mark.slow
def test_llm_entities_through_transformers_with_smollm2(tmp_path):
    pytest.importorskip("gguf")
    _smollm2()
    from argus_ir.llm import TransformersLLM

    _check_llm_entities(TransformersLLM(device="cpu"), tmp_path)


@pytest.mark.integration
def test_llm_entities_against_a_real_llama_cpp_server(llama_server, tmp_path):
    from argus_ir.llm import OpenAICompatibleLLM

    _check_llm_entities(OpenAICompatibleLLM(llama_server, "smollm2"), tmp_path)


@pytest.mark.integration
def test_llm_knowledge_against_a_real_llama_cpp_server(llama_server, tmp_path, capsys):
    """``argus augment --kb-llm openai:URL@MODEL``: the real server describes what the KB does not
    know by name; a 135M model may answer badly, so what must hold is the plumbing: every
    generated passage is marked in the lineage, replies are cached beside --out (a second run
    makes no call: the server is told to go away first) and originals pass through."""
    import json

    from argus_ir.cli import main
    from argus_ir.kb.llm import LLMKnowledge
    from argus_ir.llm import OpenAICompatibleLLM

    knowledge = LLMKnowledge(OpenAICompatibleLLM(llama_server, "smollm2", max_tokens=32))
    hits = knowledge.lookup("Kranjska Gora", context="We hiked above Kranjska Gora in May.")
    assert knowledge.calls == 1 and len(hits) <= 1
    for passage, _ in hits:
        assert passage.id.startswith("llm:") and passage.text.startswith("Kranjska Gora: ")

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"_id": "p1", "text": "We hiked above Kranjska Gora with Tom in May."}) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    argv = ["--quiet", "augment", str(corpus), "--out", str(out), "--tau", "1.0"]
    argv += ["--kb", "wikipedia", "--kb-llm", f"openai:{llama_server}@smollm2"]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["_id"] == "p1" and rows[0]["metadata"]["argus_view"] == "original"
    for row in rows[1:]:
        generated = any(i.startswith("llm:") for i in row["metadata"]["argus_kb_id"].split("|"))
        assert row["metadata"].get("argus_kb_generated", False) is generated
    cache = tmp_path / "out.jsonl.kb-llm-cache"
    assert cache.is_dir() and any(cache.iterdir())
    again = tmp_path / "again.jsonl"
    dead = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens: only the cache can answer
    argv2 = [a if a != str(out) else str(again) for a in argv]
    argv2[-1] = f"openai:{dead}@smollm2"
    # the cache is keyed by the model's fingerprint, which names the model, not the URL
    (tmp_path / "again.jsonl.kb-llm-cache").symlink_to(cache, target_is_directory=True)
    assert main(argv2) == 0
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
