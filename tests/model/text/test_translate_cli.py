"""``rendition translate`` as a real subprocess on a small model: order, blank lines, batching,
both engines, progress bar and errors; the options it shares with ``rendition translate-file``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from rendition.model.kernels import fused_cpu
from rendition.model.tokenizer import train_tokenizer
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow  # (the module fixture trains a small model: ~40 s)
V = 256


def rendition() -> list[str]:
    script = Path(sys.executable).parent / "rendition"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rendition.model.cli"]


def run(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [*rendition(), "translate", *args], input=stdin.encode(), capture_output=True, cwd=ROOT, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A toy tokenizer and a tiny model trained for a few seconds to reverse-and-map token ids,
    so that its outputs depend on the input and stop on </s> by themselves."""
    root = tmp_path_factory.mktemp("cli")
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 6))) for _ in range(300)]
    corpus = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(3000)]
    tok = train_tokenizer(corpus, root / "sp" / "sp", V, ["en", "fr"])
    torch.manual_seed(0)
    cfg = TransformerConfig(V, 64, 4, 128, n_encoder_layers=2, n_decoder_layers=2, max_relative_position=4, dropout=0.0)
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    tag = tok.lang_id("fr")
    for _ in range(150):
        lens = torch.randint(3, 13, (32,), generator=g)
        src = torch.zeros(32, int(lens.max()) + 2, dtype=torch.long)
        tgt = torch.zeros_like(src)
        for b, L in enumerate(lens.tolist()):
            x = torch.randint(6, V, (L,), generator=g)
            src[b, : L + 2] = torch.cat([torch.tensor([tag]), x, torch.tensor([3])])
            tgt[b, : L + 2] = torch.cat([torch.tensor([2]), ((x.flip(0) - 6) * 7) % (V - 6) + 6, torch.tensor([3])])
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    out = root / "model"
    out.mkdir()
    model.cfg.save(out / "config.json")
    save_file({k: v.contiguous() for k, v in model.eval().state_dict().items()}, str(out / "model.safetensors"))
    (out / "sentencepiece.model").write_bytes(tok.path.read_bytes())
    return out


def sample_lines(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 6))) for _ in range(200)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 10))) for _ in range(n)]


def test_order_blank_lines_and_batching(model_dir):
    lines = sample_lines(10, seed=1)
    lines[3:3] = ["", "   "]  # blank lines stay (empty) in place
    lines.append("")
    common = ["--source", "en", "--target", "fr", "--model-dir", str(model_dir), "--beam-size", "3", "-q"]
    res = run([*common, "--batch-size", "4"], "\n".join(lines) + "\n")
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode().split("\n")
    assert out[-1] == "" and len(out) - 1 == len(lines)
    out = out[:-1]
    assert [i for i, o in enumerate(out) if not o] == [3, 4, 12]
    # Each line equals its own one-sentence translation in-process (order kept, batching invisible),
    # at the compute type the command runs by default (auto: int8 on a CPU that runs it).
    tr = Translator.from_pretrained(model_dir, device="cpu", compute_type="auto")
    assert tr.compute_type == ("int8" if fused_cpu.int8_unavailable() is None else "float32")
    for line, got in zip(lines, out):
        if line.strip():
            assert got == tr.translate([line.strip()], source="en", target="fr", beam_size=3)[0].text
    assert len({o for o in out if o}) >= 8  # the model's outputs depend on the input


def test_kv_cache_dtype_flag(model_dir):
    lines = sample_lines(6, seed=3)
    common = ["--source", "en", "--target", "fr", "--model-dir", str(model_dir), "--beam-size", "2", "-q"]
    res = run([*common, "--kv-cache-dtype", "float16"], "\n".join(lines) + "\n")
    assert res.returncode == 0, res.stderr.decode()
    tr = Translator.from_pretrained(model_dir, device="cpu", kv_cache_dtype="float16", compute_type="auto")
    assert res.stdout.decode().split("\n")[:-1] == [t.text for t in tr.translate(lines, "en", "fr", beam_size=2)]
    bad = run([*common, "--kv-cache-dtype", "int8"], "x\n")
    assert bad.returncode == 2 and b"kv-cache-dtype" in bad.stderr


def test_ctranslate2_engine_matches_torch(model_dir, tmp_path):
    lines = sample_lines(12, seed=2)
    common = ["--source", "en", "--target", "fr", "--length-penalty", "0", "--max-length", "40", "-q"]
    torch_out = run([*common, "--model-dir", str(model_dir), "--compute-type", "float32"], "\n".join(lines))
    # A rendition model directory is exported on the fly; an export directory is used as is.
    ct2_out = run(
        [*common, "--engine", "ctranslate2", "--model-dir", str(model_dir), "--threads", "1"], "\n".join(lines)
    )
    assert torch_out.returncode == 0 and ct2_out.returncode == 0, ct2_out.stderr.decode()
    assert torch_out.stdout == ct2_out.stdout
    export = subprocess.run([*rendition(), "export-ct2", str(model_dir), str(tmp_path / "ct2")], capture_output=True)
    assert export.returncode == 0, export.stderr.decode()
    exported = run([*common, "--engine", "ctranslate2", "--model-dir", str(tmp_path / "ct2")], "\n".join(lines))
    assert exported.stdout == torch_out.stdout
    assert len(torch_out.stdout.decode().splitlines()) == 12


def test_progress_bar_on_stderr_for_long_inputs(model_dir):
    lines = sample_lines(40, seed=3)
    res = run(
        ["-s", "en", "-t", "fr", "--model-dir", str(model_dir), "--beam-size", "1", "--batch-size", "8"],
        "\n".join(lines),
    )
    assert res.returncode == 0
    assert len(res.stdout.decode().splitlines()) == 40
    assert "40/40" in res.stderr.decode()


def test_errors_are_clear(model_dir, tmp_path):
    res = run(["-s", "en", "-t", "de", "--model-dir", str(model_dir)], "hello\n")
    assert res.returncode == 2 and "unsupported language pair en-de" in res.stderr.decode()
    res = run(["-s", "en", "-t", "fr", "--model-dir", str(tmp_path / "missing")], "hello\n")
    assert res.returncode == 2 and "error" in res.stderr.decode() and "Traceback" not in res.stderr.decode()
    res = run(["-s", "en", "-t", "fr", "--model-dir", str(model_dir), "--beam-size", "0"], "hello\n")
    assert res.returncode == 2


def test_an_over_long_line_is_refused_naming_it(model_dir):
    limit = json.loads((model_dir / "config.json").read_text())["max_positions"] - 2
    res = run(["-s", "en", "-t", "fr", "--model-dir", str(model_dir)], "short one\n" + "ab qp " * limit + "\n")
    err = res.stderr.decode()
    assert res.returncode == 2 and "line 2 is" in err and f"the limit is {limit} tokens" in err, err
    assert "Traceback" not in err and not res.stdout  # nothing cut, nothing half-written


# The options ``rendition translate`` and ``rendition translate-file`` share (``add_translator_options``),
# a value for each, and the parsed attribute it sets.
SHARED = {
    "--source": ("en", "source"), "--target": ("fr", "target"), "--model-dir": ("m", "model_dir"),
    "--beam-size": ("2", "beam_size"), "--max-length": ("40", "max_length"), "--device": ("cpu", "device"),
    "--threads": ("1", "threads"), "--workers": ("2", "workers"), "--compute-type": ("float32", "compute_type"),
    "--quiet": (None, "quiet"), "--glossary": ("g.tsv", "glossary"), "--no-protect-spans": (None, "protect_spans"),
    "--fallback-no-repeat-ngram": ("3", "fallback_no_repeat_ngram"),
}  # fmt: skip


def test_both_commands_take_the_shared_options_with_the_same_defaults() -> None:
    from rendition.model.documents.cli import build_parser as file_parser
    from rendition.model.text.cli import build_parser as translate_parser

    def flags(p) -> set[str]:
        return {s for a in p._actions for s in a.option_strings if s.startswith("--")} - {"--help"}

    assert flags(translate_parser()) & flags(file_parser()) == set(SHARED)
    given = [x for flag, (value, _) in SHARED.items() for x in (flag, value) if x is not None]
    for argv in (given, ["-s", "en", "-t", "fr"]):  # every shared option given, then their defaults
        text, doc = translate_parser().parse_args(argv), file_parser().parse_args(["in.docx", "out.docx", *argv])
        assert {n: getattr(text, n) for _, n in SHARED.values()} == {n: getattr(doc, n) for _, n in SHARED.values()}
    assert (text.model_dir, text.beam_size, text.max_length, text.device, text.threads, text.workers) == (
        str(DEFAULT_TRANSLATOR), 4, 256, "auto", None, 0,
    )
    assert (text.compute_type, text.quiet, text.glossary, text.protect_spans, text.fallback_no_repeat_ngram) == (None, False, None, True, 4)
    assert (text.engine, text.batch_size, doc.retranslate) == ("torch", 32, False)  # (each command's own)


def test_translate_and_translate_file_agree_given_the_same_options(model_dir, tmp_path):
    """Every shared option given to both commands: the same translations, line for line (a .txt of
    one-line paragraphs), the glossary's term included."""
    lines = sample_lines(6, seed=4)
    (tmp_path / "terms.tsv").write_text(f"{lines[2].split()[0]}\tterme\n")
    shared = ["-s", "en", "-t", "fr", "--model-dir", str(model_dir), "--beam-size", "2", "--max-length", "30",
              "--device", "cpu", "--threads", "1", "--workers", "1", "--compute-type", "float32", "-q",
              "--glossary", str(tmp_path / "terms.tsv")]  # fmt: skip
    text = "\n\n".join(lines) + "\n"
    translated = run(shared, text)
    assert translated.returncode == 0, translated.stderr.decode()
    (tmp_path / "in.txt").write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [*rendition(), "translate-file", str(tmp_path / "in.txt"), str(tmp_path / "out.txt"), *shared]
    doc = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, timeout=120)
    assert doc.returncode == 0, doc.stderr.decode()
    assert (tmp_path / "out.txt").read_text() == translated.stdout.decode()
    assert "terme" in translated.stdout.decode()  # (placed, or appended when the stand-in was lost)
