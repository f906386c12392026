"""The inference facade: the one place routes hand work to the models.

``translate`` / ``embed`` take a job (``service.engines.TranslationJob`` / ``EmbeddingJob``) and
return its typed result; in between: the engine (404 when disabled, 503 while loading), its
``pre``, the batch key and costs, the model's batcher (with the request's timeout and
client-disconnect handling of ``service.deps.run_batched``), and ``post``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from fastapi import Request

from service.deps import AppState, engine_or_503, run_batched
from service.engines import (
    EmbeddingJob,
    EmbeddingOutput,
    Engine,
    TranslationJob,
    TranslationOutput,
    UnsupportedLanguagePair,
)
from service.errors import APIError
from service.settings import Settings

Admit = Callable[[Any, list[list[int]]], AbstractContextManager]


async def run(
    request: Request, state: AppState, settings: Settings, model: str, job: Any, admit: Admit | None = None
) -> Any:
    """One job through the engine and batcher of ``model`` ("translator" / "encoder").

    ``admit(engine, ids)``, when given, runs after ``pre`` and before the batcher: it may refuse
    the job (raise) and returns a context held while the job runs (the admission ledger)."""
    engine: Engine
    engine, batcher = engine_or_503(state, model)
    ids = engine.pre(job)
    key = engine.key(job)
    costs = [engine.cost(x, key) for x in ids]
    with admit(engine, ids) if admit is not None else contextlib.nullcontext():
        raw = await run_batched(request, settings, batcher, ids, costs, key=key, tokens=[len(x) for x in ids])
    return engine.post(job, ids, raw)


def _pair_error(e: UnsupportedLanguagePair) -> APIError:
    return APIError(400, str(e), kind="unsupported_language_pair", param="target")


def check_pair(state: AppState, source: str, target: str) -> None:
    """400 unless the translator translates ``source`` -> ``target`` (503 while it loads)."""
    engine, _ = engine_or_503(state, "translator")
    try:
        engine.check_pair(source, target)
    except UnsupportedLanguagePair as e:
        raise _pair_error(e) from None


async def translate(
    request: Request, state: AppState, settings: Settings, job: TranslationJob, admit: Admit | None = None
) -> TranslationOutput:
    """``InputTooLong`` (a sentence over the input limit) and ``TranslationTooLong`` pass through:
    the route maps them to its own field and sentence.  ``admit``: see ``run``."""
    try:
        return await run(request, state, settings, "translator", job, admit)
    except UnsupportedLanguagePair as e:
        raise _pair_error(e) from None


async def embed(request: Request, state: AppState, settings: Settings, job: EmbeddingJob) -> EmbeddingOutput:
    return await run(request, state, settings, "encoder", job)
