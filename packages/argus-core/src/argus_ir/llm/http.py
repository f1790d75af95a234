"""Any OpenAI-compatible chat-completions server (vLLM serve, llama.cpp's server, hosted APIs).

Plain stdlib HTTP, so the backend needs no extra. Each prompt gets up to ``1 + max_retries`` calls:
connection errors, timeouts, HTTP 429 and 5xx are retried after ``backoff * 2**attempt`` seconds;
other HTTP errors and malformed replies are not (asking again would not help). At most
``concurrency`` requests are in flight at once.
"""

from __future__ import annotations

import json
import logging
import os
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


class _Retryable(Exception):
    pass


class OpenAICompatibleLLM(LLM):
    """Chat completions over HTTP.

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"`` (``/chat/completions`` is
            appended).
        model: The model name the server expects.
        api_key: Bearer token (default: the ``ARGUS_LLM_API_KEY`` environment variable, if set).
        timeout: Seconds to wait for one reply.
        max_retries: Further calls after a retryable failure.
        backoff: Seconds before the first retry; doubles each time.
        concurrency: Most requests in flight.
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
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("ARGUS_LLM_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.settings = LLMSettings(temperature, seed, max_tokens)

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM({self.base_url!r}, model={self.model!r})"

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
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.settings.temperature,
            "seed": self.settings.seed,
            "max_tokens": max_tokens,
        }
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                return Generation(self._post(body), attempts=attempt + 1)
            except _Retryable as exc:
                last = str(exc)
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
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            message = f"HTTP {exc.code} from {url}: {detail}"
            if exc.code in _RETRY_STATUS:
                raise _Retryable(message) from None
            raise ValueError(message) from None
        except TimeoutError:
            raise _Retryable(f"no reply from {url} within {self.timeout:g} s") from None
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise _Retryable(f"no reply from {url} within {self.timeout:g} s") from None
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
