"""Names in scripts an English model cannot tag (東京, Москва, 서울): character spans found by Unicode script.

* Han/Katakana runs of 2 to 8 characters are names in any sentence (Hiragana, punctuation and spaces end a run:
  in Japanese they are particles; a longer Han run is Chinese prose, which cannot be segmented without a model).
* In a mostly Latin sentence (English text quoting a foreign name), a run of up to 4 consecutive words of one other
  script (Cyrillic, Greek, Hangul, Arabic, Hebrew, Devanagari, ...) is a name.
* In a sentence mostly in such a script, only capitalised runs of a cased script (Cyrillic, Greek, ...) that do not
  start the sentence are names; caseless scripts give nothing there rather than every word.
"""

from __future__ import annotations

import regex

_CJK_RUN = regex.compile(r"[\p{Han}\p{Katakana}\u30fc\u30fb]+")
# Words of any script but Latin, Han, Kana (and the kana length and middle-dot marks, whose script is Common):
# the negated class subtracts them from word characters.
_OTHER_WORD = regex.compile(r"[^\W\d_\p{Latin}\p{Han}\p{Katakana}\p{Hiragana}\u30fc\u30fb]+")
_FOREIGN_LETTER = regex.compile(r"[^\W\d_\p{Latin}\p{Common}\p{Inherited}]")
_LATIN_LETTER = regex.compile(r"\p{Latin}")
_LETTER = regex.compile(r"[^\W\d_]")
_SCRIPTS = ("Cyrillic", "Greek", "Hangul", "Arabic", "Hebrew", "Devanagari", "Bengali", "Thai", "Georgian",
            "Armenian", "Ethiopic", "Tamil", "Telugu", "Gujarati", "Gurmukhi", "Kannada", "Malayalam", "Sinhala",
            "Khmer", "Lao", "Myanmar", "Tibetan", "Mongolian")
_SCRIPT_OF = [(name, regex.compile(rf"\p{{{name}}}")) for name in _SCRIPTS]
MAX_CJK_CHARS = 8
MAX_RUN_WORDS = 4


def has_foreign_letters(text: str) -> bool:
    """True when ``text`` has a letter of a script other than Latin (CJK, Cyrillic, Greek, Arabic, ...)."""
    return _FOREIGN_LETTER.search(text) is not None


def script_of(word: str) -> str:
    for name, pattern in _SCRIPT_OF:
        if pattern.match(word):
            return name
    return "Other"


def mostly_latin(text: str) -> bool:
    letters = len(_LETTER.findall(text))
    return letters > 0 and 2 * len(_LATIN_LETTER.findall(text)) >= letters


def _word_runs(text: str, capitalised_only: bool) -> list[tuple[int, int, int]]:
    """Consecutive same-script words separated only by spaces/hyphens: (start, end, number of words). With
    ``capitalised_only`` a run holds only words starting with an upper-case letter."""
    runs: list[tuple[int, int, int]] = []
    previous_script = None
    for match in _OTHER_WORD.finditer(text):
        word = match.group()
        if capitalised_only and not word[:1].isupper():
            previous_script = None
            continue
        script = script_of(word)
        if runs and script == previous_script and not text[runs[-1][1]:match.start()].strip(" -'’"):
            runs[-1] = (runs[-1][0], match.end(), runs[-1][2] + 1)
        else:
            runs.append((match.start(), match.end(), 1))
        previous_script = script
    return runs


def foreign_name_spans(sentence: str) -> list[tuple[int, int]]:
    """Character spans of names in scripts the English model cannot tag, in sentence order."""
    spans = [(m.start(), m.end()) for m in _CJK_RUN.finditer(sentence) if 2 <= len(m.group()) <= MAX_CJK_CHARS]
    latin = mostly_latin(sentence)
    for start, end, n_words in _word_runs(sentence, capitalised_only=not latin):
        if script_of(sentence[start:end]) == "Other":
            continue  # a script this module does not know: no rule for what is a name in it
        if n_words <= MAX_RUN_WORDS and (latin or sentence[:start].strip()):
            spans.append((start, end))
    return sorted(spans)
