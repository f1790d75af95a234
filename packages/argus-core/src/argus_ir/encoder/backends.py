"""Encoder backends: sentence-transformers models and plain transformers models."""

from __future__ import annotations

import logging
from typing import Any

from argus_ir._optional import require
from argus_ir.encoder.base import EncoderInfo, TokenEncoder
from argus_ir.encoder.models import canonical_id, resolve_model
from argus_ir.errors import ArgusInputError

__all__ = ["SentenceTransformerEncoder", "TransformersEncoder", "load_encoder", "pick_device"]

logger = logging.getLogger(__name__)


def pick_device(device: str | None = None) -> str:
    """Return ``device`` or, for ``None``/``"auto"``, CUDA when available else CPU."""
    if device not in (None, "auto"):
        return str(device)
    torch = require("torch", "st")
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class SentenceTransformerEncoder(TokenEncoder):
    """Encoder over a sentence-transformers model (any model id or local folder).

    The token states come from the model's transformer module; the document vector follows the
    model's own pooling and normalisation, so it equals ``SentenceTransformer.encode`` on texts
    within the model's length limit.

    Args:
        model: Model id, alias (``"minilm"``, ``"mpnet"``) or local path.
        device: ``"cpu"``, ``"cuda"``, ... or ``None`` for automatic choice.
        batch_size: Windows per forward pass.
        stride: Window step for long texts.
        retriever_id: Id recorded in probe cards; defaults to the canonical id of ``model``.
        precision: ``"fp32"``, ``"bf16"`` or ``"auto"`` (see
            :class:`~argus_ir.encoder.base.TokenEncoder`).

    Example:
        >>> enc = SentenceTransformerEncoder("minilm")  # doctest: +SKIP
        >>> doc = next(enc.encode(["Paris is the capital of France."]))  # doctest: +SKIP
        >>> doc.pool_span(0, 5).shape  # doctest: +SKIP
        (384,)
    """

    def __init__(
        self,
        model: str = "minilm",
        *,
        device: str | None = None,
        batch_size: int = 64,
        stride: int | None = None,
        retriever_id: str | None = None,
        precision: str = "fp32",
    ) -> None:
        super().__init__(batch_size=batch_size, stride=stride, precision=precision)
        st = require("sentence_transformers", "st")
        path = resolve_model(model)
        self.device = pick_device(device)
        st_model = st.SentenceTransformer(str(path), device=self.device)
        st_model.eval()
        first = st_model[0]
        hf_model = getattr(first, "auto_model", None) or first.model
        self.model = hf_model
        self.tokenizer = first.tokenizer
        pooling_mode = "mean"
        normalize = False
        for module in st_model:
            name = type(module).__name__
            if name == "Pooling":
                pooling_mode = _pooling_mode(module)
            elif name == "Normalize":
                normalize = True
        if pooling_mode not in ("mean", "cls"):
            raise ArgusInputError(
                f"{model!r} pools documents by {pooling_mode!r}; argus supports 'mean' and 'cls'"
            )
        max_length = int(first.max_seq_length or self.tokenizer.model_max_length)
        dim = int(hf_model.config.hidden_size)
        self.info = EncoderInfo(
            retriever_id=retriever_id or canonical_id(model),
            dim=dim,
            max_length=max_length,
            doc_pooling=pooling_mode,
            normalize=normalize,
        )
        self._st_model = st_model

    @property
    def sentence_transformer(self) -> Any:
        """The underlying ``SentenceTransformer`` (for baselines and indexing)."""
        return self._st_model


def _pooling_mode(module: object) -> str:
    """Read the pooling mode from a sentence-transformers Pooling module (v3 to v6 configs)."""
    config = module.get_config_dict() if hasattr(module, "get_config_dict") else {}
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        return {"mean": "mean", "cls": "cls"}.get(mode, mode)
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    return "unknown"


class TransformersEncoder(TokenEncoder):
    """Encoder over a plain ``transformers`` model (``AutoModel`` + fast ``AutoTokenizer``).

    Args:
        model: Model id or local path.
        pooling: How the retriever pools a document: ``"mean"`` or ``"cls"``.
        normalize: L2-normalise document vectors.
        max_length: Tokens per forward pass (default: the tokenizer's limit, capped at 512).
        device: Device, or ``None`` for automatic choice.
        batch_size: Windows per forward pass.
        stride: Window step for long texts.
        retriever_id: Id recorded in probe cards.
        precision: ``"fp32"``, ``"bf16"`` or ``"auto"`` (see
            :class:`~argus_ir.encoder.base.TokenEncoder`).
    """

    def __init__(
        self,
        model: str,
        *,
        pooling: str = "mean",
        normalize: bool = True,
        max_length: int | None = None,
        device: str | None = None,
        batch_size: int = 64,
        stride: int | None = None,
        retriever_id: str | None = None,
        precision: str = "fp32",
    ) -> None:
        super().__init__(batch_size=batch_size, stride=stride, precision=precision)
        if pooling not in ("mean", "cls"):
            raise ArgusInputError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        tr = require("transformers", "transformers")
        path = resolve_model(model)
        self.device = pick_device(device)
        self.tokenizer = tr.AutoTokenizer.from_pretrained(str(path))
        if not getattr(self.tokenizer, "is_fast", False):
            raise ArgusInputError(f"{model!r} has no fast tokenizer; character offsets need one")
        self.model = tr.AutoModel.from_pretrained(str(path)).to(self.device).eval()
        limit = max_length or min(int(self.tokenizer.model_max_length), 512)
        self.info = EncoderInfo(
            retriever_id=retriever_id or canonical_id(model),
            dim=int(self.model.config.hidden_size),
            max_length=limit,
            doc_pooling=pooling,
            normalize=normalize,
        )


_CACHE: dict[tuple[str, str, str | None, int, str], TokenEncoder] = {}


def load_encoder(
    model: str = "minilm",
    *,
    backend: str = "st",
    device: str | None = None,
    batch_size: int = 64,
    precision: str = "fp32",
) -> TokenEncoder:
    """Load (and cache by settings) an encoder.

    Args:
        model: Alias (``"minilm"``, ``"mpnet"``), model id or local path.
        backend: ``"st"`` (sentence-transformers) or ``"transformers"``.
        device: Device or ``None`` for automatic choice.
        batch_size: Windows per forward pass.
        precision: ``"fp32"``, ``"bf16"`` or ``"auto"``.
    """
    key = (str(model), backend, device, batch_size, precision)
    if key not in _CACHE:
        kwargs = {"device": device, "batch_size": batch_size, "precision": precision}
        if backend == "st":
            _CACHE[key] = SentenceTransformerEncoder(model, **kwargs)  # type: ignore[arg-type]
        elif backend == "transformers":
            _CACHE[key] = TransformersEncoder(model, **kwargs)  # type: ignore[arg-type]
        else:
            raise ArgusInputError(f"backend must be 'st' or 'transformers', got {backend!r}")
    return _CACHE[key]
