"""Health (liveness, readiness), Prometheus metrics and ``GET /v1/models``."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rendition.model.translation.pairs import directions
from rendition.service.deps import AppState, get_state, require_api_key
from rendition.service.errors import APIError
from rendition.service.exposition import UNAUTHORIZED, metrics_token_ok
from rendition.service.routing import LeanRoute

router = APIRouter(route_class=LeanRoute)


@router.get("/health/live", tags=["health"], summary="The process is up (503 if model loading failed)")
async def live(state: AppState = Depends(get_state)) -> JSONResponse:
    if state.load_error:
        return JSONResponse({"status": "failed", "error": state.load_error}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/health/ready", tags=["health"], summary="Models loaded and warm, not draining (else 503)")
async def ready(state: AppState = Depends(get_state)) -> JSONResponse:
    if state.load_error:
        return JSONResponse({"status": "failed", "error": state.load_error}, status_code=503)
    if state.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    if not state.ready:
        return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "1"})
    queued = {name: q.queued for name, q in state.queues.items()}
    return JSONResponse({"status": "ready", "models": sorted(state.queues), "queued": queued})


@router.get(
    "/metrics",
    tags=["health"],
    summary="Prometheus metrics (401 without RENDITION_METRICS_TOKEN when set; 404 when on RENDITION_METRICS_PORT)",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request, state: AppState = Depends(get_state)) -> Response:
    s = state.settings
    if s.metrics_port is not None:
        raise APIError(404, f"metrics are served on port {s.metrics_port} (RENDITION_METRICS_PORT)", kind="not_found")
    if not metrics_token_ok(s, request.headers.get("authorization")):
        raise APIError(401, UNAUTHORIZED, kind="auth", headers={"WWW-Authenticate": "Bearer"})
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def _translator_infos(state: AppState) -> list[dict]:
    """Each translator's details with the directions it serves alone (``directions``) and those it
    serves as one leg of two through English (``through_english``)."""
    out = []
    for name, engine in state.translators.items():
        legs = {d: [leg.translator for leg in state.pairs.route(*d)] for d in state.pairs.pivots()}
        out.append({
            **engine.info(),
            "directions": [f"{a}-{b}" for a, b in directions(engine.languages)],
            "through_english": [f"{a}-{b}" for (a, b), via in legs.items() if name in via],
        })  # fmt: skip
    return out


def _model_objects(state: AppState) -> list[dict]:
    """The loaded models, then the encoder's aliases (RENDITION_EMBEDDING_MODEL_ALIASES), each with
    the encoder's details and ``root``: the model it names (as vLLM lists its served names)."""
    models = [{"object": "model", "owned_by": "rendition", "created": 0, **info} for info in _translator_infos(state)]
    if state.encoder is not None:
        models.append({"object": "model", "owned_by": "rendition", "created": 0, **state.encoder.info()})
    if state.encoder is not None:
        encoder = models[-1]
        models += [
            {**encoder, "id": alias, "root": encoder["id"]}
            for alias, name in state.settings.embedding_model_aliases.items()
            if name == encoder["id"] and alias != encoder["id"]
        ]
    return models


@router.get("/v1/models", tags=["models"], dependencies=[Depends(require_api_key)], summary="What is loaded")
async def models(state: AppState = Depends(get_state)) -> dict:
    return {"object": "list", "data": _model_objects(state)}


@router.get("/v1/models/{model_id}", tags=["models"], dependencies=[Depends(require_api_key)], summary="One model")
async def model(model_id: str, state: AppState = Depends(get_state)) -> dict:
    for m in _model_objects(state):
        if m["id"] == model_id:
            return m
    raise APIError(
        404, f"The model '{model_id}' does not exist", kind="model_not_found", param="model", code="model_not_found"
    )
