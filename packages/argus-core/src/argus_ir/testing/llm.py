"""A scripted LLM for plumbing tests (the real backends have their own tests)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from argus_ir.llm.base import LLM, Generation, LLMSettings

__all__ = ["ScriptedLLM"]


class ScriptedLLM(LLM):
    """Replies from a script, one per prompt, in order across calls.

    Items are reply texts or :class:`~argus_ir.llm.Generation` objects (to script a failure).
    Every prompt it was sent is kept in :attr:`prompts`; running out of script is an error.
    """

    def __init__(self, replies: Iterable[str | Generation], model: str = "scripted") -> None:
        self.model = model
        self.settings = LLMSettings()
        self.replies = list(replies)
        self.prompts: list[str] = []

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        show_progress: bool = False,
    ) -> list[Generation]:
        if len(prompts) > len(self.replies):
            raise AssertionError(f"{len(prompts)} prompts, {len(self.replies)} scripted replies")
        self.prompts.extend(prompts)
        out = [
            r if isinstance(r, Generation) else Generation(r) for r in self.replies[: len(prompts)]
        ]
        del self.replies[: len(prompts)]
        return out
