"""The HTTP backend against servers that misbehave below HTTP (issue 54, items 6 to 8): a raw
socket server on loopback drips the status line, headers or an error body, sends a garbage status
line, a truncated body or an over-long header, refuses HTTP 400s, or goes down and comes back.

The time bounds here are correctness bounds, not speed: a deadline of 1 s must end a call that
the server would hold for ten or more."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable

import pytest

from argus_ir.llm import OpenAICompatibleLLM


def reply(text: str = "default", status: str = "200 OK") -> bytes:
    """A whole, well-formed HTTP reply carrying one completion."""
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
    return http(status, body.encode())


def http(status: str, body: bytes, headers: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
    return head.encode() + body


Step = bytes | Callable[[socket.socket, "RawServer"], None]


def drip(data: bytes, every: float, then: bytes = b"", first: bytes = b"") -> Step:
    """Send ``first`` at once, ``data`` a byte every ``every`` seconds, then ``then`` at once."""

    def play(conn: socket.socket, server: RawServer) -> None:
        conn.sendall(first)
        for i in range(len(data)):
            if server.stopping.is_set():
                return
            conn.sendall(data[i : i + 1])
            time.sleep(every)
        conn.sendall(then)

    return play


class RawServer:
    """HTTP on raw sockets: each connection reads one request and plays the next step (bytes sent
    as they are, or a function of the socket); with no step left it sends ``reply()``."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[dict] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def up(self) -> None:
        """Listen (again, on the same port once it had one)."""
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._accepting = threading.Thread(target=self._accept, args=(self._sock,), daemon=True)
        self._accepting.start()

    def down(self) -> None:
        """Stop listening: connecting is refused until :meth:`up`."""
        self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() (a close alone would not)
        self._sock.close()
        self._accepting.join(5)

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:  # closed: down() or teardown
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, body = data.split(b"\r\n\r\n", 1)
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            with self.lock:
                self.requests.append(json.loads(body))
                step = self.steps.pop(0) if self.steps else reply()
            if isinstance(step, bytes):
                conn.sendall(step)
            else:
                step(conn, self)
        except OSError:  # the client hung up (its deadline passed)
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.down()


@pytest.fixture
def raw():
    server = RawServer()
    yield server
    server.close()


def _llm(server: RawServer, **kw) -> OpenAICompatibleLLM:
    kw.setdefault("backoff", 0.01)
    return OpenAICompatibleLLM(server.url, "tiny", **kw)


def _timed(llm: OpenAICompatibleLLM, prompts: list[str]):
    start = time.monotonic()
    gens = llm.generate(prompts)
    return gens, time.monotonic() - start


# item 6: the deadline covers the status line, the headers and an error body


def test_I6_a_dripped_status_line_and_headers_end_at_the_deadline(raw):
    """Issue 54, item 6: the timeout bounded each read, and the status line and headers were read
    before the deadline was set, so a server dripping them a byte at a time held a 2 s timeout
    for 25.9 s. Here the headers would take 10 s; a 1 s deadline ends the call."""
    head = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 200 + b"\r\n"
    raw.steps = [drip(head, 0.05, then=reply()[len(b"HTTP/1.1 200 OK\r\n") :])]
    [gen], took = _timed(_llm(raw, timeout=1.0, max_retries=0), ["p"])
    assert not gen.ok and "no complete reply" in gen.error and "within 1 s" in gen.error
    assert took < 5  # a bound: the server would take 10 s


def test_I6_a_dripped_error_body_ends_at_the_deadline(raw):
    """Issue 54, item 6: the body of an HTTP error was read with ``exc.read(300)``, bounded by no
    deadline; a 503 whose 300-byte body comes a byte every 30 ms (9 s) ends at the 1 s deadline,
    still reported as the 503 it was. The status line and headers come at once: dripped at that
    pace they alone would outlast the deadline (43 bytes, 1.3 s), which is the test above."""
    head = b"HTTP/1.1 503 Busy\r\nContent-Length: 300\r\n\r\n"
    raw.steps = [drip(b"e" * 300, 0.03, first=head)]
    [gen], took = _timed(_llm(raw, timeout=1.0, max_retries=0), ["p"])
    assert not gen.ok and "HTTP 503" in gen.error
    assert took < 5  # a bound: the server would take 9 s


# item 7: http.client errors that are not OSError are server failures, for one prompt only

BROKEN = {
    "garbage status line": b"SPAM SPAM SPAM\r\n\r\n",
    "truncated body": b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"choices": [',
    "over-long header line": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n",
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_I7_a_broken_http_reply_is_retried_and_fails_its_prompt_only(raw, kind):
    """Issue 54, item 7: ``BadStatusLine``, ``IncompleteRead`` and ``LineTooLong`` are not
    ``OSError``; they escaped the call policy and ``generate()`` raised, losing every other
    prompt's reply. They are retried as a server failure, and fail their prompt alone."""
    raw.steps = [BROKEN[kind], BROKEN[kind], reply("fine")]
    gens = _llm(raw, max_retries=1, concurrency=1).generate(["a", "b"])
    assert not gens[0].ok and gens[0].attempts == 2 and "broken HTTP reply" in gens[0].error
    assert gens[1].text == "fine" and len(raw.requests) == 3


def test_I7_broken_http_replies_count_toward_the_give_up(raw):
    """Issue 54, item 7: the give-up count was not updated for them either."""
    raw.steps = [BROKEN["garbage status line"]] * 4
    gens = _llm(raw, max_retries=1, give_up_after=2, concurrency=1).generate(["a", "b", "c"])
    assert [g.attempts for g in gens] == [2, 2, 0] and len(raw.requests) == 4
    assert gens[2].error.startswith("stopped calling") and "2 prompts in a row" in gens[2].error


# item 8: the give-up counts only the server's failures, and a cool-down brings it back


def test_I8_prompts_the_server_refuses_do_not_switch_it_off(raw):
    """Issue 54, item 8: HTTP 400s, malformed and over-size replies counted toward the give-up, so
    five over-long prompts switched the LLM off for the run. They say nothing of the server."""
    refused = http("400 Bad Request", b'{"error": "prompt too long"}')
    raw.steps = [
        refused,
        refused,
        http("200 OK", b"<html>not json</html>"),
        http("200 OK", b"x" * 2048),  # over the cap below
        refused,
        reply("still here"),
    ]
    llm = _llm(raw, max_retries=2, give_up_after=5, concurrency=1, max_reply_bytes=1024)
    gens = llm.generate([f"p{i}" for i in range(6)])
    assert [g.ok for g in gens] == [False] * 5 + [True] and gens[5].text == "still here"
    assert [g.attempts for g in gens] == [1] * 6 and not llm.gave_up
    assert not any(g.server_failed for g in gens)


def test_I8_a_server_down_then_back_is_called_again_after_the_cool_down(raw):
    """Issue 54, item 8: a short outage switched a long-lived backend off for the life of its
    process. After ``cool_down`` seconds one probe call goes out (one, however many prompts are
    waiting); a failed probe starts the cool-down again, a reply brings the backend back."""
    llm = _llm(raw, max_retries=0, give_up_after=2, cool_down=0.3, concurrency=4)
    raw.down()  # connecting is refused
    gens = llm.generate(["a", "b", "c", "d"])
    assert all(g.server_failed for g in gens) and llm.gave_up
    assert llm.generate(["e"])[0].attempts == 0  # within the cool-down: no call
    raw.up()
    raw.steps = [http("503 Service Unavailable", b"{}")] * 10
    time.sleep(0.35)
    gens = llm.generate(["f", "g", "h", "i"])
    assert sorted(g.attempts for g in gens) == [0, 0, 0, 1] and len(raw.requests) == 1
    assert llm.gave_up  # the probe failed: another cool-down
    raw.steps = []
    assert llm.generate(["j"])[0].attempts == 0
    time.sleep(0.35)
    assert llm.generate(["k"])[0].text == "default" and not llm.gave_up  # the probe: back
    assert [g.text for g in llm.generate(["l", "m", "n"])] == ["default"] * 3
