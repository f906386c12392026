"""The least a Python front can do for ``POST /v1/translate``: the floor under the service's
HTTP efficiency (``bench_serving.py --front floor``).

    python benchmarks/floor_front.py [--port 8000]     # a server; settings as rendition serve's

The service as ``rendition serve`` starts it (uvicorn on uvloop, the service's protocol, the
loaded models and their schedulers), with one ASGI function in front of the app.  For
``POST /v1/translate`` it does only what no front can skip: read the body, parse and validate it
(``TranslateRequest``) and its options, hand the text's token ids to the translator's queue, decode a sentence
cut by its length limit once more (as the pipeline does), and write the text back as JSON (a
span the pipeline keeps, such as a URL, comes back as its stand-in: nothing is put back).  The
token ids and the output texts are looked up after the first time a text is seen, so no text
work happens on the event loop, and there is no FastAPI, no service middleware, no admission, no
metrics and no access line.  This is a measuring instrument, not a server to deploy: it answers
only what the benchmark sends (one text, a known pair; no glossary, no target prefix).  Every
other request goes to the service unchanged.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from starlette.types import Message, Receive, Scope, Send


def pipeline_ids(translator: Any, text: str, source: str, target: str, opts: Any) -> list[list[int]]:
    """The token ids the service's text pipeline hands ``translator`` for ``text``: its sentences
    with the spans to keep as stand-ins (``rendition.model.text.pipeline``, the service's default
    protection), each with the target tag and </s>."""
    from rendition.model.text import pipeline

    protection = pipeline.Protection()
    sentences = pipeline.split([text], source, opts)[0].sentences
    return translator.preprocess([pipeline.protect(s, protection, source).text for s in sentences], target)


class FloorFront:
    """The service's app (``create_app``) behind the least ``POST /v1/translate`` can do."""

    def __init__(self, app: Any):
        self.app = app
        self.sentences: dict[tuple[str, str, str], list[list[int]]] = {}  # (text, source, target) -> ids
        self.texts: dict[tuple[int, ...], str] = {}  # output tokens -> text

    def __getattr__(self, name: str) -> Any:  # (rendition.service.main reads app.state)
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/v1/translate":
            await self.app(scope, receive, send)
            return
        from rendition.model.text import pipeline
        from rendition.model.translation.search import ended_by_limit
        from rendition.service.routers.translate import request_options
        from rendition.service.schemas import TranslateRequest

        body, more = b"", True
        while more:
            message: Message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        req = TranslateRequest.model_validate_json(body)
        assert isinstance(req.text, str), "the floor front answers one text per request"
        queue = self.app.state.rendition.queues["translator"]
        translator = queue.engine.translator
        opts = request_options(self.app.state.settings, req, queue.engine)
        key = (req.text, req.source, req.target)
        if (ids := self.sentences.get(key)) is None:
            ids = self.sentences[key] = pipeline_ids(translator, req.text, req.source, req.target, opts)
        results = list(await queue.submit(ids, [len(x) for x in ids], opts))
        again = [k for k, cut in enumerate(ended_by_limit(ids, results, opts)) if cut]
        if again and (second := pipeline.fallback_options(opts, pipeline.DEFAULT_FALLBACK_NGRAM)) is not None:
            redone = await queue.submit([ids[k] for k in again], [len(ids[k]) for k in again], second)
            for k, hyps in zip(again, redone):
                results[k] = hyps
        parts = []
        for hyps in results:
            tokens = tuple(hyps[0].tokens)
            if (text := self.texts.get(tokens)) is None:
                text = self.texts[tokens] = translator.tokenizer.decode([list(tokens)])[0]
            parts.append(text)
        data = json.dumps({"results": [{"text": " ".join(parts)}], "model": "floor"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def main(argv: list[str] | None = None) -> None:
    """``rendition serve`` with its app behind ``FloorFront``."""
    import rendition.service.main as serve

    create_app = serve.create_app
    serve.create_app = lambda *a, **k: FloorFront(create_app(*a, **k))  # type: ignore[assignment]
    serve.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
