"""Write docs/cli.md, the command reference, from the ``argus`` command's own parser.

Every command and sub-step gets its ``--help`` text, verbatim, at a fixed width, so the page says
exactly what the installed command says. A test checks that the committed page is current:

    python scripts/gen_cli_docs.py            # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check    # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
WIDTH = "100"

HEADER = """# CLI reference

`argus COMMAND --help` prints the same text. This page is generated from the command's parser by
`scripts/gen_cli_docs.py`; a test keeps it current.
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its sub-commands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: list[str]) -> list[str]:
    lines = [f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`", "", "```text"]
    lines += [parser.format_help().rstrip(), "```", ""]
    for name, child in _subparsers(parser).items():
        lines += _walk(child, [*path, name])
    return lines


def render() -> str:
    """The page's text."""
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal's width
    from argus_ir.cli import build_parser

    parser = build_parser()
    parser.prog = "argus"
    return HEADER + "\n" + "\n".join(_walk(parser, ["argus"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the page is current")
    args = parser.parse_args()
    text = render()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is stale: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
