"""OpenAI embedding clients against a real server: the ``openai`` SDK and LangChain's
``OpenAIEmbeddings``, with as many inputs as OpenAI takes (2,048, run in chunks through a queue
of 256), token-array input, unknown models and ``/v1/models/{id}``.  Vectors are checked against
the same encoder called directly in this process."""

from __future__ import annotations

import numpy as np
import openai
import pytest
from langchain_openai import OpenAIEmbeddings
from openai import OpenAI

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.training.data import SPLITS_DIR, read_tsv

MODEL = "rendition-disan"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(models="encoder", max_queue=256)


@pytest.fixture(scope="module")
def encoder(model_dirs) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(model_dirs["encoder"], device="cpu")


@pytest.fixture(scope="module")
def client(server) -> OpenAI:
    return OpenAI(base_url=server.url + "/v1", api_key="unused", timeout=120, max_retries=0)


@pytest.fixture(scope="module")
def texts(encoder) -> list[str]:
    pairs = read_tsv(SPLITS_DIR / "test.en-fr.tsv")
    lines = [p.src for p in pairs] + [p.tgt for p in pairs]
    fit = [t for t, ids in zip(lines, encoder.tokenizer.encode(lines)) if len(ids) <= encoder.max_length]
    assert len(fit) > 2049  # of 3,000 (the random test encoder reads 64 tokens)
    return fit


def test_2048_inputs_in_one_request(client, encoder, texts):
    res = client.embeddings.create(input=texts[:2048], model=MODEL)
    assert [d.index for d in res.data] == list(range(2048))
    got = np.array([d.embedding for d in res.data], dtype=np.float32)
    np.testing.assert_allclose(got, encoder.encode(texts[:2048]), atol=1e-5)
    assert res.usage.prompt_tokens == res.usage.total_tokens == sum(encoder.count_tokens(texts[:2048]))
    with pytest.raises(openai.UnprocessableEntityError, match="2049 items; the limit is 2048"):
        client.embeddings.create(input=texts[:2049], model=MODEL)


def test_token_arrays_unknown_models_and_model_lookup(client):
    with pytest.raises(openai.BadRequestError, match="check_embedding_ctx_length=False") as e:
        client.embeddings.create(input=[[9906, 1917], [15339]], model=MODEL)
    assert e.value.body["param"] == "input"
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(input="Hello", model="text-embedding-3-small")
    assert e.value.code == "model_not_found" and e.value.body["type"] == "invalid_request_error"
    assert "text-embedding-3-small" in e.value.body["message"]
    model = client.models.retrieve(MODEL)
    assert model.id == MODEL and model.object == "model" and model.owned_by == "rendition"
    assert [m.id for m in client.models.list()] == [MODEL]
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-4")
    assert e.value.code == "model_not_found"


def test_langchain_openai_embeddings(server, encoder, texts):
    # LangChain sends chunks of 1,000 texts; check_embedding_ctx_length=False sends the texts themselves
    # (its default tokenizes with tiktoken and sends token ids, which this server refuses with a 400)
    lc = OpenAIEmbeddings(model=MODEL, base_url=server.url + "/v1", api_key="unused", check_embedding_ctx_length=False)
    docs = texts[:1500]
    got = np.array(lc.embed_documents(docs), dtype=np.float32)
    np.testing.assert_allclose(got, encoder.encode(docs), atol=1e-5)
    query = np.array(lc.embed_query("development files of a library"), dtype=np.float32)
    np.testing.assert_allclose(query, encoder.encode(["development files of a library"])[0], atol=1e-5)


def test_embedding_model_aliases(start_server, encoder):
    # an OpenAI client that keeps its default model name is served when the name is an alias;
    # any other name is still the 404 (strict by default, test_token_arrays_unknown_models_and_model_lookup)
    srv = start_server(models="encoder", embedding_model_aliases=f"text-embedding-3-small={MODEL}, text-embedding-ada-002={MODEL}")
    client = OpenAI(base_url=srv.url + "/v1", api_key="unused", timeout=60, max_retries=0)
    for name in ("text-embedding-3-small", "text-embedding-ada-002", MODEL):
        res = client.embeddings.create(input=["Hello world", "Bonjour"], model=name)
        np.testing.assert_allclose(np.array([d.embedding for d in res.data], dtype=np.float32),
                                   encoder.encode(["Hello world", "Bonjour"]), atol=1e-5)
        assert res.model == MODEL  # the model that answered
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(input="Hello", model="text-embedding-3-large")
    assert e.value.code == "model_not_found"
    assert "text-embedding-3-small" in e.value.body["message"] and "text-embedding-3-large" in e.value.body["message"]
    assert [m.id for m in client.models.list()] == [MODEL, "text-embedding-3-small", "text-embedding-ada-002"]
    alias = client.models.retrieve("text-embedding-3-small")
    assert alias.id == "text-embedding-3-small" and alias.root == MODEL and alias.embedding_size == encoder.dim


def test_an_alias_for_another_model_is_refused_at_start(start_server):
    srv = start_server(wait=False, models="encoder", embedding_model_aliases="text-embedding-3-small=gpt-4")
    assert srv.proc.wait(timeout=60) != 0
    assert "is not the encoder ('rendition-disan', RENDITION_ENCODER_NAME)" in srv.log()
