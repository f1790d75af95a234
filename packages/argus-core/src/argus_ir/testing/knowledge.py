"""Posts and a KB of the user's that knows their venues: the in-place enrichment tests of every
adapter (issue 58) ingest the same three posts with the same passages file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["KNOWN_KB", "KNOWN_TEXTS", "cosine", "write_passages"]

KNOWN_TEXTS = {
    # "Bled Castle" is not flagged (predicted RPS 0.32): auto describes it in place all the same
    "d1": "We spent a week near Bled Castle with old friends and ate far too much cake.",
    # flagged (0.29)
    "d2": "My cousin got married at Phoenix Symphony Hall last weekend and the party went on until dawn.",
    "d3": "Nothing much happened on the long drive home yesterday.",
}  # fmt: skip
"""Three posts: an unflagged venue the KB knows, a flagged one it knows, and no entity."""

KNOWN_KB = [
    {"id": "k1", "title": "Bled Castle", "text": "Bled Castle is a medieval castle in Slovenia."},
    {"id": "k2", "title": "Phoenix Symphony Hall", "text": "A concert hall in Arizona, United States."},
]  # fmt: skip
"""One line per venue, as a user's passages file holds them (no description)."""


def write_passages(path: Path, rows: list[dict]) -> str:
    """``rows`` as a JSONL passages file at ``path``; returns the path, as ``kb=`` takes it."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def cosine(a: object, b: object) -> float:
    """The cosine of two vectors (lists or arrays)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))
