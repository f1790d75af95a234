"""The ``argus`` command's top-level parser and entry point: it puts every command module's
``add_parser`` under one parser, in the order ``argus --help`` lists them, dispatches to the
module's ``run``, sets up logging, and turns an error into one line on stderr and exit status 1
(``--debug`` shows the traceback instead)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from types import ModuleType
from typing import Any

from argus_ir.cli import (
    audit,
    augment,
    bias,
    coverage,
    demo,
    diagnose,
    evaluate,
    kb,
    report,
    sira,
    train,
)
from argus_ir.cli.options import global_options
from argus_ir.errors import ArgusError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, ModuleType] = {
    "demo": demo,
    "audit": audit,
    "train-probe": train,
    "diagnose": diagnose,
    "augment": augment,
    "evaluate": evaluate,
    "sira": sira,
    "kb": kb,
    "coverage": coverage,
    "bias": bias,
    "report": report,
}
"""Each command's name and its module, in the order of ``argus --help``."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``argus`` command."""
    parser = argparse.ArgumentParser(
        prog="argus",
        description="Find retrieval blind spots: audit entity retrievability (RPS) under a dense "
        "retriever, train probes that predict it from embeddings, and report.",
        epilog="Start with `argus demo`. Each command has its own --help.",
    )
    global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(sub)
    for command in sub.choices.values():  # `argus augment ... --quiet` as well
        _global_options_everywhere(command)
    return parser


def _global_options_everywhere(parser: argparse.ArgumentParser) -> None:
    """The global options on a command and on each of its steps (``argus kb build -q``)."""
    global_options(parser, command=True)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for step in action.choices.values():
                _global_options_everywhere(step)


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
    if args.quiet:  # also the model-loading bars of transformers / the hub
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        with _claimed_out_folder(args):
            code: int = COMMANDS[args.command].run(args)
        return code
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"argus {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ArgusError, ValueError, OSError) as exc:
        if args.debug:
            raise
        print(f"argus {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 1


def _claimed_out_folder(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """The ``--out`` folder of a command that writes into one (``out_folder_option``), checked
    by the rule of :mod:`argus_ir.outputs` and locked for the run; nothing for other commands."""
    if not hasattr(args, "out_folder"):
        return contextlib.nullcontext()
    from argus_ir.outputs import check_output, claim_output

    inputs, resumes = args.out_folder
    rule: dict[str, Any] = {
        "flag": "--out",
        "inputs": [path for path in inputs(args) if path is not None],
        "overwrite": args.overwrite or bool(resumes and getattr(args, resumes)),
        "folder": True,
        "is_kind": lambda folder: True,  # these commands write their files into it, delete none
    }
    check_output(args.out, **rule)
    return claim_output(args.out, **rule)


def one_line(exc: BaseException) -> str:
    """An error as one line: an OS error by its reason and the file it concerns."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where else exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__
