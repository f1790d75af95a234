"""The whole ingest as a framework user runs it: plain, argus embedding twice, argus embedding once.

For each framework, three pipelines over the same documents, each in a fresh Python process, the
clock started before any import and stopped when the store holds every vector (imports, model, NER
and KB loads included):

- **plain**: the framework's own embedder writes the documents to its in-memory store;
- **twice**: argus's step first (its defaults), then the same embedder over originals and views:
  the path every framework page gave before issue 53;
- **once**: argus's step with ``embed=True``, the store fed the vectors argus computed (LangChain:
  ``transformer.embeddings(base)``; LlamaIndex: ``node.embedding``; Haystack: ``Document.embedding``,
  no embedder in the pipeline). The query-time model is still built, as a user's ingest that also
  serves queries does.

Frameworks: LangChain (``HuggingFaceEmbeddings`` + ``InMemoryVectorStore``), LlamaIndex
(``HuggingFaceEmbedding`` in an ``IngestionPipeline`` + ``SimpleVectorStore``), Haystack
(``SentenceTransformersDocumentEmbedder`` + ``DocumentWriter`` + ``InMemoryDocumentStore``). Every
model is the offline all-MiniLM-L6-v2, on the CPU, fp32. Documents: SciFact's first ``--limit``
(title, newline, text). ``--repeats`` alternates the conditions and keeps each one's fastest run.
Reported: seconds, records written and peak RSS per condition, and ``twice/plain`` and
``once/plain`` against the growth ``g`` (records / documents).

``--expansion-recipe`` adds the recipe the framework pages printed before (``remedy="expansion"``,
embed once) as a fourth condition, ``once-expansion``.

``--stream N`` adds a LangChain stream of N documents (SciFact and MS MARCO 5k, repeated under new
ids) transformed and added in chunks of 1,000 into FAISS, with embed off and on: RSS after each
chunk, so that a flat memory shows.

``nox -s bench -- framework-ingest [--frameworks langchain] [--conditions plain,once]
[--limit 1000] [--repeats 2] [--stream 20000]``.
Results: ``benchmarks/results/framework-ingest-*.json`` (written after every run: rerunning resumes).
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # before any heavy import: a fresh process's clock

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
FRAMEWORKS = ("langchain", "llamaindex", "haystack")
CONDITIONS = ("plain", "twice", "once")
CHUNK = 1000


def read_corpus(shared: Path, limit: int, names: tuple[str, ...] = ("scifact",)) -> list[dict]:
    rows: list[dict] = []
    for name in names:
        with open(shared / "beir" / name / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rows.append(json.loads(line))
    out: list[dict] = []
    copy = 0
    while len(out) < limit:
        for row in rows:
            if len(out) >= limit:
                break
            suffix = f"~r{copy}" if copy else ""
            title, text = row.get("title") or "", row.get("text") or ""
            out.append(
                {"id": f"{row['_id']}{suffix}", "text": f"{title}\n{text}" if title else text}
            )
        copy += 1
    return out


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _model_path() -> str:
    from argus_ir.testing import minilm_path

    return str(minilm_path())


# -- one condition, in a child process ---------------------------------------------------------


def run_langchain(condition: str, rows: list[dict]) -> int:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_huggingface import HuggingFaceEmbeddings

    from langchain_argus import ArgusDocumentTransformer

    docs = [Document(page_content=r["text"], id=r["id"]) for r in rows]
    base = HuggingFaceEmbeddings(model_name=_model_path(), model_kwargs={"device": "cpu"})
    if condition == "plain":
        store = InMemoryVectorStore(base)
    elif condition == "twice":
        transformer = ArgusDocumentTransformer()
        store = InMemoryVectorStore(base)
        docs = list(transformer.transform_documents(docs))
    else:  # once; once-bf16: a bf16 diagnosis pass, every record embedded again in fp32
        precision = "bf16" if condition == "once-bf16" else "auto"
        transformer = ArgusDocumentTransformer(
            embed=True, precision=precision, **_remedy(condition)
        )
        store = InMemoryVectorStore(transformer.embeddings(base))
        docs = list(transformer.transform_documents(docs))
    store.add_documents(docs)
    return len(store.store)


def _remedy(condition: str) -> dict[str, str]:
    """``once-expansion``: the recipe every framework page printed before issue 60
    (``remedy="expansion"``, embed once); every other condition runs argus's default remedy."""
    return {"remedy": "expansion"} if condition == "once-expansion" else {}


def run_llamaindex(condition: str, rows: list[dict]) -> int:
    from llama_index.core import Settings
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from argus_llamaindex import ArgusTransform

    nodes = [TextNode(text=r["text"], id_=r["id"]) for r in rows]
    embed_model = HuggingFaceEmbedding(model_name=_model_path(), device="cpu")
    Settings.embed_model = embed_model  # what queries use
    store = SimpleVectorStore()
    steps: list[Any] = {
        "plain": [embed_model],
        "twice": [ArgusTransform(), embed_model],
        "once": [ArgusTransform(embed=True)],
        "once-expansion": [ArgusTransform(embed=True, **_remedy(condition))],
    }[condition]
    IngestionPipeline(transformations=steps, vector_store=store).run(nodes=nodes)
    return len(store.data.embedding_dict)


def run_haystack(condition: str, rows: list[dict]) -> int:
    from haystack import Document, Pipeline
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack.utils import ComponentDevice

    from haystack_integrations.components.augmenters.argus import ArgusAugmenter
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    docs = [Document(content=r["text"], id=r["id"]) for r in rows]
    device = ComponentDevice.from_str("cpu")
    query_embedder = SentenceTransformersTextEmbedder(model=_model_path(), device=device)
    query_embedder.warm_up()  # what queries use
    store = InMemoryDocumentStore()
    pipe = Pipeline()
    once = condition.startswith("once")
    if not once:
        pipe.add_component(
            "embedder", SentenceTransformersDocumentEmbedder(model=_model_path(), device=device)
        )
    pipe.add_component("writer", DocumentWriter(document_store=store))
    if condition == "plain":
        pipe.connect("embedder.documents", "writer.documents")
        first = "embedder"
    else:
        pipe.add_component("argus", ArgusAugmenter(embed=once, **_remedy(condition)))
        if condition == "twice":
            pipe.connect("argus.documents", "embedder.documents")
            pipe.connect("embedder.documents", "writer.documents")
        else:
            pipe.connect("argus.documents", "writer.documents")
        first = "argus"
    pipe.run({first: {"documents": docs}})
    written = store.filter_documents()
    assert all(d.embedding is not None for d in written)
    return len(written)


def run_stream(embed: bool, rows: list[dict], marks: list[dict], log: Path | None = None) -> int:
    """LangChain, chunk by chunk into FAISS: RSS after each chunk (appended to ``log`` as it
    goes, so a long stream shows its marks before it ends)."""
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_huggingface import HuggingFaceEmbeddings

    from langchain_argus import ArgusDocumentTransformer

    base = HuggingFaceEmbeddings(model_name=_model_path(), model_kwargs={"device": "cpu"})
    transformer = ArgusDocumentTransformer(embed=embed)
    embeddings = transformer.embeddings(base) if embed else base
    store = None
    written = 0
    for start in range(0, len(rows), CHUNK):
        chunk = [Document(page_content=r["text"], id=r["id"]) for r in rows[start : start + CHUNK]]
        out = list(transformer.transform_documents(chunk))
        if store is None:
            store = FAISS.from_documents(out, embeddings)
        else:
            store.add_documents(out)
        written += len(out)
        marks.append(
            {
                "documents": start + len(chunk),
                "seconds": time.perf_counter() - _START,
                "rss_mib": _rss_mib(),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
        if log is not None:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(marks[-1]) + "\n")
    return written


def child(args: argparse.Namespace) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    rows = read_corpus(args.shared_data, args.limit, tuple(args.corpora.split(",")))
    marks: list[dict] = []
    if args.framework == "stream":
        records = run_stream(args.condition == "once", rows, marks, args.marks)
    else:
        records = globals()[f"run_{args.framework}"](args.condition, rows)
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - _START,
                "records": records,
                "documents": len(rows),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "marks": marks,
            }
        )
    )


# -- the parent: alternate, keep the fastest, write after every run -----------------------------


def _one(
    framework: str,
    condition: str,
    args: argparse.Namespace,
    limit: int,
    corpora: str,
    marks: Path | None = None,
) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--framework",
        framework,
        "--condition",
        condition,
        "--limit",
        str(limit),
        "--corpora",
        corpora,
        "--shared-data",
        str(args.shared_data),
        *(["--marks", str(marks)] if marks is not None else []),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{framework}/{condition} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in (
        "torch",
        "sentence-transformers",
        "langchain-core",
        "langchain-huggingface",
        "llama-index-core",
        "llama-index-embeddings-huggingface",
        "haystack-ai",
        "sentence-transformers-haystack",
    ):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--stream", type=int, default=0, help="documents in the RSS stream (0: none)"
    )
    parser.add_argument("--tag", default="", help="a suffix for the result file's name")
    parser.add_argument(
        "--conditions",
        default=",".join(CONDITIONS),
        help="which of plain, twice, once to run (default: all three)",
    )
    parser.add_argument(
        "--bf16-pass",
        action="store_true",
        help="LangChain also with precision='bf16' and embed=True (a bf16 diagnosis pass, every "
        "record embedded again in fp32), against the fp32 pass that serves both",
    )
    parser.add_argument(
        "--expansion-recipe",
        action="store_true",
        help="also the recipe with remedy='expansion' and embed=True (condition once-expansion)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--framework", help=argparse.SUPPRESS)
    parser.add_argument("--condition", help=argparse.SUPPRESS)
    parser.add_argument("--corpora", default="scifact", help=argparse.SUPPRESS)
    parser.add_argument("--marks", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    tag = f"-{args.tag}" if args.tag else ""
    out = HERE / "results" / f"framework-ingest-{args.limit}{tag}.json"
    result: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    result.setdefault("commands", []).append(" ".join(sys.argv))
    result.update(
        {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "versions": _versions(),
        }
    )
    runs: dict[str, dict[str, list[dict]]] = result.setdefault("runs", {})

    def save() -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")

    conditions = [c for c in args.conditions.split(",") if c]
    unknown = sorted(set(conditions) - set(CONDITIONS))
    if unknown:
        parser.error(f"--conditions: unknown {', '.join(unknown)} (known: {', '.join(CONDITIONS)})")
    for framework in [f for f in args.frameworks.split(",") if f]:
        done = runs.setdefault(framework, {})
        for _ in range(args.repeats):
            for condition in conditions:
                if len(done.get(condition, [])) >= args.repeats:
                    continue
                row = _one(framework, condition, args, args.limit, "scifact")
                done.setdefault(condition, []).append(row)
                print(framework, condition, f"{row['seconds']:.1f} s", row["records"], flush=True)
                save()
        best = {c: min(r["seconds"] for r in done[c]) for c in CONDITIONS if done.get(c)}
        if "plain" in best and "once" in best:
            growth = done["once"][0]["records"] / done["once"][0]["documents"]
            summary: dict[str, Any] = {f"{c}_s": round(s, 1) for c, s in best.items()}
            for c in ("twice", "once"):
                if c in best:
                    summary[f"{c}_over_plain"] = round(best[c] / best["plain"], 3)
            summary.update(
                {
                    "growth": round(growth, 3),
                    "bar_growth_plus_0.2": round(growth + 0.2, 3),
                    "peak_rss_mib": {c: round(done[c][0]["peak_rss_mib"]) for c in best},
                }
            )
            result.setdefault("summary", {})[framework] = summary
            print(framework, result["summary"][framework], flush=True)
            save()
        if args.expansion_recipe:
            while len(done.get("once-expansion", [])) < args.repeats:
                row = _one(framework, "once-expansion", args, args.limit, "scifact")
                done.setdefault("once-expansion", []).append(row)
                print(framework, "once-expansion", f"{row['seconds']:.1f} s", flush=True)
                save()
            if done.get("plain"):
                plain = min(r["seconds"] for r in done["plain"])
                expansion = min(r["seconds"] for r in done["once-expansion"])
                first = done["once-expansion"][0]
                result.setdefault("expansion", {})[framework] = {
                    "once_expansion_s": round(expansion, 1),
                    "once_expansion_over_plain": round(expansion / plain, 3),
                    "growth": round(first["records"] / first["documents"], 3),
                }
                print(framework, result["expansion"][framework], flush=True)
                save()
    if args.bf16_pass:
        done = runs.setdefault("langchain", {})
        while len(done.get("once-bf16", [])) < args.repeats:
            row = _one("langchain", "once-bf16", args, args.limit, "scifact")
            done.setdefault("once-bf16", []).append(row)
            print("langchain once-bf16", f"{row['seconds']:.1f} s", row["records"], flush=True)
            save()
    if args.stream:
        stream = result.setdefault("stream", {})
        for condition in ("once", "twice"):  # embed on, embed off (today)
            if condition not in stream:
                marks = out.with_name(f"{out.stem}-stream-{condition}.jsonl")
                marks.unlink(missing_ok=True)
                stream[condition] = _one(
                    "stream", condition, args, args.stream, "scifact,msmarco5k", marks
                )
                save()
            marks = stream[condition]["marks"]
            print("stream", condition, [round(m["rss_mib"]) for m in marks], flush=True)


if __name__ == "__main__":
    main()
