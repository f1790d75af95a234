"""A faster matrix product for spaCy's NER on the CPU (imported only where spaCy is loaded).

spaCy's small English pipeline spends about three quarters of its NER time in one operation, the
matrix products of its token encoder (thinc's ``NumpyOps.gemm``, computed by BLIS). NumPy's own
``matmul`` (OpenBLAS) computes the same products about a quarter faster on the shapes NER uses:
on SciFact's first 1,000 documents, 12.4 CPU-seconds of NER instead of 15.9, the same records
(``benchmarks/cpu_path.py``). :func:`use_matmul` puts it under one pipeline's layers only, so
nothing else in the process that uses thinc changes.

OpenBLAS would spread each of these small products over every core: in a process of its own that
costs half as much CPU again for no gain in time (400 SciFact documents: 16.8 CPU ms a document
against 11.3 on one thread, and slower on the clock too), so NER runs under
:func:`one_blas_thread`, as BLIS ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from thinc.api import NumpyOps

__all__ = ["MatmulOps", "MemoryZone", "one_blas_thread", "use_matmul"]

_controller: Any = None


class MatmulOps(NumpyOps):
    """thinc's ``NumpyOps`` whose ``gemm`` is ``numpy.matmul``."""

    def gemm(self, x, y, out=None, trans1=False, trans2=False):
        a = x.T if trans1 else x
        b = y.T if trans2 else y
        if out is None:
            return np.matmul(a, b)
        np.matmul(a, b, out=out)
        return out


def use_matmul(nlp: Any) -> int:
    """Give every layer of ``nlp``'s components that computes with thinc's ``NumpyOps`` (and no
    other ops: a GPU's are left alone) NumPy's ``matmul`` for its matrix products. Returns how
    many layers changed."""
    ops = MatmulOps()
    changed = 0
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is None:
            continue
        for layer in model.walk():
            if type(layer.ops) is NumpyOps:
                layer.ops = ops
                changed += 1
    return changed


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread for the block (the process's other BLAS users too, meanwhile).
    Without ``threadpoolctl`` (spaCy installed without argus's ``spacy`` extra) the block runs as
    it is: the same entities, at more CPU."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _controller = False
        else:
            _controller = ThreadpoolController()  # finds the loaded BLAS libraries once
    if _controller is False:
        yield
        return
    with _controller.limit(limits=1, user_api="blas"):
        yield


class MemoryZone:
    """spaCy's memory zone around NER calls (spaCy >= 3.8; a no-op before).

    The strings spaCy interns for a zone's texts are freed when it closes, so a long stream of new
    words does not grow the vocabulary. ``texts`` 0 gives each call a zone of its own (a caller
    that also uses the pipeline itself keeps its Docs valid after the call); otherwise one zone
    stays open across calls and is renewed every ``texts`` texts, so the words it has seen stay
    known to later calls instead of being interned again in each (NER of 64-text calls about a
    sixth cheaper).

    Args:
        nlp: The spaCy pipeline.
        texts: Texts one zone spans across calls (0: one zone per call).
    """

    def __init__(self, nlp: Any, texts: int = 0) -> None:
        self._make = getattr(nlp, "memory_zone", None)
        self.texts = texts
        self._open: contextlib.ExitStack | None = None
        self._count = 0

    def enter(self, count: int) -> contextlib.AbstractContextManager[Any]:
        """The zone for a call of ``count`` texts (enter it with ``with``)."""
        if self._make is None:
            return contextlib.nullcontext()
        if not self.texts:
            return self._make()
        if self._open is not None and self._count + count > self.texts:
            self.close()
        if self._open is None:
            self._open = contextlib.ExitStack()
            self._open.enter_context(self._make())
            self._count = 0
        self._count += count
        return contextlib.nullcontext()

    def close(self) -> None:
        """Close a zone kept open across calls (its strings are freed)."""
        if self._open is not None:
            self._open.close()
            self._open = None
