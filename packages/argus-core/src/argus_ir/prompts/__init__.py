"""The versioned prompt templates argus sends to LLMs, and the function that loads them.

Each prompt is a ``{version}.txt`` file beside this module (the README lists them and who uses
them); a released file never changes, so a new wording gets a new version. :func:`load_prompt`
reads one as a :class:`string.Template` through :mod:`importlib.resources`, so it works from an
installed wheel as well as from a source checkout.
"""

from __future__ import annotations

from importlib import resources
from string import Template

from argus_ir.errors import ArgusInputError

__all__ = ["load_prompt"]


def load_prompt(version: str) -> Template:
    """The prompt template of ``version`` (the file ``argus_ir/prompts/{version}.txt``).

    Raises:
        ArgusInputError: No prompt file of that version.
    """
    try:
        text = resources.files("argus_ir").joinpath(f"prompts/{version}.txt").read_text("utf-8")
    except FileNotFoundError:
        raise ArgusInputError(f"unknown prompt version {version!r}") from None
    return Template(text)
