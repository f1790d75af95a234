"""Faults for the lifecycle contract: a kill at a recipe's boundary, and two writers taking
turns at theirs (:mod:`argus_ir.testing.lifecycle`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["Killed", "Step", "Turns", "at_boundary", "count_steps", "no_step", "stepping", "watch"]

Step = Callable[[str], None]
"""What a recipe calls at each boundary between its steps, with the boundary's name."""


class Killed(BaseException):
    """The recipe stopped at a boundary, as if its process were killed there."""


class Turns:
    """Two writers in lockstep: ``a`` runs to its first boundary, then ``b`` to its first, then
    ``a`` to its second, ``b`` to its second, and so on; a writer whose partner has finished runs
    on alone. So each step of one writer falls between two of the other's (the cleaner of one
    update before the other's writer, a batch of one ingest between two of the other's): the
    interleavings that doubled or left stale entries in the field, the same on every run."""

    def __init__(self, timeout: float = 120.0) -> None:
        self._turn = "a"
        self._done: set[str] = set()
        self._cond = threading.Condition()
        self._timeout = timeout

    @staticmethod
    def _other(who: str) -> str:
        return "b" if who == "a" else "a"

    def step(self, who: str) -> Step:
        other = self._other(who)

        def at(name: str) -> None:
            with self._cond:
                if other in self._done:
                    return
                self._turn = other
                self._cond.notify_all()
                self._cond.wait_for(
                    lambda: self._turn == who or other in self._done, timeout=self._timeout
                )

        return at

    def run(self, a: Callable[[Step], None], b: Callable[[Step], None]) -> None:
        """Run ``a`` and ``b`` (each given its boundary hook) on two threads, taking turns."""
        errors: list[BaseException] = []

        def body(who: str, call: Callable[[Step], None]) -> None:
            with self._cond:
                self._cond.wait_for(lambda: self._turn == who, timeout=self._timeout)
            try:
                call(self.step(who))
            except BaseException as exc:  # raised again on the caller's thread
                errors.append(exc)
            finally:
                with self._cond:
                    self._done.add(who)
                    self._turn = self._other(who)
                    self._cond.notify_all()

        threads = [threading.Thread(target=body, args=w) for w in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10 * self._timeout)
        if errors:
            raise errors[0]


def no_step(name: str) -> None:
    """The boundary hook of a call run without a fault."""


class count_steps:
    """Counts a call's boundaries; with ``kill_at`` raises :class:`Killed` right after that one."""

    def __init__(self, kill_at: int | None = None) -> None:
        self.names: list[str] = []
        self.kill_at = kill_at

    def __call__(self, name: str) -> None:
        self.names.append(name)
        if self.kill_at is not None and len(self.names) == self.kill_at:
            raise Killed(name)


# boundaries inside library code ----------------------------------------------------------------

_LOCAL = threading.local()
_WATCHED: dict[tuple[int, str], Any] = {}  # (id(obj), method) -> obj, kept alive while watched


@contextmanager
def stepping(step: Step) -> Iterator[None]:
    """Within the block, :func:`at_boundary` on this thread calls ``step`` (each writer of
    :class:`Turns` runs on its own thread, so each reaches its own hook)."""
    before = getattr(_LOCAL, "step", None)
    _LOCAL.step = step
    try:
        yield
    finally:
        _LOCAL.step = before


def at_boundary(name: str) -> None:
    """Call the step hook of the current thread's :func:`stepping` block, if any."""
    step = getattr(_LOCAL, "step", None)
    if step is not None:
        step(name)


def watch(obj: Any, methods: Sequence[str], label: str | None = None) -> Any:
    """Make each of ``obj``'s ``methods`` call :func:`at_boundary` after it returns (once per
    object, however often it is watched): the writes of a store or a record manager as the
    boundaries of a recipe that calls them from inside a framework."""
    label = label or type(obj).__name__
    for method in methods:
        if (id(obj), method) in _WATCHED:
            continue
        inner = getattr(obj, method)

        def wrapped(
            *args: Any, _inner: Any = inner, _name: str = f"{label}.{method}", **kw: Any
        ) -> Any:
            out = _inner(*args, **kw)
            at_boundary(_name)
            return out

        object.__setattr__(obj, method, wrapped)
        _WATCHED[(id(obj), method)] = obj
    return obj
