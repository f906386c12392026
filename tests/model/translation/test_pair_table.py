"""Several translators together (``rendition.model.translation.pairs``): the routing table, the
pair packages of a models directory, and the pivot through English (``pipeline.pivot``) with two
real translators: the shipped en-fr one and a tiny en-de one trained here (``tests.model.tiny_pair``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rendition.model.text.cli import translate_lines
from rendition.model.translation.pairs import (
    DuplicateDirection,
    PairTable,
    UnsupportedPair,
    package_dirs,
    split_paths,
)
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from tests.model.tiny_pair import train_tiny_en_de

SEARCH = {"beam_size": 2, "max_length": 16}
FRENCH = ["Le chat dort.", "Ouvrez le fichier et enregistrez le document.", "Bonjour le monde."]


def table() -> PairTable[str]:
    return PairTable([("fr", ("en", "fr")), ("de", ("de", "en")), ("es", ("es", "it"))])


def test_a_pair_goes_to_the_translator_that_has_both_languages() -> None:
    t = table()
    assert [(leg.translator, leg.source, leg.target) for leg in t.route("en", "de")] == [("de", "en", "de")]
    assert [(leg.translator, leg.source, leg.target) for leg in t.route("fr", "en")] == [("fr", "fr", "en")]
    assert [(leg.translator, leg.source, leg.target) for leg in t.route("es", "it")] == [("es", "es", "it")]


def test_english_bridges_two_translators() -> None:
    t = table()
    assert [(leg.translator, leg.source, leg.target) for leg in t.route("fr", "de")] == [("fr", "fr", "en"), ("de", "en", "de")]
    assert [(leg.translator, leg.source, leg.target) for leg in t.route("de", "fr")] == [("de", "de", "en"), ("fr", "en", "fr")]
    assert t.pivots() == [("fr", "de"), ("de", "fr")]  # (es-it has no English: it bridges nothing)
    assert t.languages == ("en", "fr", "de", "es", "it")
    assert t.targets("fr") == ["en", "de"] and t.targets("en") == ["fr", "de"] and t.targets("es") == ["it"]


@pytest.mark.parametrize("source,target", [("en", "es"), ("fr", "it"), ("fr", "fr"), ("xx", "en")])
def test_a_pair_nobody_serves_is_refused_naming_the_loaded_pairs(source: str, target: str) -> None:
    with pytest.raises(UnsupportedPair) as e:
        table().route(source, target)
    message = str(e.value)
    assert f"unsupported language pair {source}-{target}" in message
    assert "supported: en-fr, fr-en, de-en, en-de, es-it, it-es; through English: fr-de, de-fr" in message


def test_two_translators_of_one_direction_are_refused() -> None:
    with pytest.raises(DuplicateDirection, match="two translators serve en->fr: a and b"):
        PairTable([("a", ("en", "fr")), ("b", ("en", "fr", "de"))], ["a", "b"])


def test_a_models_dir_holds_pair_packages_and_paths_split(tmp_path: Path) -> None:
    for name, config in (("en-fr", '{"languages": ["en", "fr"]}'), ("b-notes", '{"other": 1}'), ("a-empty", None)):
        (tmp_path / name).mkdir()
        if config:
            (tmp_path / name / "config.json").write_text(config)
    (tmp_path / "en-de").symlink_to(DEFAULT_TRANSLATOR)  # (a link to a translator directory counts)
    assert package_dirs(tmp_path) == [tmp_path / "en-de", tmp_path / "en-fr"]
    with pytest.raises(FileNotFoundError, match="models directory not found"):
        package_dirs(tmp_path / "missing")
    assert split_paths(f"/a{os.pathsep}/b, /c,,") == [Path("/a"), Path("/b"), Path("/c")]


@pytest.fixture(scope="module")
def translators(tmp_path_factory: pytest.TempPathFactory) -> tuple[Translator, Translator]:
    de = train_tiny_en_de(tmp_path_factory.mktemp("en-de"))
    return (Translator.from_pretrained(DEFAULT_TRANSLATOR, compute_type="float32"),
            Translator.from_pretrained(de, compute_type="float32"))  # fmt: skip


@pytest.mark.slow
def test_the_pivot_is_both_legs_one_after_the_other(translators: tuple[Translator, Translator]) -> None:
    fr, de = translators
    both = PairTable([(fr, fr.languages), (de, de.languages)])
    through = translate_lines(both, FRENCH, "fr", "de", progress=False, **SEARCH)
    english = translate_lines(fr, FRENCH, "fr", "en", progress=False, **SEARCH)
    assert through == translate_lines(de, english, "en", "de", progress=False, **SEARCH)
    # (the tiny model's output depends on its input: what its leg reads is the first leg's English)
    assert len(set(through)) > 1 and through != translate_lines(de, FRENCH, "en", "de", progress=False, **SEARCH)
    assert translate_lines(both, ["Open the file."], "en", "de", progress=False, **SEARCH) == translate_lines(
        de, ["Open the file."], "en", "de", progress=False, **SEARCH
    )
    with pytest.raises(UnsupportedPair, match="supported: en-fr, fr-en, de-en, en-de"):
        translate_lines(both, FRENCH, "fr", "es", progress=False)


@pytest.mark.slow
def test_rendition_translate_serves_several_pairs(translators: tuple[Translator, Translator], tmp_path: Path) -> None:
    """``rendition translate`` with a models directory gives what the library gives."""
    fr, de = translators
    models = tmp_path / "models"
    models.mkdir()
    (models / "en-fr").symlink_to(DEFAULT_TRANSLATOR)
    shutil.copytree(de.tokenizer.path.parent, models / "en-de")
    cmd = [sys.executable, "-m", "rendition.model.cli", "translate", "-s", "fr", "-t", "de", "--models-dir", str(models), "-q",
           "--compute-type", "float32", "--workers", "1", "--beam-size", "2", "--max-length", "16"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, input="".join(f"{t}\n" for t in FRENCH), capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    both = PairTable([(fr, fr.languages), (de, de.languages)])
    assert out.stdout.splitlines() == translate_lines(both, FRENCH, "fr", "de", progress=False, **SEARCH)
