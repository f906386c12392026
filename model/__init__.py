"""Rendition models: relative-position Transformer translator and DiSAN sentence encoder.

PyTorch models (``translation/``, ``embedding/``) with native CPU kernels for inference
(``kernels/``, built at install time; torch paths where they are missing), their training
code (``training/``), and what is built from a trained translator (``export/``); serving imports
neither of the last two."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Translator", "SentenceEncoder", "__version__"]


def __getattr__(name: str):  # lazy: importing `model` stays cheap
    if name == "Translator":
        from rendition.model.translation.translator import Translator

        return Translator
    if name == "SentenceEncoder":
        from rendition.model.embedding.encoder import SentenceEncoder

        return SentenceEncoder
    raise AttributeError(name)
