"""LLM replies on disk, so a rerun of an LLM step costs no call.

:func:`cached_generate` answers ``(prompt version, prompt)`` pairs from a :class:`CallCache` where it
can and sends the rest to the backend in chunks, writing each chunk's replies as they arrive (an
interrupted run keeps what it paid for). Failed calls are never cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.llm.base import LLM, Generation

__all__ = ["CallCache", "CallCount", "cached_generate"]

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
CHUNK = 16
"""Prompts sent to the backend at a time (the cache is written after each chunk)."""


def _progress(total: int, show: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="LLM calls", unit="call", disable=not show or not total)


class CallCache:
    """LLM replies on disk, keyed by prompt version, the backend's fingerprint (model and decoding
    settings), the reply's token cap and the prompt.

    One append-only ``calls.jsonl``; failed calls are not stored, so a rerun retries them. Each
    chunk of replies is appended in one write (``O_APPEND``). A line cut short (a run killed
    mid-write, a full disk) is skipped with a warning and asked again; a whole record that is not
    an argus cache record is refused (a foreign file).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / "calls.jsonl"
        self._replies: dict[str, str] = {}
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        damaged = []
        with open(self.path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    damaged.append(n)  # a write cut short: that reply is asked again
                    continue
                if not isinstance(row, dict) or row.get("format") != CACHE_FORMAT:
                    raise ArgusInputError(f"{self.path}:{n}: not an argus LLM cache record")
                self._replies[row["key"]] = row["reply"]
        if damaged:
            logger.warning(
                "%s: %d damaged line(s) skipped (first: line %d; a run cut mid-write?); "
                "those replies are asked again",
                self.path,
                len(damaged),
                damaged[0],
            )

    @staticmethod
    def key(version: str, llm: LLM, prompt: str, max_tokens: int) -> str:
        """The cache key of one call: a reply cut at fewer tokens is another reply."""
        h = hashlib.sha256()
        for part in (version, llm.fingerprint, str(max_tokens), prompt):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: str) -> str | None:
        return self._replies.get(key)

    def put(self, items: Sequence[tuple[str, str, str]]) -> None:
        """Store ``(key, prompt version, reply)`` triples."""
        if not items:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for key, version, reply in items:
            self._replies[key] = reply
            row = {"format": CACHE_FORMAT, "key": key, "prompt": version, "reply": reply}
            try:
                lines.append((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: JSON's escapes keep it
                lines.append((json.dumps(row) + "\n").encode("ascii"))
        data = b"".join(lines)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            if os.fstat(fd).st_size and os.pread(fd, 1, os.fstat(fd).st_size - 1) != b"\n":
                data = b"\n" + data  # after a cut line: ours starts on a line of its own
            while data:  # the chunk in one append (O_APPEND), not line by line
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)


@dataclass
class CallCount:
    """What :func:`cached_generate` did: prompts, how many the cache answered, backend seconds."""

    calls: int = 0
    cache_hits: int = 0
    seconds: float = 0.0


def cached_generate(
    llm: LLM,
    prompts: Sequence[tuple[str, str]],
    cache: CallCache | None,
    *,
    max_tokens: int,
    show_progress: bool = False,
) -> tuple[list[Generation], CallCount]:
    """Replies to ``(version, prompt)`` pairs, from the cache where it has them, in order."""
    keys = []
    if cache is not None:
        keys = [CallCache.key(v, llm, p, max_tokens) for v, p in prompts]
    replies: list[Generation | None] = [None] * len(prompts)
    todo: list[int] = []
    for i in range(len(prompts)):
        hit = cache.get(keys[i]) if cache is not None else None
        if hit is None:
            todo.append(i)
        else:
            replies[i] = Generation(hit)
    count = CallCount(len(prompts), len(prompts) - len(todo))
    bar = _progress(len(todo), show_progress)
    for start in range(0, len(todo), CHUNK):
        part = todo[start : start + CHUNK]
        t0 = time.perf_counter()
        fresh = llm.generate([prompts[i][1] for i in part], max_tokens=max_tokens)
        count.seconds += time.perf_counter() - t0
        store = []
        for i, g in zip(part, fresh):
            replies[i] = g
            if cache is not None and g.ok and g.text is not None:
                store.append((keys[i], prompts[i][0], g.text))
        if cache is not None:
            cache.put(store)  # written as it goes: an interrupted run keeps what it paid for
        bar.update(len(part))
    bar.close()
    return [r if r is not None else Generation(None, "no reply") for r in replies], count
