"""Exceptions raised by argus.

Every error that comes from bad user input is an :class:`ArgusInputError` whose message names what was
wrong and where (file and line, entity id or document id), so a user can fix the input without reading
a traceback.
"""

from __future__ import annotations

__all__ = [
    "ArgusError",
    "ArgusInputError",
    "MissingExtraError",
    "ProbeMismatchError",
    "StoreReadError",
]


class ArgusError(Exception):
    """Base class for argus errors."""


class ArgusInputError(ArgusError, ValueError):
    """Input data is malformed or inconsistent (message names the file/line/id)."""


class ProbeMismatchError(ArgusError):
    """A probe artifact was trained for a different encoder than the one in use."""


class MissingExtraError(ArgusError, ImportError):
    """An optional backend is not installed; the message names the extra to install."""


class StoreReadError(ArgusError, RuntimeError):
    """A store failed to return the originals a query needs (an outage, a store error): the
    query fails rather than answer without those sources, as a read that failed says nothing
    about whether they exist. The message names the store; the store's error is the cause."""
