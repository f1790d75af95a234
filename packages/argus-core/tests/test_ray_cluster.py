"""A real two-node Ray cluster on this machine (``ray start --head`` and a second ``ray start
--address``, CPU only): actors on both nodes, and the GPU pool's split (NER on CPU actors, the
retriever on actors that hold a GPU) scheduled where the GPU is, each giving exactly the output of
the single process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest

pytest.importorskip("spacy")
pytest.importorskip("sentence_transformers")
ray = pytest.importorskip("ray")

RAY_CLI = Path(sys.executable).with_name("ray")  # the CLI of the Ray this interpreter imports
pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not RAY_CLI.is_file(),
    reason="needs POSIX process groups and the ray CLI beside the interpreter",
)

N_DOCS = 24
DOCS_PER_BATCH = 3  # blocks of four batches (12 rows): two blocks, one for each worker
STARTUP_S = 120.0


@dataclass
class Nodes:
    """The two ``ray start`` processes, starting or started."""

    address: str
    procs: list[subprocess.Popen[bytes]]
    logs: list[Path]


@dataclass
class Cluster:
    """The cluster this process is connected to, and its nodes' ids."""

    address: str
    head: str
    gpu_node: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``ray start ... --block`` in a session of its own: the node's processes stay in its group,
    and ending the group ends this node alone (``ray stop`` would end every Ray of the user)."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            [os.fspath(RAY_CLI), "start", "--block", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _wait(ready, what: str, procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    deadline = time.monotonic() + STARTUP_S
    while not ready():
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            tail = "\n".join(log.read_text("utf-8", "replace")[-2000:] for log in logs)
            pytest.fail(f"the local Ray cluster did not come up ({what}):\n{tail}")
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # ray start --block ends the node's processes
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the node's group is left


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    """A head node with two CPUs and no GPU, and a second node with one CPU and one GPU that it
    declares without having it (Ray allows that): a GPU actor can only be scheduled there. Both
    start in the background (the single process's run goes on meanwhile) and stop after the
    module, their processes alone."""
    # a short folder: Ray's socket paths under it must stay within the 107 bytes Unix allows
    tmp = Path(tempfile.mkdtemp(prefix="argus-ray-"))
    port = _free_port()
    env = {
        **os.environ,
        # token authentication off, explicitly, on both nodes: otherwise a token file left in
        # the home folder by an earlier local cluster turns it on for the head alone
        "RAY_AUTH_MODE": "disabled",
        # a node that gets SIGTERM stops at once, not after draining for 30 s
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
    }
    env.pop("RAY_ADDRESS", None)
    common = [
        "--node-ip-address=127.0.0.1",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
        f"--temp-dir={tmp}",
    ]
    address = f"127.0.0.1:{port}"
    started = Nodes(address, [], [tmp / "head.log", tmp / "worker.log"])
    try:
        head_args = ["--head", f"--port={port}", "--num-cpus=2", "--num-gpus=0"]
        head_args += ["--include-dashboard=false", f"--ray-client-server-port={_free_port()}"]
        started.procs.append(_start([*head_args, *common], started.logs[0], env))

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        _wait(listening, "head", started.procs, started.logs[:1])
        node_args = [f"--address={address}", "--num-cpus=1", "--num-gpus=1"]
        started.procs.append(_start([*node_args, *common], started.logs[1], env))
        yield started
    finally:
        _stop(started.procs[::-1])
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(nodes: Nodes) -> Iterator[Cluster]:
    """This process connected to the two nodes once both are up."""
    if ray.is_initialized():
        ray.shutdown()
    try:
        ray.init(address=nodes.address, log_to_driver=False)
        _wait(lambda: len(_alive()) == 2, "second node", nodes.procs, nodes.logs)
        alive = _alive()
        head = next(n["NodeID"] for n in alive if not n["Resources"].get("GPU"))
        gpu_node = next(n["NodeID"] for n in alive if n["Resources"].get("GPU"))
        yield Cluster(nodes.address, head, gpu_node)
    finally:
        ray.shutdown()


def _alive() -> list[dict]:
    return [n for n in ray.nodes() if n["Alive"]]


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> Path:
    """The first MS MARCO passages (JSONL)."""
    path = tmp_path_factory.mktemp("cluster-corpus") / "corpus.jsonl"
    with open(shared_data / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        path.write_text("".join(islice(fh, N_DOCS)), "utf-8")
    return path


@pytest.fixture(scope="module")
def single(corpus: Path, nodes: Nodes, tmp_path_factory) -> list[str]:
    """The single process's output (``argus augment``'s engine), rows in canonical form; run
    while the nodes start."""
    from argus_ir import Argus
    from argus_ir.runners.stream import augment_file

    out = tmp_path_factory.mktemp("cluster-single") / "single.jsonl"
    augment_file(Argus(), corpus, out, show_progress=False)
    with open(out, encoding="utf-8") as fh:  # not splitlines(): texts may hold U+0085
        rows = [json.loads(line) for line in fh]
    assert len(rows) > N_DOCS  # originals and views
    return _canonical(rows)


def _canonical(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows)


def _ray_rows(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    table = pq.read_table(folder)
    assert not any(table.column("argus_failure").to_pylist())
    return _canonical(
        [
            {"_id": r["_id"], "title": r["title"], "text": r["text"]}
            | {"metadata": json.loads(r["metadata"])}
            for r in table.to_pylist()
        ]
    )


def _actors(udf: str) -> dict[str, str]:
    """The actors of ``udf``'s stage this driver started, each with the node it ran on."""
    from ray._private import state  # the GCS's actor table, dead actors too: no dashboard needed

    job = ray.JobID.from_hex(ray.get_runtime_context().get_job_id())
    return {
        actor_id: a["Address"]["NodeID"]
        for actor_id, a in state.actors(job_id=job).items()
        if udf in a["ActorClassName"] and a["Address"]["NodeID"]
    }


def test_two_nodes_give_the_single_process_output(single, cluster, corpus, tmp_path):
    """Two one-CPU workers, placed one on each node (Ray Data spreads its actors)."""
    from argus_ir import Argus
    from argus_ir.runners.ray_data import augment_files

    assert {n["NodeID"] for n in _alive()} == {cluster.head, cluster.gpu_node}
    before = _actors("ArgusBatchAugmenter")
    out = tmp_path / "out"
    argus = Argus(batch_size=DOCS_PER_BATCH)
    summary = augment_files(corpus, out, argus, workers=2, show_progress=False)
    assert summary.documents == N_DOCS
    assert _ray_rows(out) == single
    started = [node for a, node in _actors("ArgusBatchAugmenter").items() if a not in before]
    assert sorted(started) == sorted([cluster.head, cluster.gpu_node])


def test_a_gpu_pool_runs_ner_on_cpus_and_the_retriever_where_the_gpu_is(
    single, cluster, corpus, tmp_path
):
    """``gpus_per_worker=1``: the retriever's actor can only go to the node with the GPU, NER's
    to the head, and the output is the single process's (the node's GPU is declared, not real,
    so the retriever runs on the CPU there, with a warning)."""
    from argus_ir import Argus
    from argus_ir.runners.ray_data import augment_files

    before = {**_actors("ArgusBatchAugmenter"), **_actors("ArgusMentionFinder")}
    out = tmp_path / "out"
    argus = Argus(batch_size=DOCS_PER_BATCH)
    augment_files(corpus, out, argus, workers=1, gpus_per_worker=1, show_progress=False)
    assert _ray_rows(out) == single
    gpu = [node for a, node in _actors("ArgusBatchAugmenter").items() if a not in before]
    assert gpu == [cluster.gpu_node]
    ner = {node for a, node in _actors("ArgusMentionFinder").items() if a not in before}
    assert ner == {cluster.head}  # off the GPU node, whose one CPU the GPU actor needs


def test_more_gpus_than_any_node_has_fails_at_once(cluster, corpus, tmp_path):
    """Ray would wait forever for an actor no node can hold: refused before anything runs."""
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    start = time.monotonic()
    with pytest.raises(ArgusInputError) as info:
        augment_files(corpus, tmp_path / "out", Argus(), workers=1, gpus_per_worker=2)
    assert str(info.value).startswith(
        "gpus_per_worker=2, but no node of the Ray cluster has 2 GPUs (the cluster has 1 GPU)"
    )
    assert time.monotonic() - start < 10
    assert not (tmp_path / "out").exists()
