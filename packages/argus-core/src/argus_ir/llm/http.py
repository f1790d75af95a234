"""Any OpenAI-compatible chat-completions server (vLLM serve, llama.cpp's server, hosted APIs).

Plain stdlib HTTP, so the backend needs no extra. The call policy, the same for every path that
calls an LLM over HTTP (synthesis, ``--kb-llm``, ``sira``):

- **a deadline per call**: ``timeout`` bounds the whole call, connecting, waiting and reading the
  body; a server that drips its reply a byte at a time is cut off when the deadline passes;
- **retries with backoff**: each prompt gets up to ``1 + max_retries`` calls; connection errors,
  timeouts, HTTP 408/409/425/429 and 5xx are retried after ``backoff * 2**attempt`` seconds, or
  after the server's ``Retry-After`` when it asks for longer, capped at ``max_retry_wait``; other
  HTTP errors and malformed replies are not retried (asking again would not help);
- **a cap on the reply**: a reply body over ``max_reply_bytes`` is refused unread past the cap
  (a completion of ``max_tokens`` tokens is a few kilobytes; megabytes mean a broken server);
- **a give-up**: after ``give_up_after`` prompts in a row failed (each after its retries), the
  backend stops calling: every later prompt fails at once with one line saying why, logged once
  at WARNING, until :meth:`OpenAICompatibleLLM.reset` (a success in between resets the count).

At most ``concurrency`` requests are in flight at once.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.llm.base import LLM, Generation, LLMSettings

__all__ = ["OpenAICompatibleLLM"]

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_CHUNK = 65536

MAX_REPLY_BYTES = 1 << 20
"""The largest reply body read by default (1 MiB)."""
MAX_RETRY_WAIT = 60.0
"""The longest wait before a retry by default, whatever ``Retry-After`` asks (seconds)."""
GIVE_UP_AFTER = 5
"""Prompts failing in a row after which the backend stops calling, by default."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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
        give_up_after: Prompts failing in a row after which no more calls are made.
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
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 1024,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ArgusInputError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or concurrency < 1:
            raise ArgusInputError(
                "need timeout > 0, max_retries >= 0, backoff >= 0 and concurrency >= 1 "
                f"(got {timeout}, {max_retries}, {backoff}, {concurrency})"
            )
        if max_reply_bytes < 1 or max_retry_wait < 0 or give_up_after < 1:
            raise ArgusInputError(
                "need max_reply_bytes >= 1, max_retry_wait >= 0 and give_up_after >= 1 "
                f"(got {max_reply_bytes}, {max_retry_wait}, {give_up_after})"
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
        self.settings = LLMSettings(temperature, seed, max_tokens)
        self._failed_in_a_row = 0
        self.gave_up = ""
        """Why the backend stopped calling (``""`` while it calls)."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM({self.base_url!r}, model={self.model!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Call again after a give-up (a new run against a server that came back)."""
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
        if self.gave_up:
            return Generation(None, self.gave_up, attempts=0)
        generation = self._call(prompt, max_tokens)
        with self._lock:
            if generation.ok:
                self._failed_in_a_row = 0
            elif not self.gave_up:
                self._failed_in_a_row += 1
                if self._failed_in_a_row >= self.give_up_after:
                    self.gave_up = (
                        f"stopped calling {self.base_url}: {self._failed_in_a_row} prompts in a row "
                        f"failed (last: {generation.error})"
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
            except ValueError as exc:
                return Generation(None, str(exc), attempts=attempt + 1)
        calls = self.max_retries + 1
        return Generation(None, f"gave up after {calls} call{'s' * (calls > 1)}: {last}", calls)

    def _post(self, body: dict[str, Any]) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        request = urllib.request.Request(
            url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        deadline = time.monotonic() + self.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = self._read(response, url, deadline)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            message = f"HTTP {exc.code} from {url}: {detail}"
            if exc.code in _RETRY_STATUS:
                retry_after = retry_after_seconds(exc.headers.get("Retry-After"))
                raise _Retryable(message, retry_after) from None
            raise ValueError(message) from None
        except TimeoutError:
            raise _Retryable(f"no complete reply from {url} within {self.timeout:g} s") from None
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise _Retryable(
                    f"no complete reply from {url} within {self.timeout:g} s"
                ) from None
            raise _Retryable(f"cannot reach {url}: {reason}") from None
        try:
            reply = json.loads(raw)
            content = reply["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            snippet = raw[:200].decode("utf-8", "replace")
            raise ValueError(f"malformed reply from {url}: {snippet!r}") from None
        if not isinstance(content, str):
            raise ValueError(f"malformed reply from {url}: content is {type(content).__name__}")
        return content

    def _read(self, response: Any, url: str, deadline: float) -> bytes:
        """The reply body, read before ``deadline`` and refused past ``max_reply_bytes``."""
        limit = self.max_reply_bytes
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ValueError(
                f"reply from {url} of {int(declared):,} bytes refused (over {limit:,})"
            )
        sock = getattr(getattr(response.fp, "raw", None), "_sock", None)
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Retryable(f"no complete reply from {url} within {self.timeout:g} s")
            if sock is not None:
                sock.settimeout(left)  # a stalled read ends at the deadline, not a timeout later
            chunk = response.read1(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"reply from {url} refused: over {limit:,} bytes")
            chunks.append(chunk)
