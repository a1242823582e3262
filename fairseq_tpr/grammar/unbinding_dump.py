"""Unbinding dumps (``fairseq-tpr-unbinding --out U.npz``, written by :mod:`.unbinding`): loaded and
checked for the POS tagger (:mod:`.pos_tagger`).

A dump holds ``vectors`` float (total_tokens x d_u), ``offsets`` int (n_sentences + 1, from 0 to
total_tokens) and ``words`` strings (total_tokens). :func:`load_unbinding` checks them;
:func:`check_alignment` checks that a tag file (read by :mod:`fairseq_tpr.corpora.pos`) and a dump
hold the same sentences, word for word, and names the first one that differs. Bad input raises
:class:`~fairseq_tpr.corpora.rawio.InputError`, as the tag-file readers do.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

import numpy as np

from ..corpora.pos import TaggedSentence
from ..errors import InputError


@dataclass
class UnbindingDump:
    path: str
    vectors: np.ndarray  # total_tokens x d_u, float32
    offsets: np.ndarray  # n_sentences + 1, int64
    words: List[str]  # total_tokens

    def __len__(self):
        return len(self.offsets) - 1

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def sentence(self, i: int) -> np.ndarray:
        """``u_t`` of sentence ``i``: T_i x d_u."""
        return self.vectors[self.offsets[i]: self.offsets[i + 1]]

    def sentence_words(self, i: int) -> List[str]:
        return self.words[self.offsets[i]: self.offsets[i + 1]]


def load_unbinding(path) -> UnbindingDump:
    """Load and check a ``fairseq-tpr-unbinding`` dump (``vectors``, ``offsets``, ``words``)."""
    path = str(path)
    if not Path(path).is_file():
        raise InputError(f"{path}: no such unbinding file (write it with fairseq-tpr-unbinding --out)")
    try:
        npz = np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001  (not a zip / not an npz)
        raise InputError(f"{path}: not a readable .npz file ({e})") from e
    with npz:
        missing = [k for k in ("vectors", "offsets", "words") if k not in npz.files]
        if missing:
            raise InputError(
                f"{path}: missing array(s) {missing}; a fairseq-tpr-unbinding dump holds 'vectors', "
                f"'offsets' and 'words' (found {npz.files})"
            )
        try:
            words_arr = npz["words"]
        except ValueError as e:
            raise InputError(
                f"{path}: 'words' is an object array, which is not loaded (it would need pickle); "
                f"store the tokens as a numpy string array (np.array(list_of_str))"
            ) from e
        vectors = npz["vectors"]
        offsets = npz["offsets"]
    if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.floating):
        raise InputError(f"{path}: 'vectors' must be a float matrix (total_tokens x d_u), got {vectors.dtype} {vectors.shape}")
    if offsets.ndim != 1 or len(offsets) < 2 or not np.issubdtype(offsets.dtype, np.integer):
        raise InputError(f"{path}: 'offsets' must be an integer vector of n_sentences + 1 entries, got {offsets.dtype} {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != len(vectors) or np.any(np.diff(offsets) < 0):
        raise InputError(
            f"{path}: 'offsets' must rise from 0 to the number of vectors ({len(vectors)}); "
            f"got first {offsets[0]}, last {offsets[-1]}, decreasing: {bool(np.any(np.diff(offsets) < 0))}"
        )
    if words_arr.ndim != 1 or len(words_arr) != len(vectors):
        raise InputError(f"{path}: 'words' has shape {words_arr.shape}, expected ({len(vectors)},): one word per vector")
    if words_arr.dtype.kind == "S":
        words = [w.decode("utf-8") for w in words_arr.tolist()]
    elif words_arr.dtype.kind == "U":
        words = [str(w) for w in words_arr.tolist()]
    else:
        raise InputError(f"{path}: 'words' must be strings, got dtype {words_arr.dtype}")
    if not np.all(np.isfinite(vectors)):
        raise InputError(f"{path}: 'vectors' holds NaN or inf values")
    return UnbindingDump(path, vectors.astype(np.float32, copy=False), offsets.astype(np.int64), words)


def check_alignment(sentences: Sequence[TaggedSentence], dump: UnbindingDump, tag_path) -> None:
    """Raise :class:`InputError` unless ``dump`` has the same sentences and words as the tag file."""
    if len(sentences) != len(dump):
        raise InputError(
            f"{tag_path} has {len(sentences)} sentences but {dump.path} has {len(dump)}: dump the "
            f"unbinding vectors of exactly this file's sentences (python -m fairseq_tpr.corpora.pos "
            f"{tag_path} SENTENCES.txt, then fairseq-tpr-unbinding --input SENTENCES.txt)"
        )
    for i, sent in enumerate(sentences):
        u_words = dump.sentence_words(i)
        if u_words != sent.words:
            n_tag, n_u = len(sent.words), len(u_words)
            first = next((k for k in range(min(n_tag, n_u)) if sent.words[k] != u_words[k]), min(n_tag, n_u))
            detail = (f"{n_tag} tokens vs {n_u}" if n_tag != n_u else "same length")
            raise InputError(
                f"sentence {i + 1} ({sent.where}) differs from sentence {i + 1} of {dump.path} "
                f"({detail}; first difference at token {first + 1}: "
                f"{_at(sent.words, first)!r} vs {_at(u_words, first)!r}).\n"
                f"  tag file: {' '.join(sent.words)[:200]}\n  dump:     {' '.join(u_words)[:200]}"
            )


def _at(seq, k):
    return seq[k] if k < len(seq) else "<end of sentence>"
