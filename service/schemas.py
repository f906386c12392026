"""Request and response bodies (pydantic).  Static bounds live here; limits that come from the
settings (items per request, characters per text, beam size, max_length) are checked in the
routes against the injected ``Settings``, so they can be configured per deployment."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# -- /v1/translate -------------------------------------------------------------------------------


PAIRS_NOTE = (
    "the pairs served are those of the loaded translators (GET /languages), and a pair two of them bridge "
    "through English (source -> en -> target)"
)


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | list[str] = Field(description="one text or a list of texts")
    source: str = Field(
        min_length=1, max_length=16,
        description=f'source language code, e.g. en, or "auto" (detected per text among the loaded languages); {PAIRS_NOTE}',
    )  # fmt: skip
    target: str = Field(min_length=1, max_length=16, description="target language code, e.g. fr")
    beam_size: int | None = Field(None, ge=1, description="beam width (default RENDITION_DEFAULT_BEAM_SIZE)")
    num_hypotheses: int = Field(1, ge=1, description="n-best hypotheses per text (<= beam_size)")
    length_penalty: float = Field(1.0, ge=0.0, le=10.0, description="GNMT length-penalty alpha")
    max_length: int | None = Field(
        None, ge=1, description="cap on generated tokens (default RENDITION_DEFAULT_MAX_LENGTH)"
    )
    return_scores: bool = Field(False, description="add the score (and n-best hypotheses) to every result")
    min_length: int = Field(0, ge=0, description="</s> is not allowed before this many tokens (per sentence)")
    repetition_penalty: float = Field(
        1.0, gt=0, le=10, description="CTranslate2's: > 1 divides the logit of every token already generated"
    )
    no_repeat_ngram_size: int = Field(0, ge=0, le=64, description="> 0: no n-gram of this size twice in a sentence")
    target_prefix: str | None = Field(
        None, min_length=1, max_length=1000, description="forced start of the translation (a one-sentence text)"
    )
    sampling_topk: int = Field(1, ge=0, description="1: search; k > 1: sample among the k most likely; 0: among all")
    sampling_temperature: float = Field(1.0, gt=0, le=100, description="sampling: logits / temperature")
    truncate: bool | None = Field(
        None,
        description="a sentence whose translation reaches max_length without ending: false -> 422, "
        "true -> returned cut with truncated: true (default RENDITION_TRUNCATE_TRANSLATIONS)",
    )
    glossary: dict[str, str] | None = Field(
        None, description="source term -> target term: each source term found (ignoring case, whole words) is "
        "translated as its target term",
    )  # fmt: skip
    glossary_name: str | None = Field(
        None, description="a server glossary (RENDITION_GLOSSARY_DIR/<source>-<target>/<name>.tsv); with glossary, "
        "the request's terms win",
    )  # fmt: skip


class Hypothesis(BaseModel):
    text: str
    score: float


class DetectedLanguage(BaseModel):
    confidence: float = Field(description="percent, 0-100")
    language: str


class TranslationResult(BaseModel):
    text: str
    score: float | None = None
    hypotheses: list[Hypothesis] | None = None
    truncated: bool | None = Field(None, description="true when a sentence was cut at its length limit (truncate)")
    detected_language: DetectedLanguage | None = Field(None, description='the text\'s language, with source "auto"')


class TranslateUsage(BaseModel):
    source_tokens: int
    target_tokens: int


class TranslateResponse(BaseModel):
    results: list[TranslationResult]
    model: str = Field(
        description="the translator that answered; through English, both joined by '+'; with source \"auto\", "
        "those of every detected language, joined by ', ', or \"none\" when every text was already in the target language"
    )
    usage: TranslateUsage


# -- LibreTranslate ------------------------------------------------------------------------------


class LibreTranslateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    q: str | list[str]
    source: str = Field(
        min_length=1, max_length=16,
        description=f'a language code, or "auto" (detected per text among the loaded languages); {PAIRS_NOTE}',
    )  # fmt: skip
    target: str = Field(min_length=1, max_length=16, description="a language code")
    format: Literal["text", "html"] = "text"
    alternatives: int = Field(0, ge=0)
    api_key: str | None = None
    glossary: dict[str, str] | str | None = Field(
        None, description="source term -> target term (an object, or a form field holding one as JSON)"
    )
    glossary_name: str | None = Field(None, description="a server glossary (RENDITION_GLOSSARY_DIR)")


class DetectRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    q: str | list[str]
    api_key: str | None = None


class Language(BaseModel):
    code: str
    name: str
    targets: list[str] = Field(description="the languages it translates into: directly, or through English")


# -- OpenAI embeddings ---------------------------------------------------------------------------


class EmbeddingsRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input: str | list[str] | list[int] | list[list[int]] = Field(
        description="text(s); token arrays (what tiktoken-based clients send) are refused with a 400"
    )
    model: str | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)
    user: str | None = None
    truncate: bool = Field(False, description="cut inputs over the encoder's max_length (listed in X-Rendition-Truncated) instead of 413")


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    embedding: list[float] | str
    index: int


class EmbeddingsUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingsUsage


# -- similarity ----------------------------------------------------------------------------------


class SimilarityRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_sentence: str
    sentences: list[str]


class SimilarityResponse(BaseModel):
    similarities: list[float]
    model: str
    usage: EmbeddingsUsage
