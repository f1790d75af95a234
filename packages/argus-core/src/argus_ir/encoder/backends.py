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
        path = resolve_model(model)
        self.device = pick_device(device)
        self._path = path
        self._st_model: Any = None
        layout = _plain_layout(path)
        if layout is not None:  # read directly: importing sentence-transformers costs seconds
            tr = require("transformers", "st")
            self.tokenizer = tr.AutoTokenizer.from_pretrained(str(path))
            self.model = tr.AutoModel.from_pretrained(str(path)).to(self.device).eval()
            pooling_mode, normalize, max_length = layout
            max_length = max_length or int(self.tokenizer.model_max_length)
        else:
            st_model = self.sentence_transformer
            first = st_model[0]
            self.model = getattr(first, "auto_model", None) or first.model
            self.tokenizer = first.tokenizer
            pooling_mode = "mean"
            normalize = False
            for module in st_model:
                name = type(module).__name__
                if name == "Pooling":
                    pooling_mode = _pooling_mode(module.get_config_dict())
                elif name == "Normalize":
                    normalize = True
            max_length = int(first.max_seq_length or self.tokenizer.model_max_length)
        if pooling_mode not in ("mean", "cls"):
            raise ArgusInputError(
                f"{model!r} pools documents by {pooling_mode!r}; argus supports 'mean' and 'cls'"
            )
        self.info = EncoderInfo(
            retriever_id=retriever_id or canonical_id(model),
            dim=int(self.model.config.hidden_size),
            max_length=max_length,
            doc_pooling=pooling_mode,
            normalize=normalize,
        )

    @property
    def sentence_transformer(self) -> Any:
        """The model as a ``SentenceTransformer`` (for baselines and indexing), loaded on first
        use where the encoder read the folder itself."""
        if self._st_model is None:
            st = require("sentence_transformers", "st")
            self._st_model = st.SentenceTransformer(str(self._path), device=self.device)
            self._st_model.eval()
        return self._st_model


_PLAIN_MODULES = (
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
)


def _plain_layout(path: Any) -> tuple[str, bool, int | None] | None:
    """``(pooling, normalize, max_seq_length)`` of a local sentence-transformers folder made of a
    transformer at its root, a pooling and optionally a normalisation, read from its JSON files,
    or ``None`` for any other folder (a dense layer, a lower-casing or prompted model, model or
    tokenizer arguments, a hub id): those load through sentence-transformers itself."""
    import json
    from pathlib import Path

    root = Path(str(path))
    try:
        modules = json.loads((root / "modules.json").read_text("utf-8"))
        config = json.loads((root / "sentence_bert_config.json").read_text("utf-8"))
        extra = root / "config_sentence_transformers.json"
        st_config = json.loads(extra.read_text("utf-8")) if extra.is_file() else {}
    except (OSError, ValueError):
        return None
    types = [m.get("type") for m in modules]
    if (
        types[:2] != list(_PLAIN_MODULES[:2])
        or types[2:] not in ([], [_PLAIN_MODULES[2]])
        or modules[0].get("path")
        or config.get("do_lower_case")
        or any(config.get(k) for k in ("model_args", "tokenizer_args", "config_args"))
        or st_config.get("prompts")
        or st_config.get("default_prompt_name")
    ):
        return None
    try:
        pooling = json.loads((root / modules[1]["path"] / "config.json").read_text("utf-8"))
    except (OSError, ValueError, KeyError):
        return None
    length = config.get("max_seq_length")
    return _pooling_mode(pooling), len(types) == 3, int(length) if length else None


def _pooling_mode(config: dict) -> str:
    """The pooling mode of a sentence-transformers Pooling module's config (v3 to v6)."""
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
