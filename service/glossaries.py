"""A request's glossary: its own terms (``glossary``, an object of source term -> target term) and
a server glossary chosen by name (``glossary_name``), merged (the request's terms win).

Server glossaries are ``RENDITION_GLOSSARY_DIR/<source>-<target>/<name>.tsv`` files, one
``source<TAB>target`` per line (``rendition.model.text.glossary``); they are read when first asked
for and again whenever the file changes.  Errors: a malformed name or glossary is a 422 naming
the field and the rule, an unknown name a 404 naming it (and the names there are), a glossary over
``RENDITION_GLOSSARY_MAX_TERMS`` terms, a term over ``RENDITION_GLOSSARY_MAX_TERM_CHARS``
characters or a file over ``RENDITION_GLOSSARY_MAX_FILE_BYTES`` a 422 naming the limit.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from rendition.model.text.glossary import Glossary, GlossaryError, GlossaryLimits
from rendition.service.errors import APIError, invalid
from rendition.service.settings import Settings

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def limits(settings: Settings) -> GlossaryLimits:
    return GlossaryLimits(max_terms=settings.glossary_max_terms, max_term_chars=settings.glossary_max_term_chars)


def _limit_hint(message: str) -> str:
    if "(the limit)" in message:
        return message.replace("(the limit)", "(the limit, RENDITION_GLOSSARY_MAX_TERMS)")
    if "; the limit is" in message and "characters long" in message:
        return message + " (RENDITION_GLOSSARY_MAX_TERM_CHARS)"
    return message


@lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int, glossary_limits: GlossaryLimits, name: str) -> Glossary:
    """A server glossary file, parsed once per version of it (its modification time and size)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise GlossaryError(f"{name} is not UTF-8") from None
    return Glossary.from_tsv(text, glossary_limits, name=name)


def server_glossary(settings: Settings, name: str, source: str, target: str, field: str = "glossary_name") -> Glossary:
    """The server glossary ``name`` for ``source`` -> ``target``."""
    if not NAME.fullmatch(name):
        raise invalid(field, f"{name[:80]!r} is not a glossary name (letters, digits, '_', '-', '.'; at most 64)", "invalid_glossary_name")
    root = settings.glossary_dir
    if root is None:
        raise APIError(
            404, f"no glossary named {name!r}: this server has no glossaries (RENDITION_GLOSSARY_DIR is not set)",
            kind="glossary_not_found", param=field,
        )  # fmt: skip
    pair_dir = root / f"{source}-{target}"
    path = pair_dir / f"{name}.tsv"
    try:
        st = path.stat()
    except OSError:
        try:
            names = sorted(p.stem for p in pair_dir.glob("*.tsv"))
        except OSError:
            names = []
        have = f"the {source}-{target} glossaries are: {', '.join(names)}" if names else f"there are no {source}-{target} glossaries"
        raise APIError(404, f"no glossary named {name!r} for {source}-{target}; {have}", kind="glossary_not_found", param=field) from None
    if st.st_size > settings.glossary_max_file_bytes:
        raise invalid(
            field, f"glossary {name!r} is {st.st_size:,} bytes; the limit is {settings.glossary_max_file_bytes:,} "
            "(RENDITION_GLOSSARY_MAX_FILE_BYTES)", "invalid_glossary",
        )  # fmt: skip
    try:
        return _read(str(path), st.st_mtime_ns, st.st_size, limits(settings), f"glossary {name!r}")
    except GlossaryError as e:
        raise invalid(field, _limit_hint(str(e)), "invalid_glossary") from None
    except OSError as e:
        raise APIError(404, f"glossary {name!r} could not be read: {e.strerror or e}", kind="glossary_not_found", param=field) from None


def request_glossary(settings: Settings, terms: object, field: str = "glossary") -> Glossary:
    """A request's own glossary: an object, or (form fields) a string holding a JSON object."""
    if isinstance(terms, str):
        if len(terms) > settings.glossary_max_file_bytes:
            raise invalid(field, f"{len(terms):,} characters; the limit is {settings.glossary_max_file_bytes:,} (RENDITION_GLOSSARY_MAX_FILE_BYTES)", "invalid_glossary")
        try:
            terms = json.loads(terms)
        except (ValueError, RecursionError) as e:
            raise invalid(field, f"not a JSON object of source term -> target term ({type(e).__name__}: {str(e)[:120]})", "invalid_glossary") from None
    try:
        return Glossary.from_mapping(terms, limits(settings))
    except GlossaryError as e:
        raise invalid(field, _limit_hint(str(e)), "invalid_glossary") from None


def resolve(
    settings: Settings, source: str, target: str, terms: object = None, name: str | None = None
) -> Glossary | None:
    """The glossary a request asks for (None: none)."""
    out = None
    if name is not None and name != "":
        out = server_glossary(settings, name, source, target)
    if terms is not None and terms != "":
        own = request_glossary(settings, terms)
        out = own if out is None else out.merged(own)
    return out if out else None
