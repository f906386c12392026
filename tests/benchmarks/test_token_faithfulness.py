"""``benchmarks/token_faithfulness.py``: what counts as a token, and the measure itself on the
committed test splits (a translator that copies its input keeps every token, one that drops them
none)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import token_faithfulness as tf  # noqa: E402


def test_tokens_by_kind() -> None:
    text = "See https://example.org/docs, edit /etc/apt/sources.list, run make --jobs 4 with MAX_SIZE or fooBar in setup.py."
    assert tf.tokens(text) == [
        ("url", "https://example.org/docs"), ("path", "/etc/apt/sources.list"), ("option", "--jobs"), ("number", "4"),
        ("identifier", "MAX_SIZE"), ("identifier", "fooBar"), ("identifier", "setup.py"),
    ]  # fmt: skip
    assert tf.tokens("Un e-mail bien écrit, mot-clé.") == []  # hyphenated words are not options


class Echo:
    def translate(self, texts, source, target, beam_size=4):
        return [type("T", (), {"text": t})() for t in texts]


class Drop:
    def translate(self, texts, source, target, beam_size=4):
        return [type("T", (), {"text": "rien"})() for t in texts]


def test_measure_counts_kept_and_lost_tokens() -> None:
    rows = tf.sentences()
    assert len(rows) > 500 and {r[1] for r in rows} == {"en", "fr"}
    echo, drop = tf.measure(Echo(), rows), tf.measure(Drop(), rows)
    assert echo["kept"] == len(rows) and not echo["lost"]
    assert drop["kept"] == 0 and drop["lost"] == drop["tokens"]


def test_email_addresses_and_windows_paths_are_tokens() -> None:
    text = r"Write to marie.dupont@example.fr, then open C:\Users\Marie\notes.txt or \\nas\share\plans."
    assert tf.tokens(text) == [("email", "marie.dupont@example.fr"), ("winpath", r"C:\Users\Marie\notes.txt"), ("winpath", r"\\nas\share\plans")]


def test_names_and_code_set_lists_tokens_both_sides_hold() -> None:
    rows = tf.sentences((tf.VERBATIM,))
    kinds = {k for r in rows for k, _ in r[3]}
    assert len(rows) >= 100 and {"name", "company", "command", "winpath", "email"} <= kinds
    assert all(tok in src for src, _, _, tk in rows for _, tok in tk)
