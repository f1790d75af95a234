"""The lifecycle contract: what a store holds after any single fault and one rerun.

Every framework's ingest recipe (the one its docs page prints) must leave, after a fault and one
rerun of the same call, exactly what the uninterrupted run leaves: the same entries (by id, or by
text where the framework's splitter makes random ids), the same texts and the same ``argus_*``
metadata, with no duplicate, no view whose original is gone (orphan) and no view of an older
version beside the newer original (stale). One table of scenarios (:data:`SCENARIOS`), one
comparator (:func:`compare`), run by every adapter on every store its docs support.

A framework's test module subclasses :class:`LifecycleContract` and implements its hooks:

- :meth:`~LifecycleContract.open_store` / :meth:`~LifecycleContract.close_store`: a fresh, empty
  store of a kind in :attr:`~LifecycleContract.stores`, isolated by a name;
- :meth:`~LifecycleContract.ingest`: the docs' ingest recipe over input documents (the real
  transform, then the writes), ``cleanup="full"`` for a whole-corpus run that removes what it
  was not given;
- :meth:`~LifecycleContract.delete`: the docs' delete recipe for whole sources;
- :meth:`~LifecycleContract.rows`: what the store holds.

Inside the recipe the hooks call ``step(name)`` at each boundary between its steps (after the
transform, after each store write, after each write of the recipe's own state); the writes a
framework makes from inside its own code are made boundaries with
:func:`argus_ir.testing.faults.watch`. The contract uses
it two ways:

- a **kill** at a boundary: ``step`` raises :class:`Killed` (a ``BaseException``, as a signal is:
  ``except Exception`` does not catch it), so nothing after that boundary runs; the recipe's
  in-memory objects are dropped and the same call is made again from a new process's view
  (:meth:`~LifecycleContract.reopen`);
- **two writers**: two threads run their calls, each held at a boundary until the other has
  reached one (:class:`Turns`), so the interleaving is the same on every run.

A case a store cannot meet is a named exception (:attr:`~LifecycleContract.exceptions`), run as a
strict ``xfail``: the test must still fail, so the table cannot go stale silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from argus_ir.testing.comparator import Row, compare, either, lineage_of, missed
from argus_ir.testing.contract import BOGART, CURIE, PLAIN, contract_kb
from argus_ir.testing.faults import Killed, Step, Turns, count_steps, no_step, stepping

__all__ = [
    "SCENARIOS",
    "Call",
    "Input",
    "Killed",
    "LifecycleContract",
    "Row",
    "Scenario",
    "Step",
    "Turns",
    "compare",
    "corpus",
    "expected_sources",
    "lineage_of",
    "source_id",
]


@dataclass(frozen=True)
class Input:
    """An input document of the recipe: what a user hands the ingest step."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


# the corpus ------------------------------------------------------------------------------------

_TEXTS = {
    "bogart": BOGART,
    "curie": CURIE,
    "plain": PLAIN,
    "falcon": "Humphrey Bogart read the script of Casablanca twice before he agreed to the part.",
    "radium": "Marie Curie shipped a gram of radium across the Atlantic in a lead case.",
    "lucknow": "Lucknow's old bazaars sell chikan embroidery and kebabs late into the night.",
}
_VERSIONS = {
    # each new version names another entity, so its views differ from the last version's
    2: {
        "bogart": "Marie Curie once lectured in a hall where Humphrey Bogart later filmed.",
        "curie": "Lucknow hosted a chemistry congress where the polonium samples were shown.",
    },
    3: {
        "bogart": "Lucknow's film society screens Humphrey Bogart's pictures every winter.",
        "curie": "Marie Curie and her daughter drove radiology vans along the front in 1914.",
    },
}
SOURCES = tuple(_TEXTS)
CHANGED = ("bogart", "curie")
"""The sources an update changes (to version 2 or 3)."""
GONE = ("falcon", "plain")
"""The sources the delete removes."""


def source_id(name: str) -> str:
    """The id of the corpus's document ``name``: a UUID, an id every store takes (Qdrant takes
    only UUIDs and unsigned integers)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"argus-lifecycle/{name}"))


def corpus(version: int = 1, only: Sequence[str] | None = None) -> list[Input]:
    """The contract's input documents at ``version`` (1: as first ingested; 2 and 3: the
    :data:`CHANGED` sources rewritten); ``only``: just those sources (by name)."""
    texts = {**_TEXTS, **_VERSIONS.get(version, {})}
    names = SOURCES if only is None else [n for n in SOURCES if n in only]
    return [Input(source_id(n), texts[n], {"name": n, "n": SOURCES.index(n)}) for n in names]


# scenarios -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One call of a recipe: ``ingest`` of a corpus version (``only`` those sources; ``full``:
    the whole corpus with full cleanup) or ``delete`` of sources."""

    kind: str
    version: int = 1
    only: tuple[str, ...] | None = None
    full: bool = False

    def __str__(self) -> str:
        if self.kind == "delete":
            return f"delete({','.join(self.only or ())})"
        what = f"v{self.version}" + (f"[{','.join(self.only)}]" if self.only else "")
        return f"{'full' if self.full else 'ingest'}({what})"


INGEST = Call("ingest")
RERUN = Call("ingest")
UPDATE = Call("ingest", 2, CHANGED)
UPDATE_3 = Call("ingest", 3, CHANGED)
DELETE = Call("delete", only=GONE)
FULL = Call("ingest", 2, tuple(s for s in SOURCES if s not in GONE), full=True)


@dataclass(frozen=True)
class Scenario:
    """A row of the table: calls made before (uninterrupted), then the call under test with its
    fault; ``expected`` is the uninterrupted chain whose end the store must equal."""

    name: str
    before: tuple[Call, ...]
    call: Call
    fault: str = "none"  # none | kill | two-writers | two-versions
    other: Call | None = None  # the second writer's call
    expected: tuple[Call, ...] = ()
    splitter: bool = False
    or_else: tuple[Call, ...] = ()  # another chain whose end is as right (two versions)
    quiet: bool = False  # the call must write nothing (a rerun over unchanged documents)

    def ends_as(self) -> tuple[Call, ...]:
        return self.expected or (*self.before, self.call)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("first ingest", (), INGEST),
    Scenario("rerun adds nothing", (INGEST,), RERUN, expected=(INGEST,), quiet=True),
    Scenario("update", (INGEST,), UPDATE),
    Scenario("delete", (INGEST,), DELETE),
    Scenario("whole corpus, full cleanup", (INGEST,), FULL),
    Scenario("ingest killed", (), INGEST, fault="kill"),
    Scenario("update killed", (INGEST,), UPDATE, fault="kill"),
    Scenario("delete killed", (INGEST,), DELETE, fault="kill"),
    Scenario("full cleanup killed", (INGEST,), FULL, fault="kill"),
    Scenario("two writers, one version", (), INGEST, fault="two-writers", other=INGEST),
    Scenario(
        "two writers, two versions",
        (INGEST,),
        UPDATE,
        fault="two-versions",
        other=UPDATE_3,
        expected=(INGEST, UPDATE_3),
        or_else=(INGEST, UPDATE),  # whichever version's writer finished last, whole
    ),
    Scenario("splitter: first ingest", (), INGEST, splitter=True),
    Scenario("splitter: ingest killed", (), INGEST, fault="kill", splitter=True),
    Scenario("splitter: update killed", (INGEST,), UPDATE, fault="kill", splitter=True),
)


def expected_sources(calls: Sequence[Call]) -> dict[str, str]:
    """The documents a chain of calls must leave, by id, with their texts: an ingest adds or
    replaces what it is given, a full one leaves nothing else, a delete removes."""
    held: dict[str, str] = {}
    for call in calls:
        if call.kind == "delete":
            for name in call.only or ():
                held.pop(source_id(name), None)
            continue
        given = {d.id: d.text for d in corpus(call.version, call.only)}
        held = given if call.full else {**held, **given}
    return held


_SCRATCH: dict[type, Path] = {}

# the contract ----------------------------------------------------------------------------------


class LifecycleContract:
    """Every :data:`SCENARIOS` row on every store in :attr:`stores`. Subclass it (``Test...``)
    and implement the hooks; see the module's docstring."""

    stores: ClassVar[tuple[str, ...]] = ()
    """The stores the framework's docs support for the recipe."""
    exceptions: ClassVar[Mapping[tuple[str, str], str]] = {}
    """``(store, scenario name)``: why that store cannot meet that scenario (a strict xfail).
    A scenario name alone, with store ``"*"``, applies to every store."""
    every_fault_by_default: ClassVar[tuple[str, ...]] = ()
    """Stores that run the kill scenarios in the default test run; on the others they carry the
    ``slow`` marker (``nox -s slow``). Empty: every store runs every scenario by default. Every
    scenario runs by default on at least one store."""
    writes: ClassVar[tuple[str, ...]] = ()
    """Boundary names (as :func:`~argus_ir.testing.faults.watch` labels them) of the calls that
    write entries: a rerun over unchanged documents must reach none of them."""
    compare_by: ClassVar[str] = "id"
    """``"text"`` where the recipe's splitter makes random ids."""

    # -- hooks ---------------------------------------------------------------------------------

    def open_store(self, store: str, name: str, settings: Mapping[str, Any]) -> Any:
        """A fresh, empty store of kind ``store`` (``name`` isolates it: a collection, a table,
        a folder) with the recipe's state, built with argus ``settings``."""
        raise NotImplementedError

    def reopen(self, handle: Any) -> Any:
        """The same store and recipe state, as a new process opens them after a kill (anything
        the recipe keeps only in memory is lost). Default: the handle itself."""
        return handle

    def close_store(self, handle: Any) -> None:
        """Release what :meth:`open_store` opened. Default: call each of ``handle.closers``
        (a list of callables), where the handle has one."""
        for close in getattr(handle, "closers", ()):
            close()

    @classmethod
    def scratch(cls) -> Path:
        """A folder of this contract class's own for the stores it opens (kept for the session,
        so that a store reopened after a kill finds its files)."""
        if cls not in _SCRATCH:
            _SCRATCH[cls] = Path(tempfile.mkdtemp(prefix=f"argus-{cls.__name__.lower()}-"))
        return _SCRATCH[cls]

    def ingest(
        self, handle: Any, docs: list[Input], *, full: bool, splitter: bool, step: Step
    ) -> None:
        """The docs' ingest recipe over ``docs``; ``full``: remove what the call was not given;
        ``splitter``: the recipe with the framework's splitter before argus."""
        raise NotImplementedError

    def delete(self, handle: Any, sources: list[str], *, step: Step) -> None:
        """The docs' recipe for deleting whole sources (originals and views)."""
        raise NotImplementedError

    def rows(self, handle: Any) -> list[Row]:
        """Every entry the store holds."""
        raise NotImplementedError

    # -- machinery -----------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def settings(cls, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
        kb = contract_kb(tmp_path_factory.mktemp("argus-lifecycle") / "kb")
        return {"kb": str(kb), "remedy": "expansion"}

    def _call(self, handle: Any, call: Call, step: Step, splitter: bool) -> None:
        with stepping(step):  # writes watched with faults.watch reach this call's step
            if call.kind == "delete":
                self.delete(handle, [source_id(n) for n in call.only or ()], step=step)
            else:
                docs = corpus(call.version, call.only)
                self.ingest(handle, docs, full=call.full, splitter=splitter, step=step)

    def _chain(
        self,
        store: str,
        name: str,
        settings: Mapping[str, Any],
        calls: Sequence[Call],
        split: bool,
        last: Step = no_step,
    ) -> list[Row]:
        """The rows ``calls`` leave in a fresh store, uninterrupted; ``last``: the boundary hook
        of the last call (to count its boundaries)."""
        handle = self.open_store(store, name, settings)
        try:
            for i, call in enumerate(calls, start=1):
                self._call(handle, call, last if i == len(calls) else no_step, split)
            return self.rows(handle)
        finally:
            self.close_store(handle)

    def _exception(self, store: str, scenario: Scenario) -> str | None:
        return self.exceptions.get((store, scenario.name)) or self.exceptions.get(
            ("*", scenario.name)
        )

    def check(self, store: str, scenario: Scenario, settings: Mapping[str, Any], name: str) -> None:
        """Run one cell of the table and assert the store ends as the uninterrupted run."""
        split = scenario.splitter
        count = count_steps()  # the boundaries of the call under test, run uninterrupted
        want = self._chain(store, f"{name}-want", settings, scenario.ends_as(), split, count)
        if not split:  # a splitter's originals are chunks: checked against the run alone
            wrong = missed(want, expected_sources(scenario.ends_as()))
            assert not wrong, f"{store}, {scenario.name}, uninterrupted: " + "; ".join(wrong)
        if scenario.fault == "kill":  # its uninterrupted chain is the one just run
            assert scenario.ends_as() == (*scenario.before, scenario.call), scenario.name
            self._kills(store, scenario, settings, name, want, count.names)
            return
        handle = self.open_store(store, name, settings)
        try:
            for call in scenario.before:
                self._call(handle, call, no_step, split)
            if scenario.fault in ("two-writers", "two-versions"):
                other = self.reopen(handle)
                second = scenario.other or scenario.call
                try:
                    Turns().run(
                        lambda step: self._call(handle, scenario.call, step, split),
                        lambda step: self._call(other, second, step, split),
                    )
                finally:
                    if other is not handle:
                        self.close_store(other)
            else:
                seen = count_steps()
                self._call(handle, scenario.call, seen, split)
                if scenario.quiet:
                    written = [n for n in seen.names if n in self.writes]
                    assert not written, (
                        f"{store}, {scenario.name}: the rerun wrote again ({written})"
                    )
            got = self.rows(handle)
            problems = compare(want, got, by=self._by(scenario))
            if problems and scenario.or_else:
                other_end = self._chain(store, f"{name}-else", settings, scenario.or_else, split)
                problems = either(want, other_end, got, by=self._by(scenario))
            assert not problems, f"{store}, {scenario.name}: " + "; ".join(problems)
        finally:
            self.close_store(handle)

    def _by(self, scenario: Scenario) -> str:
        return self.compare_by if scenario.splitter else "id"

    def _kills(
        self,
        store: str,
        scenario: Scenario,
        settings: Mapping[str, Any],
        name: str,
        want: list[Row],
        boundaries: list[str],
    ) -> None:
        """The call killed at each of its ``boundaries`` in turn (a fresh store each), then run
        once more uninterrupted: every end must equal ``want``."""
        split = scenario.splitter
        assert boundaries, f"{store}: the recipe of {scenario.call} reports no boundary"
        for k, boundary in enumerate(boundaries[:-1], start=1):  # after the last: nothing left
            handle = self.open_store(store, f"{name}-k{k}", settings)
            try:
                for call in scenario.before:
                    self._call(handle, call, no_step, split)
                with contextlib.suppress(Killed):  # fewer boundaries this time: not killed
                    self._call(handle, scenario.call, count_steps(k), split)
                again = self.reopen(handle)
                try:
                    self._call(again, scenario.call, no_step, split)
                    problems = compare(want, self.rows(again), by=self._by(scenario))
                finally:
                    if again is not handle:
                        self.close_store(again)
                assert not problems, (
                    f"{store}, {scenario.name}, killed after {boundary!r} ({k} of "
                    f"{len(boundaries)}): " + "; ".join(problems)
                )
            finally:
                self.close_store(handle)

    def cells(self) -> list[Any]:
        """The table's cells as pytest params: every store × scenario, exceptions as strict
        xfails naming why."""
        cells = []
        for store in self.stores:
            for scenario in SCENARIOS:
                why = self._exception(store, scenario)
                marks: list[Any] = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                default = self.every_fault_by_default
                if scenario.fault == "kill" and default and store not in default:
                    marks.append(pytest.mark.slow)
                cells.append(
                    pytest.param((store, scenario), marks=marks, id=f"{store}-{scenario.name}")
                )
        return cells

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "cell" in metafunc.fixturenames:
            metafunc.parametrize("cell", self.cells())

    def test_lifecycle(
        self, cell: tuple[str, Scenario], settings: dict[str, Any], request: pytest.FixtureRequest
    ) -> None:
        """After the scenario's fault and one rerun of the same call, the store equals the
        uninterrupted run: no duplicate, no orphan view, no stale view."""
        store, scenario = cell
        name = "lc" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
        self.check(store, scenario, settings, name)
