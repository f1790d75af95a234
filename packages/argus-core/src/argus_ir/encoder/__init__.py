"""Encoders: token states with character offsets, span pooling and document vectors."""

from argus_ir.encoder.backends import (
    SentenceTransformerEncoder,
    TransformersEncoder,
    load_encoder,
    pick_device,
)
from argus_ir.encoder.base import SPAN_POOLING, EncodedText, EncoderInfo, TokenEncoder
from argus_ir.encoder.models import assemble_mpnet, cache_dir, canonical_id, resolve_model
from argus_ir.encoder.windows import Window, assign_tokens, plan_windows

__all__ = [
    "SPAN_POOLING",
    "EncodedText",
    "EncoderInfo",
    "SentenceTransformerEncoder",
    "TokenEncoder",
    "TransformersEncoder",
    "Window",
    "assemble_mpnet",
    "assign_tokens",
    "cache_dir",
    "canonical_id",
    "load_encoder",
    "pick_device",
    "plan_windows",
    "resolve_model",
]
