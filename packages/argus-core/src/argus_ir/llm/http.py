"""Any OpenAI-compatible chat-completions server (vLLM serve, llama.cpp's server, hosted APIs).

Plain stdlib HTTP, so the backend needs no extra. The call policy, the same for every path that
calls an LLM over HTTP (synthesis, ``--kb-llm``, ``sira``):

- **a deadline per call**: ``timeout`` bounds the whole call: connecting, the status line and
  headers, the body, an error's body (:mod:`argus_ir.llm.deadline`); a server that drips any of
  them a byte at a time is cut off when the deadline passes;
- **retries with backoff**: each prompt gets up to ``1 + max_retries`` calls; connection errors,
  timeouts, broken HTTP (a garbage status line, a truncated body, an over-long header line),
  HTTP 408/409/425/429 and 5xx are retried after ``backoff * 2**attempt`` seconds, or after the
  server's ``Retry-After`` when it asks for longer, capped at ``max_retry_wait``; other HTTP
  errors and malformed replies are not retried (asking again would not help);
- **a cap on the reply**: a reply body over ``max_reply_bytes`` is refused unread past the cap
  (a completion of ``max_tokens`` tokens is a few kilobytes; megabytes mean a broken server);
- **a give-up**: after ``give_up_after`` prompts in a row failed because of the server (each
  after its retries: unreachable, timed out, a retryable status or broken HTTP to the last, or a
  refusal of every call such as HTTP 401/403/404), the backend stops calling: every later prompt
  fails at once with one line saying why, logged once at WARNING. A failure of the prompt itself
  (HTTP 400/413/422, a malformed or over-size reply) does not count: the server answered, which
  ends the row as a success does. After ``cool_down`` seconds one probe call goes out; a reply
  brings the backend back, a server failure starts another cool-down. :meth:`reset` calls again
  at once.

At most ``concurrency`` requests are in flight at once.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.llm.base import LLM, Generation, LLMSettings
from argus_ir.llm.deadline import Deadline, opener

__all__ = ["OpenAICompatibleLLM"]

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_PROMPT_STATUS = frozenset({400, 413, 414, 422})  # this request refused, not every request
_CHUNK = 65536

MAX_REPLY_BYTES = 1 << 20
"""The largest reply body read by default (1 MiB)."""
MAX_RETRY_WAIT = 60.0
"""The longest wait before a retry by default, whatever ``Retry-After`` asks (seconds)."""
GIVE_UP_AFTER = 5
"""Prompts failing in a row because of the server after which the backend stops calling, by
default."""
COOL_DOWN = 60.0
"""Seconds after a give-up before one probe call goes out, by default."""


class _Retryable(Exception):
    """The server failed this call; another may succeed."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Refused(Exception):
    """Not retried: the server answered, refusing this prompt (``server_failed`` False) or every
    call (True: a wrong key, URL or model)."""

    def __init__(self, message: str, *, server_failed: bool = False) -> None:
        super().__init__(message)
        self.server_failed = server_failed


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds: a number of seconds or an HTTP
    date; ``None`` for a missing or unreadable value (a date in the past asks for 0)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class OpenAICompatibleLLM(LLM):
    """Chat completions over HTTP.

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"`` (``/chat/completions`` is
            appended).
        model: The model name the server expects.
        api_key: Bearer token (default: the ``ARGUS_LLM_API_KEY`` environment variable, if set).
        timeout: Seconds one call may take in all (a deadline, not a per-read timeout).
        max_retries: Further calls after a retryable failure.
        backoff: Seconds before the first retry; doubles each time.
        concurrency: Most requests in flight.
        max_reply_bytes: The largest reply body accepted.
        max_retry_wait: The longest wait before a retry, ``Retry-After`` included.
        give_up_after: Prompts failing in a row because of the server after which no more
            calls are made until the cool-down has passed.
        cool_down: Seconds after a give-up before one probe call goes out.
        temperature, seed, max_tokens: Decoding settings (:class:`LLMSettings`).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        backoff: float = 1.0,
        concurrency: int = 4,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        max_retry_wait: float = MAX_RETRY_WAIT,
        give_up_after: int = GIVE_UP_AFTER,
        cool_down: float = COOL_DOWN,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 1024,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ArgusInputError(f"base_url must start with http:// or https://, got {base_url!r}")
        try:
            urllib.parse.urlsplit(base_url).port  # noqa: B018 (a bad port raises here, not per call)
        except ValueError as exc:
            raise ArgusInputError(f"base_url {base_url!r}: {exc}") from None
        if timeout <= 0 or max_retries < 0 or backoff < 0 or concurrency < 1:
            raise ArgusInputError(
                "need timeout > 0, max_retries >= 0, backoff >= 0 and concurrency >= 1 "
                f"(got {timeout}, {max_retries}, {backoff}, {concurrency})"
            )
        if max_reply_bytes < 1 or max_retry_wait < 0 or give_up_after < 1 or cool_down < 0:
            raise ArgusInputError(
                "need max_reply_bytes >= 1, max_retry_wait >= 0, give_up_after >= 1 and "
                f"cool_down >= 0 (got {max_reply_bytes}, {max_retry_wait}, {give_up_after}, "
                f"{cool_down})"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("ARGUS_LLM_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.max_reply_bytes = max_reply_bytes
        self.max_retry_wait = max_retry_wait
        self.give_up_after = give_up_after
        self.cool_down = cool_down
        self.settings = LLMSettings(temperature, seed, max_tokens)
        self._failed_in_a_row = 0
        self.gave_up = ""
        """Why the backend stopped calling (``""`` while it calls)."""
        self._gave_up_at = 0.0  # time.monotonic() of the give-up or of the last failed probe
        self._probing = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM({self.base_url!r}, model={self.model!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_probing")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._probing = False
        self._gave_up_at = time.monotonic()  # another process's clock: the cool-down starts anew

    def reset(self) -> None:
        """Call again at once after a give-up (a new run against a server that came back)."""
        with self._lock:
            self._failed_in_a_row = 0
            self.gave_up = ""

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        show_progress: bool = False,
    ) -> list[Generation]:
        from tqdm.auto import tqdm

        limit = self._max_tokens(max_tokens)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            results = pool.map(lambda p: self._one(p, limit), prompts)
            return list(
                tqdm(results, total=len(prompts), desc="LLM", unit="doc", disable=not show_progress)
            )

    def _one(self, prompt: str, max_tokens: int) -> Generation:
        with self._lock:
            probe = bool(self.gave_up)
            if probe and (self._probing or time.monotonic() < self._gave_up_at + self.cool_down):
                return Generation(None, self.gave_up, attempts=0, server_failed=True)
            if probe:
                self._probing = True  # the one call that sees whether the server is back
        try:
            generation = self._call(prompt, max_tokens)
        except Exception as exc:  # a bug must fail this prompt, not every prompt of the call
            logger.exception("LLM call to %s failed unexpectedly", self.base_url)
            generation = Generation(None, f"{type(exc).__name__}: {exc}")
        with self._lock:
            if probe:
                self._probing = False
            if not generation.server_failed:  # the server answered
                if self.gave_up:
                    logger.info("LLM: %s answers again; calling it again", self.base_url)
                self._failed_in_a_row = 0
                self.gave_up = ""
                return generation
            self._failed_in_a_row += 1
            if probe and self.gave_up:
                self._gave_up_at = time.monotonic()
                logger.info("LLM: %s still failing: %s", self.base_url, generation.error)
            elif not self.gave_up and self._failed_in_a_row >= self.give_up_after:
                self._gave_up_at = time.monotonic()
                self.gave_up = (
                    f"stopped calling {self.base_url}: {self._failed_in_a_row} prompts in a row "
                    f"failed (last: {generation.error}); one call again every "
                    f"{self.cool_down:g} s to see if it is back"
                )
                logger.warning("LLM: %s", self.gave_up)
        return generation

    def _call(self, prompt: str, max_tokens: int) -> Generation:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.settings.temperature,
            "seed": self.settings.seed,
            "max_tokens": max_tokens,
        }
        last = ""
        asked: float | None = None  # the wait the server asked for before the next call
        for attempt in range(self.max_retries + 1):
            if attempt:
                wait = max(self.backoff * 2 ** (attempt - 1), asked or 0.0)
                time.sleep(min(wait, self.max_retry_wait))
            try:
                return Generation(self._post(body), attempts=attempt + 1)
            except _Retryable as exc:
                last, asked = str(exc), exc.retry_after
                logger.info("LLM call %d/%d failed: %s", attempt + 1, self.max_retries + 1, last)
            except _Refused as exc:
                return Generation(None, str(exc), attempt + 1, server_failed=exc.server_failed)
        calls = self.max_retries + 1
        error = f"gave up after {calls} call{'s' * (calls > 1)}: {last}"
        return Generation(None, error, calls, server_failed=True)

    def _post(self, body: dict[str, Any]) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        request = urllib.request.Request(
            url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        late = f"no complete reply from {url} within {self.timeout:g} s"
        with Deadline(self.timeout) as deadline:
            try:
                with opener(deadline).open(request, timeout=self.timeout) as response:
                    raw = self._read(response, url, deadline)
            except urllib.error.HTTPError as exc:
                raise self._http_error(exc, url, deadline) from None
            except (OSError, http.client.HTTPException) as exc:
                if deadline.passed:
                    raise _Retryable(late) from None
                raise _Retryable(self._transport_error(exc, url, late)) from None
        if deadline.passed:  # the watchdog shut the connection: the body may be cut short
            raise _Retryable(late)
        try:
            reply = json.loads(raw)
            content = reply["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            snippet = raw[:200].decode("utf-8", "replace")
            raise _Refused(f"malformed reply from {url}: {snippet!r}") from None
        if not isinstance(content, str):
            raise _Refused(f"malformed reply from {url}: content is {type(content).__name__}")
        return content

    @staticmethod
    def _transport_error(exc: BaseException, url: str, late: str) -> str:
        if isinstance(exc, http.client.HTTPException):
            # a garbage status line, a truncated body, an over-long line, a hang-up before replying
            return f"broken HTTP reply from {url}: {type(exc).__name__}: {exc}"[:500]
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            return late
        return f"cannot reach {url}: {reason}"

    @staticmethod
    def _http_error(exc: urllib.error.HTTPError, url: str, deadline: Deadline) -> Exception:
        """What an HTTP error status means for the call; its body (the first 300 bytes, read
        within the deadline: the watchdog ends a dripped one) says why."""
        try:
            detail = exc.read(300).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            detail = ""
        if deadline.passed:
            detail += " (the rest not sent within the deadline)"
        message = f"HTTP {exc.code} from {url}: {detail}"
        if exc.code in _RETRY_STATUS:
            return _Retryable(message, retry_after_seconds(exc.headers.get("Retry-After")))
        # HTTP 400/413/422 refuse this prompt; 401, 403, 404 and the rest refuse every call
        return _Refused(message, server_failed=exc.code not in _PROMPT_STATUS)

    def _read(self, response: Any, url: str, deadline: Deadline) -> bytes:
        """The reply body, read before ``deadline`` and refused past ``max_reply_bytes``."""
        limit = self.max_reply_bytes
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _Refused(f"reply from {url} of {int(declared):,} bytes refused (over {limit:,})")
        chunks: list[bytes] = []
        size = 0
        while not deadline.passed:
            chunk = response.read1(_CHUNK)
            if not chunk:
                if response.length:  # the connection ended short of the declared length
                    raise http.client.IncompleteRead(b"".join(chunks), response.length)
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise _Refused(f"reply from {url} refused: over {limit:,} bytes")
            chunks.append(chunk)
        raise TimeoutError
