"""benchmarks/cpu_path.py: the recorded forward answers every window as the model did, and the CPU
of worker processes is counted.

The benchmarks folder is no package, so the script is imported by path.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest


@pytest.fixture(scope="module")
def cp(load_benchmark):
    return load_benchmark("cpu_path")


def test_a_replayed_forward_gives_the_recorded_outputs_and_counts_what_it_misses(cp, tmp_path):
    from argus_ir.encoder.base import TokenEncoder

    calls = []

    def model(encoder, batch_ids, pad_to=None):  # stands in for the real forward
        calls.append(len(batch_ids))
        states = [np.full((len(ids), 3), float(sum(ids)), np.float32) for ids in batch_ids]
        docs = [np.full(3, float(len(ids)), np.float32) for ids in batch_ids]
        return states, docs

    real = TokenEncoder._forward
    try:
        TokenEncoder._forward = model
        recorder = cp.Recorder()
        recorder.install()
        first = TokenEncoder._forward(None, [[1, 2, 3], [4, 5]])
        recorder.save(tmp_path / "forward.npz")

        TokenEncoder._forward = model
        replay = cp.Recorder(cp.Recorder.load(tmp_path / "forward.npz"))
        replay.install()
        again = TokenEncoder._forward(None, [[4, 5], [1, 2, 3]])
        assert calls == [2]  # answered from the recording: the model was not called again
        assert np.array_equal(again[0][0], first[0][1]) and np.array_equal(again[0][1], first[0][0])
        assert np.array_equal(again[1][1], first[1][0])
        TokenEncoder._forward(None, [[1, 2, 3], [9]])  # one window never recorded
        assert replay.misses == 1 and calls == [2, 2]
    finally:
        TokenEncoder._forward = real


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_cpu_of_a_worker_process_is_counted(cp):
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    child = subprocess.Popen([sys.executable, "-c", spin + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 20
        while cp._children_cpu().get(child.pid, 0.0) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cp._children_cpu()[child.pid] >= 0.4
    finally:
        child.kill()
        child.wait()
