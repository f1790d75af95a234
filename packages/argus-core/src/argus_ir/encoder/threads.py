"""Sharing the CPU between the encoder and the work that runs beside it.

A diagnosis runs spaCy's NER in a thread while the encoder runs its forward passes
(:meth:`argus_ir.diagnose.Diagnoser.diagnose`). torch spreads each forward pass over all its
threads, and every parallel region waits for its slowest thread: with one thread per core and NER
on one of the cores, the torch thread that shares that core holds up every region. On two cores,
1,000 entity-lists documents took 35.1 s with both running at once, more than the 11.9 s of NER
and 19.2 s of encoding one after the other.

:class:`SharedCores` takes one thread from torch while the other work runs and gives it back,
between two batches, as soon as that work is done. Only on CPU in fp32, where a text's states do
not depend on the thread count (:data:`~argus_ir.encoder.base.MIN_BATCH_TOKENS`); in bf16 they do,
and the encoder keeps its threads.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["SharedCores"]


class SharedCores:
    """One torch thread fewer while ``busy()`` holds (a context manager).

    Args:
        encoder: The encoder running beside the other work (its ``device`` and ``precision``
            decide whether threads are shared at all).
        busy: Whether the other work still runs (``lambda: not future.done()``).

    Call :meth:`check` between batches: it gives the thread back once ``busy()`` is false.
    Leaving the context gives it back in any case.
    """

    def __init__(self, encoder: Any, busy: Callable[[], bool]) -> None:
        self.encoder = encoder
        self.busy = busy
        self.threads: int | None = None  # torch's count before, while one is lent

    def __enter__(self) -> SharedCores:
        import torch

        threads = torch.get_num_threads()
        on_cpu = torch.device(self.encoder.device).type == "cpu"
        if on_cpu and self.encoder.precision == "fp32" and threads > 1 and self.busy():
            torch.set_num_threads(threads - 1)
            self.threads = threads
        return self

    def check(self) -> None:
        """Give the thread back if the other work is done (call it between batches)."""
        if self.threads is not None and not self.busy():
            self._restore()

    def _restore(self) -> None:
        import torch

        if self.threads is not None:
            torch.set_num_threads(self.threads)
            self.threads = None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._restore()
