"""Service configuration from ``RENDITION_*`` environment variables (pydantic-settings).

Every field below is ``RENDITION_<FIELD>`` in upper case, e.g. ``RENDITION_MAX_BATCH_TOKENS=4096``.
The app receives one ``Settings`` object and hands it to routes through the ``get_settings``
dependency (``rendition.service.deps``), so tests can build or override it freely.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from rendition.model.translation.pairs import split_paths

ModelName = Literal["translator", "encoder"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RENDITION_", extra="ignore")

    # -- server ---------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    drain_seconds: float = Field(0.0, ge=0, description="after SIGTERM, stay up (ready=503) this long before closing")
    # after SIGTERM, work still running this long is cancelled and answered 503 + Retry-After (must be
    # shorter than the orchestrator's grace period: compose stop_grace_period, k8s terminationGracePeriodSeconds;
    # longer than drain_seconds, or the deadline ends the drain early)
    drain_deadline_s: float = Field(20.0, gt=0)

    # -- connections (rendition.service.connections) ---------------------------------------------------------
    max_header_bytes: int = Field(16_384, ge=1024)  # request line + headers; beyond it the connection gets 431
    max_headers: int = Field(100, ge=1)  # header fields per request; beyond it 431
    header_timeout_s: float = Field(10.0, gt=0)  # a request's line and headers must arrive within this (else 408)
    body_timeout_s: float = Field(30.0, gt=0)  # a request's body must arrive within this of its headers (else 408)
    keep_alive_s: float = Field(5.0, gt=0)  # an idle keep-alive connection is closed after this
    max_connections: int = Field(1000, ge=1)  # open connections; beyond it new requests get 503

    # -- models ---------------------------------------------------------------------------------
    models: Annotated[list[ModelName], NoDecode] = ["translator", "encoder"]  # which models to load
    # translator directories, os.pathsep- or comma-separated; each is a pair package whose config.json names its
    # languages (rendition.model.translation.pairs); with models_dir: every subdirectory holding a translator
    # config.json too; neither: the shipped model (model/pretrained/translator)
    translator_path: Annotated[list[Path], NoDecode] = []
    models_dir: Path | None = None
    encoder_path: Path | None = None  # None: the shipped model (model/pretrained/encoder)
    translator_name: str = "rendition-translator"
    encoder_name: str = "rendition-disan"
    # other names /v1/embeddings answers to, for OpenAI clients that keep their default model name:
    # "text-embedding-3-small=rendition-disan,..." (each maps to encoder_name); empty: any other name is a 404
    embedding_model_aliases: Annotated[dict[str, str], NoDecode] = {}
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"  # auto: float16 on CUDA, float32 on CPU
    kv_cache_dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"  # translator's K/V cache; auto: = dtype
    encoder_dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"  # the encoder's weights; auto: = dtype
    # the translator's compute type (rendition.model.kernels.compute_type): auto = int8 on a CPU with VNNI or AVX2, else dtype
    compute_type: Literal["auto", "int8", "float32", "float16", "bfloat16"] = "auto"
    # the encoder's (resolve_encoder_compute_type): auto = its linear maps in int8 or bfloat16 where the CPU runs it
    encoder_compute_type: Literal["auto", "int8", "bfloat16", "float32", "float16"] = "auto"
    # the translator's vocabulary shortlist (rendition.model.translation.shortlist): each step computes the logits
    # of the sentence's candidate tokens only; needs shortlist.safetensors in the model directory (rendition build-shortlist)
    shortlist: bool = False
    torch_threads: int = Field(0, ge=0)  # 0: leave PyTorch's default
    warmup: bool = True

    # -- the translator's engine: the step-level scheduler (rendition.service.translation_engine) -----------------------
    # sentences join running beam searches between decoding steps (rendition.model.translation.scheduler)
    translation_workers: int = Field(0, ge=0)  # workers, each its own searches (CTranslate2's inter_threads); 0: auto
    worker_threads: int = Field(0, ge=0)  # torch/kernel threads per worker (intra_threads); 0: cores / workers
    worker_nice: int = Field(0, ge=0, le=19)  # the workers' threads run this much nicer (Linux): requests and embeddings first, at a cost in throughput

    # -- queues (per model: the translator's scheduler, the encoder's batcher) ----------------------
    max_batch_tokens: int = Field(16384, ge=1)  # translator: source tokens x beam per worker; encoder: padded tokens per batch
    max_batch_size: int = Field(128, ge=1)  # translator: sentences running per worker; encoder: sentences per batch
    max_wait_ms: float = Field(0.0, ge=0)  # encoder: how long a batch waits for more work once the thread is free
    max_queue: int = Field(1024, ge=1)  # queued sentences per model; beyond it requests get 429
    request_timeout_s: float = Field(60.0, gt=0)  # end-to-end wait for a result; beyond it 504
    # admission (rendition.service.admission): seconds of model time per unit of source tokens x beam x max output
    # tokens (measured with the shipped translator on 2 CPU cores, docs/reliability.md); a request whose
    # estimate alone exceeds request_timeout_s is refused at once (422), and new work is refused (429)
    # while the estimates of the work admitted and not finished exceed it
    decode_unit_s: float = Field(4.0e-5, gt=0)
    # the ledger of admitted work (429 while it fills request_timeout_s) counts what work really costs:
    # wall seconds per unit with the translator busy, measured on the decoding steps (this is the value
    # until the first busy steps; docs/reliability.md), and each sentence's expected output, 1.1 x the
    # output/source token ratio measured per language pair (this is the value until sentences finish)
    service_unit_s: float = Field(1.0e-5, gt=0)
    output_ratio: float = Field(1.3, gt=0)
    min_max_length: int = Field(4, ge=1)  # a request's max_length below this is a 422 (no room for an answer)
    batch_delay_ms: float = Field(0.0, ge=0)  # testing aid (a slow model): a pause before every encoder batch and whenever sentences join a translation worker

    # -- request limits ---------------------------------------------------------------------------
    max_body_bytes: int = Field(1_000_000, ge=1)  # 413 beyond
    max_items: int = Field(64, ge=1)  # texts per request
    max_embedding_items: int = Field(2048, ge=1)  # inputs per embedding request (OpenAI's limit; run in chunks)
    max_text_chars: int = Field(4000, ge=1)  # characters per text
    max_beam_size: int = Field(8, ge=1)
    max_length_limit: int = Field(512, ge=1)  # upper bound for a request's max_length
    default_beam_size: int = Field(4, ge=1)
    default_max_length: int = Field(256, ge=1)
    # a translation that reaches its length limit without ending: False -> 422 naming the limit;
    # True -> returned cut, marked "truncated" (a request's own "truncate" overrides this)
    truncate_translations: bool = False
    # a translation that reaches its length limit without ending (a repetition loop) is decoded once
    # more with no n-gram of this size repeated; its result is kept when it ends (0: no second try)
    length_fallback_no_repeat_ngram: int = Field(4, ge=0, le=64)
    # URLs, e-mail addresses, paths, code and version numbers kept as they are (rendition.model.text.spans)
    protect_spans: bool = True

    # -- glossaries (rendition.service.glossaries) -------------------------------------------------------------
    glossary_dir: Path | None = None  # <dir>/<source>-<target>/<name>.tsv, chosen by a request's glossary_name
    glossary_max_terms: int = Field(1000, ge=1)  # terms per glossary (a request's own, or a file)
    glossary_max_term_chars: int = Field(200, ge=1)  # characters per source or target term
    glossary_max_file_bytes: int = Field(1_000_000, ge=1)  # a glossary file (or a form field's JSON)

    # -- document translation (POST /translate_file, rendition.service.routers.files) -------------------------
    max_file_bytes: int = Field(10_000_000, ge=1)  # an uploaded file; 413 beyond (its request body may be 64 KiB more)
    max_file_unpacked_bytes: int = Field(50_000_000, ge=1)  # .docx/.pptx/.odt/.odp/.epub: total size of the zip's members, unpacked
    max_file_members: int = Field(2000, ge=1)  # .docx/.pptx/.odt/.odp/.epub: members of the zip
    max_file_segments: int = Field(5000, ge=1)  # texts to translate (paragraphs, entries, subtitles) per file
    max_file_chars: int = Field(200_000, ge=1)  # characters to translate per file
    file_keep_s: float = Field(1800.0, gt=0)  # a translated file can be downloaded for this long ...
    file_keep_max: int = Field(100, ge=1)  # ... and only the newest this many are kept
    file_dir: Path | None = None  # where translated files wait for download; None: a temporary directory

    # -- auth and exposure ------------------------------------------------------------------------
    api_keys: Annotated[list[str], NoDecode] = []  # comma separated; empty: no auth
    metrics_port: int | None = Field(None, ge=1, le=65535)  # set: /metrics only on this port (same host), not the API's
    metrics_token: SecretStr | None = None  # set: /metrics requires "Authorization: Bearer <token>" (either port)
    cors_origins: Annotated[list[str], NoDecode] = []  # comma separated origins ("*" for any); empty: no CORS

    @field_validator("api_keys", "models", "cors_origins", mode="before")
    @classmethod
    def _split_commas(cls, v: object) -> object:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return v

    @field_validator("translator_path", mode="before")
    @classmethod
    def _split_paths(cls, v: object) -> object:
        if v is None:
            return []
        if isinstance(v, str):
            return split_paths(v)
        return [v] if isinstance(v, Path) else v

    @field_validator("models_dir", mode="before")
    @classmethod
    def _empty_dir_is_unset(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("embedding_model_aliases", mode="before")
    @classmethod
    def _split_pairs(cls, v: object) -> object:
        if not isinstance(v, str):
            return v
        pairs = {}
        for item in (x.strip() for x in v.split(",")):
            if not item:
                continue
            alias, eq, name = (p.strip() for p in item.partition("="))
            if not eq or not alias or not name:
                raise ValueError(f"{item!r} is not alias=model (e.g. text-embedding-3-small=rendition-disan)")
            pairs[alias] = name
        return pairs

    @field_validator("metrics_port", "metrics_token", mode="before")
    @classmethod
    def _empty_is_unset(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v  # e.g. RENDITION_METRICS_TOKEN= from compose

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.max_items > self.max_queue:
            raise ValueError(f"max_items ({self.max_items}) must not exceed max_queue ({self.max_queue})")
        if self.default_beam_size > self.max_beam_size:
            raise ValueError("default_beam_size must not exceed max_beam_size")
        if self.default_max_length > self.max_length_limit:
            raise ValueError("default_max_length must not exceed max_length_limit")
        if self.min_max_length > self.default_max_length:
            raise ValueError("min_max_length must not exceed default_max_length")
        for alias, name in self.embedding_model_aliases.items():
            if name != self.encoder_name:
                raise ValueError(
                    f"embedding_model_aliases maps {alias!r} to {name!r}, which is not the encoder ({self.encoder_name!r}, "
                    "RENDITION_ENCODER_NAME)"
                )
            if alias == self.translator_name:
                raise ValueError(f"embedding_model_aliases: {alias!r} is the translator's name (RENDITION_TRANSLATOR_NAME)")
        if self.metrics_port is not None and self.metrics_port == self.port:
            raise ValueError(f"metrics_port ({self.metrics_port}) must differ from port")
        return self
