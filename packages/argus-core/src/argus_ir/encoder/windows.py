"""Windowing of long token sequences.

A text longer than the encoder's limit is split into overlapping windows. Every token takes its hidden
state from the window in which it sits farthest from an edge, so each token sees at least half the
overlap as context on both sides (except at the text's own ends) and no mention is ever cut off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = ["Window", "assign_tokens", "plan_windows"]


@dataclass(frozen=True)
class Window:
    """A half-open range ``[start, end)`` of content-token positions of one text."""

    start: int
    end: int

    @property
    def length(self) -> int:
        """Number of content tokens in the window."""
        return self.end - self.start


def plan_windows(n_tokens: int, width: int, stride: int | None = None) -> list[Window]:
    """Cover ``n_tokens`` content tokens with windows of at most ``width`` tokens.

    Args:
        n_tokens: Number of content tokens (special tokens excluded).
        width: Most content tokens one forward pass can take.
        stride: Step between window starts; defaults to three quarters of ``width``
            (a quarter overlaps).

    Returns:
        Windows in order; a single (possibly empty) window when the text fits.

    Example:
        >>> plan_windows(10, 4, 2)
        [Window(start=0, end=4), Window(start=2, end=6), Window(start=4, end=8), Window(start=6, end=10)]
    """
    if width < 1:
        raise ArgusInputError(f"window width must be positive, got {width}")
    if n_tokens <= width:
        return [Window(0, n_tokens)]
    step = stride if stride is not None else max(1, (3 * width) // 4)
    if not 1 <= step <= width:
        raise ArgusInputError(f"stride must be in [1, {width}], got {step}")
    starts = list(range(0, n_tokens - width, step))
    starts.append(n_tokens - width)  # the last window ends exactly at the text's end
    return [Window(s, s + width) for s in starts]


def assign_tokens(n_tokens: int, windows: list[Window]) -> tuple[np.ndarray, np.ndarray]:
    """For each token, pick the window where it is farthest from an edge.

    Text boundaries do not count as edges (a token at the start of the text has all the context
    there is), so the first and last windows own the text's ends.

    Returns:
        ``(window_index, position_in_window)`` arrays of length ``n_tokens``.
    """
    win = np.zeros(n_tokens, dtype=np.int64)
    pos = np.arange(n_tokens, dtype=np.int64)
    if len(windows) <= 1 or n_tokens == 0:
        return win, pos
    best = np.full(n_tokens, -1, dtype=np.int64)
    for w_idx, w in enumerate(windows):
        idx = np.arange(w.start, w.end)
        left = np.where(w.start == 0, n_tokens, idx - w.start)
        right = np.where(w.end == n_tokens, n_tokens, w.end - 1 - idx)
        margin = np.minimum(left, right)
        better = margin > best[idx]
        best[idx[better]] = margin[better]
        win[idx[better]] = w_idx
    starts = np.array([w.start for w in windows], dtype=np.int64)
    return win, pos - starts[win]
