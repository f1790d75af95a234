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
