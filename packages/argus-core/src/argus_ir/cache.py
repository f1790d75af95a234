"""On-disk cache of pooled entity vectors, keyed by encoder id, text and mention span.

Vectors are written in shards of ``.npz`` files as encoding proceeds, so an interrupted audit resumes
where it stopped: the next run encodes only what no shard holds yet. Loading uses
``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from argus_ir._io import atomic_path

__all__ = ["VectorCache", "span_key"]


def span_key(retriever_id: str, text: str, start: int, end: int) -> str:
    """Cache key of one mention vector (hex digest)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(retriever_id.encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8"))
    h.update(f"\x00{start}:{end}".encode())
    return h.hexdigest()


class VectorCache:
    """A folder of npz shards mapping keys to ``(dim,)`` float32 vectors.

    Args:
        folder: Where the shards live (one folder per encoder is a good habit).
        dim: Vector dimension; shards of another dimension are an error.

    Example:
        >>> cache = VectorCache(tmp_path, dim=4)  # doctest: +SKIP
        >>> cache.add({"k": np.ones(4, np.float32)}); cache.get("k")  # doctest: +SKIP
    """

    def __init__(self, folder: str | Path, dim: int) -> None:
        self.folder = Path(folder)
        self.dim = dim
        self._data: dict[str, np.ndarray] = {}
        self._next = 0
        if self.folder.exists():
            for shard in sorted(self.folder.glob("shard-*.npz")):
                with np.load(shard, allow_pickle=False) as z:
                    keys, vecs = z["keys"], z["vectors"]
                if vecs.ndim != 2 or vecs.shape[1] != dim:
                    raise ValueError(
                        f"{shard} holds vectors of shape {vecs.shape}, expected dim {dim}"
                    )
                self._data.update(zip(keys.tolist(), vecs))
                m = re.match(r"shard-(\d+)\.npz", shard.name)
                if m:
                    self._next = max(self._next, int(m.group(1)) + 1)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def get(self, key: str) -> np.ndarray | None:
        """The cached vector or ``None``."""
        return self._data.get(key)

    def add(self, items: dict[str, np.ndarray]) -> None:
        """Add vectors and persist them as one new shard (atomically)."""
        if not items:
            return
        keys = np.array(list(items), dtype=str)
        vecs = np.stack([np.asarray(v, dtype=np.float32) for v in items.values()])
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.folder / f"shard-{self._next:06d}.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, keys=keys, vectors=vecs)
        self._next += 1
        self._data.update(zip(keys.tolist(), vecs))
