"""Language identification on the held-out DDTP test splits, both sides of every pair.

    python benchmarks/bench_language_id.py            # the service's detector (py3langid)
    pip install lingua-language-detector && python benchmarks/bench_language_id.py --lingua
"""

from __future__ import annotations

import argparse
import time

from rendition.model.text.language_id import LanguageDetector
from rendition.model.training.data import SPLITS_DIR, read_tsv


def lines(pairs: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for other in pairs:
        for p in read_tsv(SPLITS_DIR / f"test.en-{other}.tsv"):
            out += [(p.src, "en"), (p.tgt, other)]
    return out


def report(name: str, detect, data: list[tuple[str, str]]) -> None:
    t0 = time.perf_counter()
    right = sum(detect(text) == lang for text, lang in data)
    dt = time.perf_counter() - t0
    print(f"{name:28s} {right}/{len(data)} = {100 * right / len(data):.2f}%  ({1e6 * dt / len(data):.0f} us per line)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lingua", action="store_true", help="also measure lingua-language-detector")
    args = ap.parse_args()
    for langs, data in ((("en", "fr"), lines(("fr",))), (("en", "fr", "de"), lines(("fr", "de")))):
        det = LanguageDetector(langs)
        report(f"py3langid {'/'.join(langs)}", lambda t, det=det: det.detect(t)[0][0], data)
        if args.lingua:
            from lingua import IsoCode639_1, LanguageDetectorBuilder

            codes = [getattr(IsoCode639_1, x.upper()) for x in langs]
            lingua = LanguageDetectorBuilder.from_iso_codes_639_1(*codes).build()

            def detect(t: str, lingua=lingua) -> str | None:
                found = lingua.detect_language_of(t)
                return found.iso_code_639_1.name.lower() if found else None

            report(f"lingua {'/'.join(langs)}", detect, data)


if __name__ == "__main__":
    main()
