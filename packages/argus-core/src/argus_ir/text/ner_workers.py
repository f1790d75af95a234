"""spaCy NER in worker processes of their own, for :class:`~argus_ir.text.mentions.SpacyMentions`.

Each worker is a fresh interpreter (``python -m argus_ir.text.ner_serve``) with the caller's
import path. Unlike :mod:`multiprocessing`'s spawn, it never imports the caller's ``__main__``
again, so a script without an ``if __name__ == "__main__":`` guard does not run twice. The
protocol is one JSON line each way on the worker's stdin and stdout: a list of texts in, a list
of ``[start, end, label]`` lists per text out (after the worker's first line, which says it has
loaded its pipeline or why it could not). Whatever else the worker prints goes to its stderr.

Workers started with a retriever's tokenizer also tokenise what they read, for the process that
feeds the retriever (:mod:`argus_ir.encoder.tokens`; :meth:`NerWorkers.send` with ``tokenize``).

A call gives each worker one contiguous run of texts (:func:`split_by_length` balances them by
length; the caller may read a run of its own meanwhile) and puts the answers back in input order:
the same mentions, in the same order, as in one process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["Answer", "NerWorkerError", "NerWorkers", "split_by_length"]

Answer = tuple[list[tuple[int, int, str]], int | None, str | None]
"""A worker's answer for one text: its ``(start, end, label)`` entities, and, for a call that
tokenised, where NER's reading stopped and the text's packed tokens."""


class NerWorkerError(RuntimeError):
    """A worker could not start, stopped, or could not read a text (the message says which).

    Attributes:
        alive: The workers still answer (one text of this call failed in a worker).
    """

    def __init__(self, message: str, *, alive: bool = False) -> None:
        super().__init__(message)
        self.alive = alive


def split_by_length(texts: Sequence[str], parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ``(start, end)`` runs of ``texts`` of about equal total length.

    Empty runs are left out; every text is in exactly one run, in order.
    """
    total = sum(len(t) + 1 for t in texts)  # +1: an empty text still costs a call
    bounds: list[tuple[int, int]] = []
    start = seen = 0
    for i, text in enumerate(texts):
        seen += len(text) + 1
        if len(bounds) < parts - 1 and seen * parts >= total * (len(bounds) + 1):
            bounds.append((start, i + 1))
            start = i + 1
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


class NerWorkers:
    """``processes`` NER workers, started at once, each loading the pipeline in parallel.

    Args:
        model: The spaCy pipeline (package name or folder).
        labels: Entity types to keep.
        batch_size: Texts per ``nlp.pipe`` batch in each worker.
        processes: How many workers.
        tokenizer: A retriever's tokenizer (:func:`~argus_ir.encoder.tokens.backend_json`'s
            text) the workers also tokenise with, when :meth:`send` asks them to.

    Raises:
        OSError: A worker process could not be started (the ones already started are ended).
        NerWorkerError: From :meth:`send` or :meth:`receive`, when a worker fails to start or to
            answer, or could not read a text.
    """

    def __init__(
        self,
        model: str,
        labels: Sequence[str],
        batch_size: int,
        processes: int,
        tokenizer: str | None = None,
    ) -> None:
        self.processes = processes
        self.tokenizer = tokenizer
        path = os.pathsep.join(p for p in [_package_root(), *sys.path] if p)
        env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
        # every worker on one core: spaCy's own thread pools would compete with the others
        env["OMP_NUM_THREADS"] = "1"
        env["TOKENIZERS_PARALLELISM"] = "false"
        # glibc hands NER's per-batch arrays (MBs each) back to the kernel when they are freed and
        # takes fresh zeroed pages for the next batch: a sixth of a worker's CPU went to those page
        # faults (SciFact: 5.4 -> 4.4 CPU ms a document). Keeping up to 128 MB of freed memory for
        # reuse stops that; the user's settings win, and other C libraries ignore the names.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(64 << 20))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(128 << 20))
        argv = [sys.executable, "-m", "argus_ir.text.ner_serve"]
        argv += [model, json.dumps(sorted(labels)), str(batch_size)]
        self._logs: list[IO[bytes]] = []
        self._procs: list[subprocess.Popen] = []
        self._ready = False
        self._tokenizer_file: str | None = None
        try:
            if tokenizer is not None:  # read by each worker as it starts, removed once all have
                with tempfile.NamedTemporaryFile(
                    "w", encoding="utf-8", suffix=".json", delete=False
                ) as fh:
                    fh.write(tokenizer)
                self._tokenizer_file = fh.name
                argv.append(fh.name)
            for _ in range(processes):
                self._logs.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed by close()
                self._procs.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=self._logs[-1],
                        env=env,
                        text=True,
                        encoding="utf-8",
                    )
                )
        except BaseException:
            # a later start failed (no file handles, no memory): the ones started must not
            # run on unwaited, loading a pipeline nobody will ask for
            for proc in self._procs:
                with contextlib.suppress(OSError):
                    proc.kill()
            self.close()
            raise

    def _wait_ready(self) -> None:
        for i, proc in enumerate(self._procs):
            first = self._read(i, proc)
            if first != {"ready": True}:
                raise NerWorkerError(f"NER worker {i} could not load its pipeline: {first}")
        self._ready = True
        self._drop_tokenizer_file()

    def send(
        self, chunks: Sequence[Sequence[str]], *, tokenize: bool = False, width: int | None = None
    ) -> None:
        """Give worker ``i`` the texts ``chunks[i]`` (at most one chunk per worker); answers come
        from :meth:`receive`, which must follow. With ``tokenize`` (workers started with a
        ``tokenizer``), each worker also tokenises its texts and, given a ``width``, reads each
        only up to its first window of ``width`` tokens."""
        if len(chunks) > self.processes:
            raise ValueError(f"{len(chunks)} chunks for {self.processes} workers")
        if tokenize and self.tokenizer is None:
            raise ValueError("these workers were started without a tokenizer")
        if not self._ready:
            self._wait_ready()
        # each worker reads its whole line before it works, so writing them in turn cannot block
        # on a worker that is itself blocked writing its answer
        for chunk, proc in zip(chunks, self._procs, strict=False):
            texts = list(chunk)
            self._write(proc, {"texts": texts, "width": width} if tokenize else texts)

    def receive(self, sizes: Sequence[int]) -> list[Answer]:
        """Per text of the chunks sent (``sizes``: their lengths), in order, its ``(start, end,
        label)`` entities and, where :meth:`send` tokenised, where NER's reading stopped
        and the text's packed tokens (:func:`~argus_ir.encoder.tokens.pack`); else ``None``
        for both. Every answer is read, so the next call starts clean."""
        out: list[Answer] = []
        failed = None
        for i, (size, proc) in enumerate(zip(sizes, self._procs, strict=False)):
            answer = self._read(i, proc)
            if isinstance(answer, dict) and "error" in answer:
                failed = failed or f"NER worker {i} could not read a text: {answer['error']}"
                continue
            try:
                out.extend(_answers(answer, size))
            except (KeyError, TypeError, ValueError):
                raise NerWorkerError(f"NER worker {i} answered {str(answer)[:200]!r}") from None
        if failed:
            raise NerWorkerError(failed, alive=True)
        return out

    @staticmethod
    def _write(proc: subprocess.Popen, request: list[str] | dict[str, Any]) -> None:
        stdin: IO[str] = proc.stdin  # type: ignore[assignment]
        try:
            stdin.write(json.dumps(request) + "\n")  # ASCII: lone surrogates survive
            stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read that follows says why

    def _read(self, i: int, proc: subprocess.Popen) -> Any:
        stdout: IO[str] = proc.stdout  # type: ignore[assignment]
        line = stdout.readline()
        if not line:
            proc.wait()
            raise NerWorkerError(
                f"NER worker {i} stopped (exit status {proc.returncode}): {self._last_words(i)}"
            )
        return json.loads(line)

    def _last_words(self, i: int) -> str:
        log = self._logs[i]
        log.seek(0)
        text = log.read().decode("utf-8", "replace").strip()
        return text[-2000:] or "no output"

    def close(self) -> None:
        """End the workers (closing their input ends them)."""
        for proc in self._procs:
            if proc.stdin is not None and not proc.stdin.closed:
                with contextlib.suppress(OSError):  # a dead worker's pipe cannot take what is left
                    proc.stdin.close()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        for log in self._logs:
            log.close()
        self._procs, self._logs = [], []
        self._drop_tokenizer_file()

    def _drop_tokenizer_file(self) -> None:
        path, self._tokenizer_file = self._tokenizer_file, None
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown: nothing left to tell
            self.close()


def _answers(answer: Any, size: int) -> list[Answer]:
    """A worker's answer for ``size`` texts, checked (a ``ValueError`` where it does not fit)."""
    if isinstance(answer, dict):  # tokenised: {"ents", "ends", "tokens"}
        ents, ends, tokens = answer["ents"], answer["ends"], answer["tokens"]
        if not len(ents) == len(ends) == len(tokens) == size:
            raise ValueError("answers for another number of texts")
        return [(_spans(e), int(end), str(t)) for e, end, t in zip(ents, ends, tokens, strict=True)]
    if not isinstance(answer, list) or len(answer) != size:
        raise ValueError("answers for another number of texts")
    return [(_spans(e), None, None) for e in answer]


def _spans(ents: list) -> list[tuple[int, int, str]]:
    return [(int(s), int(e), str(lab)) for s, e, lab in ents]


def _package_root() -> str:
    """The folder that holds ``argus_ir`` (a worker must import the same copy)."""
    return str(Path(__file__).resolve().parents[2])
