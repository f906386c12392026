"""CLDR's names in English and another language (Debian's ``unicode-cldr-core``): languages,
territories, week days, months (``common/main/<lang>.xml``) and the emoji's spoken names
(``common/annotations/<lang>.xml``, ``type="tts"``: "grinning face" / "grinsendes Gesicht").

Each name pairs with the name of the same code in English; alternative forms (``alt="..."``) and
names that are the same in both languages are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from rendition.model.training.corpus.lexicon import cldr_calendar

_CLDR = "usr/share/unicode/cldr/common"
_ANNOTATION = re.compile(r'<annotation cp="([^"]+)" type="tts">([^<]+)</annotation>')


def _file(root: Path, kind: str, lang: str) -> Path:
    found = sorted(root.glob(f"**/{_CLDR}/{kind}/{lang}.xml"))
    if not found:
        raise FileNotFoundError(f"no {_CLDR}/{kind}/{lang}.xml under {root} (package unicode-cldr-core)")
    return found[0]


def display_names(text: str, tag: str) -> dict[str, str]:
    """code -> name of the ``<tag type="code">`` elements without an ``alt`` form."""
    return dict(re.findall(rf'<{tag} type="([\w-]+)">([^<]+)</{tag}>', text))


def emoji_names(text: str) -> dict[str, str]:
    """emoji -> its spoken name (``type="tts"``)."""
    return dict(_ANNOTATION.findall(text))


def _matched(en: dict[str, str], xx: dict[str, str]) -> Iterator[tuple[str, str]]:
    for code, name in en.items():
        other = xx.get(code)
        if other and other.casefold() != name.casefold():
            yield name, other


def name_pairs(root: Path, lang: str) -> Iterator[tuple[str, str]]:
    """(English, ``lang``) names of the same code from the CLDR files unpacked under root."""
    main_en, main_xx = (_file(root, "main", x).read_text(encoding="utf-8") for x in ("en", lang))
    for tag in ("language", "territory"):
        yield from _matched(display_names(main_en, tag), display_names(main_xx, tag))
    cal_en, cal_xx = cldr_calendar(root, "en"), cldr_calendar(root, lang)
    for kind in ("days", "months"):
        yield from _matched(cal_en[kind], cal_xx[kind])
    ann_en, ann_xx = (_file(root, "annotations", x).read_text(encoding="utf-8") for x in ("en", lang))
    yield from _matched(emoji_names(ann_en), emoji_names(ann_xx))
