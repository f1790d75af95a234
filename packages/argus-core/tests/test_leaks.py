"""Issue 54, item 15: what argus starts it also ends, when a start fails part way too.

The NER worker case runs in a fresh interpreter whose file limit lets the first worker start and
the second fail (a real ``Too many open files``), and lists that interpreter's child processes
after the failure: a worker started and never waited for is still there, running or a zombie.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("spacy")

_WORKERS_FAIL_TO_START = textwrap.dedent(
    """
    import json, os, resource
    from argus_ir.text.ner_workers import NerWorkers

    def is_open(fd):
        try:
            os.fstat(fd)
            return True
        except OSError:
            return False

    processes = 3
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    free = limit = 0
    while free < processes + 6:  # the logs, then one worker: two pipes and Popen's error pipe
        free += not is_open(limit)
        limit += 1
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        NerWorkers("no_such_pipeline", ["PERSON"], 8, processes)
    except OSError as exc:
        failed = f"{type(exc).__name__}: {exc}"
    else:
        failed = None
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    me, children = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                stat = fh.read()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me:  # the parent's pid, after the name
            children.append(pid)
    print(json.dumps({"failed": failed, "children": children}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_started_before_a_failed_start_are_ended():
    """``NerWorkers`` started its processes in one list: when the second could not start, the
    first ran on, never waited for (and its log file stayed open)."""
    run = subprocess.run(
        [sys.executable, "-c", _WORKERS_FAIL_TO_START],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["failed"] is not None and "Too many open files" in seen["failed"]
    assert seen["children"] == []


_BROKEN = {"on": "everything"}  # what the broken component below fails on


def _broken_spacy(doc):
    if _BROKEN["on"] == "everything" or _BROKEN["on"] in doc.text:
        raise ValueError("[E999] this spaCy cannot run its pipeline")
    return doc


def test_a_broken_spacy_on_a_cpu_ner_actor_is_raised_not_hidden(minilm, monkeypatch):
    """The NER stage of a Ray GPU pool (``ArgusMentionFinder``, built here without Ray) turned a
    spaCy that fails on every text into null mentions for every row, and the GPU actors then ran
    NER themselves, a batch at a time, with nothing said. Now it is raised, as the single process
    raises it, when a known good text fails too; a text that alone fails is still left to the
    GPU actor."""
    pytest.importorskip("sentence_transformers")
    import pyarrow as pa
    import torch
    from spacy.language import Language

    from argus_ir import Argus
    from argus_ir.runners.ray_gpu import MENTIONS_COLUMN, ArgusMentionFinder
    from argus_ir.runners.ray_input import LINE_COLUMNS

    if not Language.has_factory("argus_test_broken"):
        Language.component("argus_test_broken", func=_broken_spacy)
    monkeypatch.setattr(Argus, "_load_encoder", lambda self: minilm)  # the session's retriever
    threads = torch.get_num_threads()  # as it is: the actor sets torch's threads
    finder = ArgusMentionFinder(Argus(ner_processes=1), threads=threads)
    finder.diagnoser.mentions.nlp.add_pipe("argus_test_broken", last=True)
    docs = [
        {"_id": "a", "title": "", "text": "Marie Curie worked in Paris on radium."},
        {"_id": "b", "title": "", "text": "Niels Bohr visited Lucknow in 1960."},
    ]
    table = pa.table(
        {
            LINE_COLUMNS[0]: [f"c.jsonl:{i}" for i in range(1, 3)],
            LINE_COLUMNS[1]: [json.dumps(d) for d in docs],
        }
    )
    monkeypatch.setitem(_BROKEN, "on", "everything")
    with pytest.raises(RuntimeError, match=r"NER on this CPU actor fails on every text.*E999"):
        finder(table)
    monkeypatch.setitem(_BROKEN, "on", "Curie")  # one document's fault: null, for the GPU actor
    column = finder(table).column(MENTIONS_COLUMN).to_pylist()
    assert column[0] is None and json.loads(column[1])[1]  # Bohr's and Lucknow's spans
