"""What several ``argus`` commands do with their parsed options: build the encoder or the
:class:`~argus_ir.pipeline.Argus` settings, check corpus and ``--out`` paths before any model
loads (bad input is an :class:`~argus_ir.errors.ArgusInputError` naming the flag or path), and
read and write the BEIR evaluations of ``argus evaluate`` and ``argus sira evaluate``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir.errors import ArgusInputError

if TYPE_CHECKING:
    from argus_ir.audit.loaders import Document
    from argus_ir.encoder import TokenEncoder

__all__ = [
    "argus_settings",
    "beir_datasets",
    "corpus_arg",
    "encoder",
    "llm_arg",
    "read_corpus",
    "write_evaluation",
]


def encoder(args: argparse.Namespace) -> TokenEncoder:
    """The retriever of the retriever options (:func:`~argus_ir.cli.options.retriever_options`)."""
    from argus_ir.encoder import load_encoder

    return load_encoder(
        args.retriever,
        backend=args.backend,
        device=args.device,
        batch_size=args.batch_size,
        precision=getattr(args, "precision", "fp32"),
    )


def llm_arg(args: argparse.Namespace) -> Any:
    """``--llm`` as a spec, or as a backend when ``--llm-timeout``, ``--llm-retries`` or
    ``--llm-cool-down`` is set.

    The options apply to every openai: backend of the command: ``--llm``'s and ``--kb-llm``'s
    (``argus augment`` builds that one); they are refused when neither is one.
    """
    options = llm_call_settings(args)
    if not options:
        return args.llm
    if not str(args.llm).startswith("openai:"):
        kb_llm = getattr(args, "kb_llm", None)
        if str(kb_llm).startswith("openai:"):
            return args.llm  # they are --kb-llm's
        raise ArgusInputError(
            "--llm-timeout, --llm-retries and --llm-cool-down apply to an openai: backend "
            f"(--llm or --kb-llm), not {args.llm!r}" + (f" or {kb_llm!r}" if kb_llm else "")
        )
    from argus_ir.llm import load_llm

    try:
        return load_llm(args.llm, **options)
    except ValueError as exc:
        raise ArgusInputError(f"--llm-timeout / --llm-retries / --llm-cool-down: {exc}") from None


def llm_call_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The openai: backend settings the call-policy options set (those left out: none)."""
    given = {
        "timeout": args.llm_timeout,
        "max_retries": args.llm_retries,
        "cool_down": getattr(args, "llm_cool_down", None),
    }
    return {name: value for name, value in given.items() if value is not None}


def argus_settings(args: argparse.Namespace) -> dict[str, Any]:
    """:class:`~argus_ir.pipeline.Argus` settings from the retriever and remedy options."""
    return {
        "retriever": args.retriever,
        "probe": args.probe,
        "k": args.k,
        "tau": args.tau,
        "k_aug": args.k_aug,
        "kb": args.kb,
        "kb_match": args.kb_match,
        "context_threshold": args.context_threshold,
        "max_views": args.max_views,
        "max_chars": args.max_chars,
        "targeting": args.targeting,
        "llm": llm_arg(args),
        "ner_model": args.ner_model,
        "ner_processes": args.ner_processes,
        "backend": args.backend,
        "device": args.device,
        "precision": args.precision,
        "encoder_batch_size": args.batch_size,
    }


# -- corpus and output paths -------------------------------------------------------------------


def corpus_arg(path: Path) -> Path:
    """A corpus argument that exists (the loaders name what is wrong inside it)."""
    if not path.exists():
        raise ArgusInputError(f"{path}: no such file or folder")
    return path


def read_corpus(path: Path) -> list[Document]:
    """A corpus file, or a BEIR dataset folder's ``corpus.jsonl``."""
    from argus_ir.runners.stream import iter_corpus

    return list(iter_corpus(corpus_arg(path)))


# -- BEIR evaluations --------------------------------------------------------------------------


def beir_datasets(args: argparse.Namespace) -> Iterator[Any]:
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


def write_evaluation(results: list[Any], out: Path, *, written: bool = False) -> int:
    """Print the results table and where it is; write it first unless ``written``."""
    from argus_ir.eval import results_markdown, write_results

    folder = out if written else write_results(results, out)
    print(results_markdown(results), end="")
    print(f"-> {folder}/results.md, results.json, per_query.jsonl")
    return 0
