"""gettext catalogs (.po, .pot) with ``polib``.

Every entry without a translation gets one, flagged ``fuzzy`` for a human to review (``msgfmt``
leaves fuzzy entries out of the compiled catalog until someone clears the flag); entries already
translated (fuzzy drafts included) are kept as they are unless ``retranslate``.  Placeholders come
back unchanged (``placeholders``: an entry whose placeholders do not survive stays untranslated);
a keyboard accelerator (``_File``, ``&Open``: the header's ``X-Accelerator-Marker`` or either of
those) is taken out before translation and put back before the same letter in the translation,
else before its first letter.  A plural entry's ``msgstr[0]`` is the translation of ``msgid`` and
every other form that of ``msgid_plural``; the number of forms comes from the header's
``Plural-Forms``, which a template (.pot) gets for the target language.  ``msgctxt``, comments,
references and obsolete entries are kept.  The output is UTF-8.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from typing import cast

import polib

from rendition.model.documents.base import Document, InvalidDocument, Limits

# the target language's plural rule for templates without one (gettext manual, "Plural forms")
PLURAL_FORMS = {
    "en": "nplurals=2; plural=(n != 1);",
    "de": "nplurals=2; plural=(n != 1);",
    "es": "nplurals=2; plural=(n != 1);",
    "it": "nplurals=2; plural=(n != 1);",
    "nl": "nplurals=2; plural=(n != 1);",
    "pt": "nplurals=2; plural=(n != 1);",
    "fr": "nplurals=2; plural=(n > 1);",
}
_NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")
# a line of a catalog that is not a comment: an optional keyword, then one or more C string literals
_LINE = re.compile(r'\s*(?:(?:domain|msgctxt|msgid|msgid_plural|msgstr|msgstr\s*\[\s*\d+\s*\])\s*)?(?:"(?:[^"\\]|\\.)*"\s*)+')
_CHARSET = re.compile(rb"charset=([A-Za-z0-9_.:-]+)")


def syntax_error(data: bytes) -> str | None:
    """Where the catalog breaks the PO syntax as GNU ``msgfmt`` reads it (``line N: ...``), or None.
    polib reads past a string without its closing quote (dropping its last character) and past a
    line that is no keyword or string; such a file is refused rather than translated wrongly."""
    found = _CHARSET.search(data)
    try:
        text = data.decode(found.group(1).decode() if found else "utf-8")
    except (LookupError, UnicodeDecodeError):
        return None  # (polib reports the encoding)
    for n, line in enumerate(text.lstrip("\ufeff").split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("#~") and not stripped.startswith("#~|"):  # an obsolete entry's line: kept, so checked
            line = stripped = stripped[2:].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _LINE.fullmatch(line) is None:
            if stripped.count('"') % 2 or stripped.endswith('\\"'):
                return f"line {n}: a string without its closing quote"
            return f"line {n}: neither a keyword with a quoted string nor a quoted string: {stripped[:60]!r}"
    return None


def _accelerator_pattern(marker: str) -> re.Pattern:
    m = re.escape(marker)
    if marker == "&":  # not an entity (&amp;) and not "a & b"
        return re.compile(rf"{m}(?=[^\W\d_])(?![A-Za-z]+;)")
    return re.compile(rf"(?<![\w{m}]){m}(?=[^\W_])")


class PoCatalog(Document):
    def __init__(self, data: bytes, limits: Limits, target: str | None = None, retranslate: bool = False):
        del limits  # a catalog is plain text: the file size limit is the one that applies
        if b"\x00" in data:
            raise InvalidDocument("the gettext file contains NUL bytes: it is not a .po text file")
        if (error := syntax_error(data)) is not None:
            raise InvalidDocument(f"the file is not a valid gettext catalog: {error}")
        # polib reads a path or the text itself (and takes a text naming an existing file for a path):
        # always a file of our own, so an upload can never name a file on this machine
        fd, path = tempfile.mkstemp(suffix=".po")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            self.po = polib.pofile(path, wrapwidth=78)
        except (OSError, ValueError, UnicodeDecodeError, LookupError) as e:
            why = str(e).replace(f" {path}", "").replace(path, "the file")  # not our temporary file's name
            raise InvalidDocument(f"the file is not a valid gettext catalog: {why[:200]}") from None
        finally:
            os.unlink(path)
        self.target = target
        marker = self.po.metadata.get("X-Accelerator-Marker", "").strip()
        self.accelerators = [_accelerator_pattern(c) for c in ([marker] if marker else ["_", "&"])]
        self.entries: list[tuple[polib.POEntry, list[str | None]]] = []  # entry, accelerators of its texts
        self.segments = []
        for entry in self.po:
            if entry.obsolete or not entry.msgid:
                continue
            done = any(entry.msgstr_plural.values()) if entry.msgid_plural else bool(entry.msgstr)
            if done and not retranslate:
                continue
            texts = [entry.msgid, entry.msgid_plural] if entry.msgid_plural else [entry.msgid]
            keys = []
            for text in texts:
                bare, key = self._strip_accelerator(text)
                self.segments.append(bare)
                keys.append(key)
            self.entries.append((entry, keys))

    def _strip_accelerator(self, text: str) -> tuple[str, str | None]:
        """The text without its accelerator marker, and the marker (None: it has none)."""
        for pattern in self.accelerators:
            hits = list(pattern.finditer(text))
            if len(hits) == 1:
                i = hits[0].start()
                return text[:i] + text[i + 1 :], text[i]
        return text, None

    @staticmethod
    def _put_accelerator(bare_source: str, translation: str, marker: str, source_letter_at: int) -> str:
        letter = bare_source[source_letter_at] if source_letter_at < len(bare_source) else ""
        i = -1
        if letter.isalnum():  # the same letter: starting a word, else anywhere; as it was, else in either case
            for pattern in (rf"\b{re.escape(letter)}", re.escape(letter)):
                for flags in (0, re.IGNORECASE):
                    if i < 0 and (m := re.search(pattern, translation, flags)):
                        i = m.start()
        if i < 0:
            i = next((k for k, c in enumerate(translation) if c.isalnum()), 0)
        return translation[:i] + marker + translation[i:]

    def _nplurals(self) -> int:
        forms = self.po.metadata.get("Plural-Forms", "")
        m = _NPLURALS.search(forms)
        if m is None or "EXPRESSION" in forms:
            forms = PLURAL_FORMS.get(self.target or "", "nplurals=2; plural=(n != 1);")
            self.po.metadata["Plural-Forms"] = forms
            m = _NPLURALS.search(forms)
        assert m is not None  # (every rule in PLURAL_FORMS names nplurals)
        return max(1, int(m.group(1)))

    def render(self, translations: Sequence[str | None]) -> bytes:
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        meta = self.po.metadata
        meta["Content-Type"] = "text/plain; charset=UTF-8"
        meta.setdefault("Content-Transfer-Encoding", "8bit")
        if self.target and meta.get("Language", "").strip() in ("", "LANGUAGE"):
            meta["Language"] = self.target
        self.po.encoding = "utf-8"
        n = self._nplurals() if any(e.msgid_plural for e, _ in self.entries) else 0
        k = 0
        for entry, keys in self.entries:
            texts = [entry.msgid, entry.msgid_plural][: len(keys)]
            got = translations[k : k + len(keys)]
            bare = self.segments[k : k + len(keys)]
            k += len(keys)
            if any(t is None for t in got):
                continue  # kept untranslated (a placeholder did not survive, or nothing to translate)
            out: list[str] = []
            for text, key, t, b in zip(texts, keys, cast("list[str]", got), bare):
                if key is not None:
                    at = next(i for i, (x, y) in enumerate(zip(text, b + "\0")) if x != y)  # where the marker was
                    t = self._put_accelerator(b, t, key, at)
                out.append(t)
            if entry.msgid_plural:
                entry.msgstr_plural = {i: out[0] if i == 0 else out[1] for i in range(n)}
            else:
                entry.msgstr = out[0]
            if "fuzzy" not in entry.flags:
                entry.flags.append("fuzzy")
        return str(self.po).encode("utf-8")
