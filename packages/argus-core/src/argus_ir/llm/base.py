"""The backend contract: prompts in, one :class:`Generation` per prompt out."""

from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from argus_ir.errors import ArgusInputError

__all__ = ["LLM", "Generation", "LLMSettings"]


@dataclass(frozen=True)
class LLMSettings:
    """Decoding settings; part of every synthesised view's fingerprint.

    Attributes:
        temperature: 0 decodes greedily (the default: same input, same output).
        seed: Sampling seed, sent to backends that take one.
        max_tokens: Most new tokens per prompt (callers may ask for fewer).
    """

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 1024

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ArgusInputError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_tokens < 1:
            raise ArgusInputError(f"max_tokens must be >= 1, got {self.max_tokens}")


@dataclass(frozen=True)
class Generation:
    """What one prompt gave: its text, or the error that stopped it.

    Attributes:
        text: The completion (``None`` when the call failed).
        error: Why it failed (``None`` on success).
        attempts: Calls made for this prompt (retries included).
        server_failed: The failure was the server's, not this prompt's: it could not be reached,
            timed out, failed every retry or refuses every call, so the next prompt would most
            likely fail too (what a give-up counts). ``False`` on success and when the server
            answered but refused this prompt or sent a malformed reply.
    """

    text: str | None
    error: str | None = None
    attempts: int = 1
    server_failed: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


class LLM(abc.ABC):
    """A chat model that turns user prompts into completions.

    Subclasses keep only plain configuration in their attributes (and load engines lazily) so a
    backend pickles to worker processes.
    """

    model: str
    settings: LLMSettings

    @property
    def fingerprint(self) -> str:
        """Identifies what this backend would write: backend, model and decoding settings."""
        return json.dumps(
            {"backend": type(self).__name__, "model": self.model, **asdict(self.settings)},
            sort_keys=True,
        )

    @abc.abstractmethod
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        show_progress: bool = False,
    ) -> list[Generation]:
        """Complete each prompt (sent as one user message).

        Args:
            prompts: The prompts.
            max_tokens: Cap on new tokens for this call (default: ``settings.max_tokens``).
            show_progress: A progress bar over prompts.

        Returns:
            One :class:`Generation` per prompt, in order; failures are reported in it, not raised.
        """

    def _max_tokens(self, max_tokens: int | None) -> int:
        return (
            self.settings.max_tokens
            if max_tokens is None
            else min(max_tokens, self.settings.max_tokens)
        )
