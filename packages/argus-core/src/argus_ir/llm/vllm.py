"""vLLM's offline engine (``pip install 'argus-ir[vllm]'``): batched generation on a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_ir._optional import require
from argus_ir.llm.base import LLM, Generation, LLMSettings

__all__ = ["VLLMEngine"]


class VLLMEngine(LLM):
    """A ``vllm.LLM`` engine, created on first use (so the backend pickles before that).

    Args:
        model: A model id or local folder vLLM can load.
        temperature, seed, max_tokens: Decoding settings (:class:`LLMSettings`).
        **engine_kwargs: Passed to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 1024,
        **engine_kwargs: Any,
    ) -> None:
        self.model = model
        self.settings = LLMSettings(temperature, seed, max_tokens)
        self.engine_kwargs = engine_kwargs
        self._engine: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}

    def _load(self) -> Any:
        if self._engine is None:
            vllm = require("vllm", "vllm")
            self._engine = vllm.LLM(model=self.model, seed=self.settings.seed, **self.engine_kwargs)
        return self._engine

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        show_progress: bool = False,
    ) -> list[Generation]:
        vllm = require("vllm", "vllm")
        engine = self._load()
        params = vllm.SamplingParams(
            temperature=self.settings.temperature,
            seed=self.settings.seed,
            max_tokens=self._max_tokens(max_tokens),
        )
        conversations = [[{"role": "user", "content": p}] for p in prompts]
        try:
            outputs = engine.chat(conversations, params, use_tqdm=show_progress)
        except Exception as exc:  # one engine failure fails the whole batch: report it per prompt
            return [Generation(None, f"vLLM: {type(exc).__name__}: {exc}") for _ in prompts]
        return [Generation(out.outputs[0].text if out.outputs else "") for out in outputs]
