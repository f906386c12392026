"""Build ``model/text/names.tsv``: the names that the text pipeline keeps as written
(``rendition.model.text.names``): person first names from Faker's French and English person
providers (MIT), and the companies and products of ``BRANDS`` (written for this list).

    pip install faker
    python scripts/build_names.py data/build/corpus/train.en-fr.tsv

Each line: a name, its kind (person, brand), then per language (English, French) 1 where it is also a common word of that
language (its lowercase form occurs at least ``--min-lowercase`` times on that side of the corpus
given: "Mark", "Summer" in English, "Pierre", "Marie" in French), else 0, then a person's gender
where Faker lists the name as only female (f) or only male (m), else empty.  Such a name is kept only
where its capital says it is a name (``names.name_spans``).
Place names that French and English write differently (Jordan/Jordanie, Georgia/Géorgie...) and
the words always written with a capital (``ALWAYS_CAPITALISED``: April, June, Noël, Christian) are
left out: a translation must translate them.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import re
from pathlib import Path

from rendition.model.text.names import WORD  # (a listed name must be one that name_spans can find)

LOCALES = ("fr_FR", "fr_CA", "fr_CH", "fr_BE", "fr_QC", "en_US", "en_GB", "en_IE", "en_NZ")
PLACES = set(
    "Africa America Asia Austin Carolina China Dakota Florida Georgia India Israel Jamaica Jordan Kenya "
    "Normandie Virginia Brittany Bretagne Lorraine Savannah Sydney Egypt Ireland Scotland Wales France".split()
)
# Words a language always writes with a capital, so that no lowercase count flags them as common
# words: months, days and feasts ("in June", "à Noël"), and the English adjectives of peoples and
# faiths that are first names too ("a Christian church", "the Norman conquest", "the Roman empire").
# A translation must translate them.
ALWAYS_CAPITALISED = set(
    "January February March April May June July August September October November December Monday Tuesday "
    "Wednesday Thursday Friday Saturday Sunday Christmas Easter Noël Pâques Toussaint Pentecôte "
    "Christian Norman Roman Scot".split()
)
# Companies and products often named in everyday text, one word each (a name written with inner
# capitals, "LibreOffice", "PayPal", or in capitals, "IBM", is kept as code or left to the model;
# so are the free software names the training corpus is full of: Linux, Debian, Firefox...).
BRANDS = (
    "Adidas Airbus Aldi Alstom Amazon Apple Audi Auchan Boeing Bosch Bouygues Canon Carrefour Casino Chanel "
    "Chrome Citroën Danone Darty Decathlon Deezer Dell Dior Doctolib Dropbox Engie Excel Facebook Ferrari "
    "Fnac Ford Franprix Google Heineken Hermès Honda Hyundai Ikea Instagram Intel Intermarché Kia Lego "
    "Lenovo Leclerc Lidl Mastercard Mercedes Michelin Microsoft Monoprix Netflix Nestlé Nike Nikon "
    "Nintendo Nokia Nvidia Opel Oracle Orange Outlook Peugeot Philips Picard Renault Safran Samsung Sanofi Seat Shell "
    "Siemens Skype Slack Sony Spotify Starbucks Teams Tesco Tesla Thales Toyota Twitter Uber Ubisoft "
    "Vinci Visa Volkswagen Volvo Walmart Windows Word Yahoo Zoom"
).split()
OUT = Path(__file__).resolve().parents[1] / "model" / "text" / "names.tsv"
HEADER = "# name\tkind\talso a common English word\talso a common French word\tgender (scripts/build_names.py)\n"


def _faker(attrs: tuple[str, ...]) -> set[str]:
    names: set[str] = set()
    for locale in LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for attr in attrs:
            value = getattr(provider, attr, ())
            names |= set(value.keys() if isinstance(value, dict) else value)
    return names


def faker_names() -> set[str]:
    names = _faker(("first_names", "first_names_female", "first_names_male"))
    return {n for n in names if re.fullmatch(WORD, n) and n not in PLACES | ALWAYS_CAPITALISED}


def genders() -> dict[str, str]:
    """A first name -> "f" or "m" where Faker's locales list it under one gender only ("Camille", in
    both, has none)."""
    female, male = _faker(("first_names_female",)), _faker(("first_names_male",))
    return {n: "f" for n in female - male} | {n: "m" for n in male - female}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path, help="a parallel corpus (TSV): the lowercase counts")
    ap.add_argument("--min-lowercase", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    kinds = {n: "person" for n in faker_names()} | {n: "brand" for n in BRANDS}
    names = set(kinds)
    lower = {n.lower() for n in names}
    counts = {"en": collections.Counter[str](), "fr": collections.Counter[str]()}
    with args.corpus.open(encoding="utf-8") as f:  # (source, English, French) per line
        for line in f:
            _, en, fr = line.rstrip("\n").split("\t")[:3]
            for lang, text in (("en", en), ("fr", fr)):
                counts[lang].update(w for w in re.findall(r"[a-zß-öø-ÿ]+", text) if w in lower)
    common = lambda lang, n: int(counts[lang][n.lower()] >= args.min_lowercase)  # noqa: E731
    gender = genders()
    rows = sorted(
        f"{n}\t{kinds[n]}\t{common('en', n)}\t{common('fr', n)}\t{gender.get(n, '') if kinds[n] == 'person' else ''}" for n in names
    )
    args.out.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    both = sum(common("en", n) or common("fr", n) for n in names)
    print(f"{len(rows)} names, {both} also common words -> {args.out}")


if __name__ == "__main__":
    main()
