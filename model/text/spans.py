"""The spans of a text that a translation must keep as they are: URLs, e-mail addresses, POSIX
and Windows paths, emoji, command lines in backticks or in running text (``git status``, ``sudo apt install
vim``, ``chmod -R 755 /srv``: a known program and its arguments), ``--options``, version numbers and
identifiers in code style (snake_case, lowerCamelCase, dotted.names), and person
names (``rendition.model.text.names``: "Pierre", "Emily Watson").

    marked = protect("Run `make all` in /srv/app.", STAND_INS)   # "Run X in Y."
    Glossary.restore(marked, "Lancez X dans Y.").text            # "Lancez `make all` dans /srv/app."

``protect`` gives each span a stand-in (``rendition.model.text.stand_ins``) the way a glossary term
gets one, the span itself being its "target term", so ``Glossary.restore`` puts it back verbatim
(appended in parentheses when the translation lost its stand-in).  A text without such a span is
left exactly as it was.
"""

from __future__ import annotations

import re

from rendition.model.text.glossary import Marked
from rendition.model.text.names import gender, name_spans
from rendition.model.text.stand_ins import PERSONS, free, padding

_KINDS = {
    "backticks": r"`[^`\n]+`",
    "url": r"\b(?:https?|ftp)://[^\s<>\"'`]*[\w/#=&-]|\bwww\.[\w-]+(?:\.[\w-]+)+(?:/[^\s<>\"'`]*[\w/])?",
    "email": r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
    "winpath": r"\b[A-Za-z]:\\(?:[\w.$~-]+\\?)*|\\\\[\w.$-]+(?:\\[\w.$-]+)+",
    "path": r"(?<![\w./~<-])(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%+-]+)*/?",
    "option": r"(?<![\w-])--[A-Za-z0-9][\w-]*(?:=[^\s,;]+)?",
    "version": r"\b[vV]?\d+(?:\.\d+){2,}(?:[-+~][\w.]+)?\b|\b[vV]\d+(?:\.\d+)+\b",
    "dotted": r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b",
    "snake": r"\b_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*\b",
    # lowerCamelCase only (not a printf conversion: gcc's %qT): a capitalised one is mostly a product
    # name (OpenGL, HomeBank) that the translator keeps by itself and moves where the other language
    # wants it ("contexte OpenGL" -> "OpenGL context"), which a stand-in does not
    "camel": r"(?<![%$])\b[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+\b",
}
# Emoji and pictographs: the tokenizer spells most of them in bytes, and the translator, which saw
# few, writes those bytes back broken ("Happy birthday 🎂🎉!" -> "L'anniversaire ���di ..."): a run
# of them, with its joiners, variation selectors, skin tones and flag tags, is kept as it is.
_PICTOGRAPH = "\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u2300-\u23FF"
_KINDS["emoji"] = f"[{_PICTOGRAPH}](?:[{_PICTOGRAPH}\u200D\uFE0E\uFE0F\u20E3\U000E0020-\U000E007F])*"
SPAN = re.compile("|".join(f"(?P<{k}>{v})" for k, v in _KINDS.items()))
_TRAILING = ".,;:!?)"  # sentence punctuation a path or URL does not end with


def _dotted_name(span: str) -> bool:
    """A dotted name, not an abbreviation ("e.g", "U.S"): a part of two characters or more."""
    return any(len(part) > 1 for part in span.split("."))


# Command lines in running text: a known program with what follows it.  A program whose name is
# also an everyday word (snap, cargo, make, go...) counts only before one of the usual subcommands;
# a program alone only after a verb that runs it ("type whoami", "tapez whoami").
_PROGRAMS = (
    "adduser apt apt-get chgrp chmod chown chroot cmake conda crontab curl dmesg dnf docker dpkg egrep "
    "emacs ffmpeg flatpak fsck gcc git grep gunzip gzip htop ifconfig iwconfig javac journalctl killall "
    "kubectl lsblk lspci lsusb mkdir mkfs nmcli npm npx nslookup pgrep pip3 pipx pkill pnpm podman pytest "
    "python python3 rmdir rsync rustup scp sed sftp ssh sudo systemctl traceroute umount uname unzip "
    "useradd usermod vim wget whoami yum zsh zypper bash cd cp df ln ls mv pwd rm"
).split()
_SUBCOMMAND_ONLY = "aptitude brew cargo gh go helm make pip poetry snap tar yarn".split()  # also everyday words
_SUBCOMMANDS = (
    "add apply audit autoremove bisect blame branch build check checkout cherry-pick ci clean clone "
    "commit config create delete depends describe diff disable dist dist-upgrade distclean docs enable "
    "exec fetch fmt full-upgrade get help html images info init inspect install lint list log login "
    "logout logs ls merge mod outdated policy ps publish pull purge push rebase refresh reinstall reload "
    "remove reset restart restore revert rm rmi run search show start stash status stop switch tag test "
    "uninstall update upgrade vet version -xvf -xzf -czf -cvf -xf -tf"
).split()
_PACKAGE_VERBS = frozenset("add install purge reinstall remove search show uninstall info".split())
_AFTER_SUDO = "halt modprobe mount passwd poweroff reboot service shutdown su tee visudo".split()
_RUN_VERBS = r"(?:run|type|execute|enter|try|use|lancez|lance|tapez|tape|exécutez|exécute|entrez|essayez|utilisez)"
_ALT = lambda words: "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # noqa: E731
_END = r"(?![\w@/-]|\.\w)"
_PROGRAM = re.compile(
    rf"(?<![\w./@`'’-])(?:(?P<program>{_ALT(_PROGRAMS)})|(?P<sub>{_ALT(_SUBCOMMAND_ONLY)})(?= (?:{_ALT(_SUBCOMMANDS)}){_END})){_END}"
)
_SUBCOMMAND = re.compile(rf" (?:{_ALT(_SUBCOMMANDS)}){_END}")
_SUDO_TARGET = re.compile(rf" (?:{_ALT(_AFTER_SUDO)}){_END}")
_RUN_BEFORE = re.compile(rf"(?i:\b{_RUN_VERBS}) $")
_ARGUMENT = re.compile(
    r" (?:--?[A-Za-z0-9][\w-]*(?:=[^\s,;]+)?|(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%+-]+)*/?|[0-7]{3,4}|\d+)(?=[\s,;:.!?)]|$)"
)
_PACKAGE = re.compile(
    r" (?!(?:a|an|and|as|at|de|des|du|en|et|for|in|is|it|la|le|les|on|or|ou|pour|puis|sur|the|then|to|un|une|with)\b)[a-z0-9][a-z0-9.+_-]*[a-z0-9](?![\w@/-])"
)


def _arguments(text: str, end: int) -> int:
    """The end of the options, paths and numbers that follow ``end`` (not the sentence's punctuation)."""
    while m := _ARGUMENT.match(text, end):
        end = m.end()
    while text[end - 1] in _TRAILING:
        end -= 1
    return end


def command_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each command line in running text: ``git status``, ``sudo reboot``, ``pip
    install numpy``, ``chmod -R 777``, ``make test``, ``type whoami`` (a known program, its
    subcommand, a package after an install verb, options, paths and numbers)."""
    out: list[tuple[int, int]] = []
    pos = 0
    while m := _PROGRAM.search(text, pos):
        start, end = m.start(), m.end()
        pos = end
        while m.group(0) == "sudo" and (nxt := _PROGRAM.match(text, end + 1) or _SUDO_TARGET.match(text, end)):
            end, m = nxt.end(), nxt  # what sudo runs
            if not nxt.group(0).startswith(" "):
                continue
            break
        end = _arguments(text, end)
        if sub := _SUBCOMMAND.match(text, end):
            end = _arguments(text, sub.end())
            if sub.group(0)[1:] in _PACKAGE_VERBS and (pkg := _PACKAGE.match(text, end)):
                end = _arguments(text, pkg.end())
        if end == m.end() and end - start == len(m.group(0)) and not _RUN_BEFORE.search(text, 0, start):
            continue  # a program named alone, in prose
        out.append((start, end))
        pos = end
    return out


# Every kind above needs one of these (a backtick, "@", a slash or backslash, "_", "--", a dot
# between word characters, a capital after a small letter, a pictograph); most sentences hold none,
# and this search costs a sixth of ``SPAN``'s.
_MAYBE = re.compile(r"[`@\\/_]|--|\w\.\w|[a-z]\d*[A-Z]|[" + _PICTOGRAPH + "]")


def spans(text: str, language: str | None = None) -> list[tuple[int, int]]:
    """(start, end) of each span of ``text`` to keep, in order (a command line takes the options and
    paths inside it; person names: ``rendition.model.text.names``, ``language`` the text's)."""
    out = []
    for m in SPAN.finditer(text) if _MAYBE.search(text) else ():
        start, end = m.span()
        while end > start + 1 and text[end - 1] in _TRAILING and m.lastgroup in ("url", "path", "winpath", "option"):
            end -= 1
        if m.lastgroup == "dotted" and not _dotted_name(text[start:end]):
            continue
        out.append((start, end))
    if commands := command_spans(text):  # (a command line takes the options and paths inside it)
        out = [s for s in out if not _overlaps(s, commands)] + commands
    out += [s for s in name_spans(text, language) if not _overlaps(s, out)]  # (a name inside code is the code's)
    return sorted(out)


def _overlaps(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(a <= span[0] < b or span[0] <= a < span[1] for a, b in others)


def protect(text: str, stand_ins: tuple[str, ...], language: str | None = None) -> Marked:
    """``text`` with each span replaced by a free stand-in (``Marked.terms``: stand-in -> the span);
    spans beyond the free stand-ins stay as they are.  In English (``language`` "en") a person's
    name of a known gender takes a first name of that gender (``stand_ins.PERSONS``) while one is free."""
    found = spans(text, language)
    if not found:  # (most sentences: no stand-in to look for)
        return Marked(text)
    unused = free(stand_ins, text)
    persons = {g: free(firsts, text) for g, firsts in PERSONS.items()} if language == "en" else {}
    terms: dict[str, str] = {}
    out, last = [], 0
    for start, end in found:
        span = text[start:end]
        pool = persons.get(gender(span) or "") if persons else None
        pool = pool if pool else unused
        if not pool:
            continue
        stand_in = pool.pop(0)
        terms[stand_in] = span
        before, after = padding(text, start, end)
        out += [text[last:start], before, stand_in, after]
        last = end
    out.append(text[last:])
    return Marked("".join(out), terms) if terms else Marked(text)
