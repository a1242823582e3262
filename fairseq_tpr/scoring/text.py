"""Text handling shared by every scorer: sentence splitting, character tokens, fairseq markers.

Sentence splitting matters only for summary-level ROUGE-L (``rougeLsum`` of ``rouge-score`` and
ROUGE-L of the Perl script, which both take the union LCS over reference sentences); ROUGE-N
counts n-grams over the whole summary in both. The rules (``SENTENCE_SPLITS``):

- ``files2rouge``: exactly what ``files2rouge --eos .`` does: cut the line at every ``" . "`` (a
  period standing alone as a token, as in PTB-tokenized CNN/DM or XSum summaries); each
  sentence but the last keeps its ``" ."``. Detokenized text ("He left. She came.") is not split.
- ``punct``: cut after ``.``, ``!`` or ``?`` followed by white space, and after the Chinese
  ``。！？`` (for detokenized text; abbreviations such as "Mr." are cut too).
- ``none``: the whole line is one sentence (ROUGE-Lsum equals ROUGE-L).
"""
import re
import unicodedata

from ..choices import DEFAULT_SENTENCE_SPLIT, SENTENCE_SPLITS


FAIRSEQ_UNK = "<unk>"  # how fairseq-generate prints an unknown word in H-/D- lines (T- lines: <<unk>>)
_PUNCT_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
_SPACE = re.compile(r"\s+")
_BPE_MARKERS = (("@@ ", "subword-nmt/fastBPE '@@ '"), ("\u2581", "sentencepiece '\u2581'"))


def split_sentences(text, rule=DEFAULT_SENTENCE_SPLIT):
    """The sentences of one summary line under ``rule`` (see the module docstring); empty
    sentences are dropped, so an empty line gives ``[]``."""
    text = text.strip()
    if rule == "files2rouge":
        parts = text.split(" . ")
        sentences = [p + " ." for p in parts[:-1]] + [parts[-1]]
    elif rule == "punct":
        sentences = _PUNCT_SPLIT.split(text)
    elif rule == "none":
        sentences = [text]
    else:
        raise ValueError(f"unknown sentence split rule {rule!r}: choose one of {', '.join(SENTENCE_SPLITS)}")
    return [s.strip() for s in sentences if s.strip()]


def char_tokens(text):
    """Character mode (Chinese, LCSTS): every non-white-space character is one token, lower-cased
    (Latin letters and digits inside Chinese text count one character each, punctuation too)."""
    return [c for c in _SPACE.sub("", text.lower())]


def is_cjk(char):
    return unicodedata.name(char, "").startswith(("CJK UNIFIED", "CJK COMPATIBILITY IDEOGRAPH"))


def mostly_cjk(lines, threshold=0.3):
    """True when at least ``threshold`` of the non-space characters are CJK ideographs: word-level
    ROUGE would delete them all (both tokenizers keep only ``[a-z0-9]``), so ``--char`` is needed."""
    chars = [c for line in lines for c in line if not c.isspace()]
    return bool(chars) and sum(map(is_cjk, chars)) >= threshold * len(chars)


def remove_fairseq_unk(line):
    """``(line without "<unk>" tokens, number removed)``: a hypothesis ``<unk>`` would otherwise
    match the reference's ``<<unk>>`` (both tokenize to "unk") and earn credit for an unknown word."""
    tokens = line.split()
    kept = [t for t in tokens if t != FAIRSEQ_UNK]
    if len(kept) == len(tokens):
        return line, 0
    return " ".join(kept), len(tokens) - len(kept)


def bpe_markers(lines):
    """The name of the subword marker most lines still contain (``"@@ "`` or ``"▁"``), or None:
    a sign that ``fairseq-generate`` ran without ``--post-process``/``--bpe``."""
    lines = [line for line in lines if line.strip()]
    for marker, name in _BPE_MARKERS:
        if lines and sum(marker in line for line in lines) > len(lines) / 2:
            return name
    return None


def looks_detokenized(lines):
    """True when no line has a ``" . "`` token but several have ``". "`` inside: the
    ``files2rouge`` rule will then not split sentences."""
    lines = [line.strip() for line in lines]
    if any(" . " in line for line in lines):
        return False
    return sum(bool(re.search(r"\w\.\s+\S", line)) for line in lines) >= max(1, len(lines) // 10)
