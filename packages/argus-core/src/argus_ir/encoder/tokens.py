"""A retriever's tokens computed away from the process that feeds it.

Tokenising a text with offsets is about half of what the feeding process does per document once
NER runs elsewhere (0.4-0.5 CPU ms a SciFact abstract with MiniLM's fast tokenizer). Where NER
runs in worker processes (a GPU retriever), each worker also tokenises the texts it reads, with
the Rust side of the retriever's own fast tokenizer (:func:`backend_json` here,
:func:`load_backend` there), and sends the tokens back packed (:func:`pack` /
:func:`unpack`). :func:`first_window_end` is the one rule both sides cut a text's first
window by.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["backend_json", "first_window_end", "load_backend", "pack", "tokenize", "unpack"]

Tokens = tuple[list[int], np.ndarray]
"""A text's content-token ids and ``(n, 2)`` int64 character offsets."""


def first_window_end(text: str, offsets: np.ndarray, width: int) -> int:
    """Where the first window of ``width`` content tokens ends in ``text`` (its length when the
    text fits one window), moved back to a word's start so the cut never splits a word."""
    if len(offsets) <= width:
        return len(text)
    cut = int(offsets[width, 0])
    while 0 < cut < len(text) and text[cut - 1].isalnum() and text[cut].isalnum():
        cut -= 1
    return cut


def backend_json(tokenizer: Any) -> str | None:
    """The Rust side of a Hugging Face fast tokenizer as JSON (``None``: it has none)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    to_str = getattr(backend, "to_str", None)
    return to_str() if callable(to_str) else None


def load_backend(json_text: str) -> Any:
    """A ``tokenizers.Tokenizer`` from :func:`backend_json`'s text, without truncation or padding
    (what the encoder asks its tokenizer for: every token of a text)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(json_text)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def tokenize(backend: Any, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each text's content-token ids and offsets (no special tokens), as int32 arrays."""
    out = []
    for encoding in backend.encode_batch(list(texts), add_special_tokens=False):
        ids = np.asarray(encoding.ids, dtype=np.int32)
        offsets = np.asarray(encoding.offsets, dtype=np.int32).reshape(-1, 2)
        out.append((ids, offsets))
    return out


def pack(ids: np.ndarray, offsets: np.ndarray) -> str:
    """One text's tokens as ASCII for a JSON line: the ids, then the offsets, as little-endian
    int32."""
    raw = ids.astype("<i4").tobytes() + offsets.astype("<i4").tobytes()
    return base64.b64encode(raw).decode("ascii")


def unpack(packed: str) -> Tokens:
    """:func:`pack`'s tokens as the encoder keeps them (ids a list, offsets ``(n, 2)`` int64).

    Raises:
        ValueError: The text is not three int32 per token.
    """
    flat = np.frombuffer(base64.b64decode(packed.encode("ascii"), validate=True), dtype="<i4")
    if len(flat) % 3:
        raise ValueError(f"packed tokens of {len(flat)} int32, not three per token")
    n = len(flat) // 3
    return flat[:n].tolist(), flat[n:].astype(np.int64).reshape(n, 2)
