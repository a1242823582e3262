"""Read hypotheses and references from plain line files, and the checks shared with the reader of
``fairseq-generate`` logs (:mod:`.generate_log`).

Every problem is an :class:`~fairseq_tpr.errors.InputError` whose message names the file, the
counts or the line, and what to do, raised before any scorer runs.
"""
from dataclasses import dataclass, field
from pathlib import Path

from ..data import textio
from ..errors import InputError
from .text import remove_fairseq_unk


@dataclass
class ScoringInput:
    """``hyps[i]`` is scored against ``refs[k][i]`` for every reference set ``k``."""

    hyps: list
    refs: list  # one list of n lines per reference file / source
    hyp_source: str
    ref_sources: list
    notes: list = field(default_factory=list)

    def __len__(self):
        return len(self.hyps)


def read_lines(path, what):
    """The lines of a UTF-8 text file, split on ``\\n`` only (``\\r`` before it and a leading BOM
    are dropped; other Unicode line breaks stay inside their line, as fairseq reads them). Bytes
    that are not UTF-8 are an :class:`InputError` naming the file, the line and the byte
    (:func:`fairseq_tpr.data.textio.read_lines`)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file {path} does not exist")
    if not path.is_file():
        raise InputError(f"{what} path {path} is not a file")
    return textio.read_lines(path, what)


def drop_unk(hyps, notes, what):
    removed, out = 0, []
    for line in hyps:
        line, n = remove_fairseq_unk(line)
        out.append(line)
        removed += n
    if removed:
        notes.append(f"{removed} '<unk>' token(s) removed from the {what} (an unknown word earns no credit)")
    return out


def check_counts(hyps, hyp_source, refs, ref_sources):
    if not hyps:
        raise InputError(f"the hypothesis file {hyp_source} is empty (0 lines): nothing to score")
    for lines, source in zip(refs, ref_sources):
        if len(lines) != len(hyps):
            raise InputError(
                f"line counts differ: {len(hyps)} hypotheses in {hyp_source} but {len(lines)} references "
                f"in {source}; every hypothesis line must have its reference on the same line number")


def empty_line_notes(hyps, refs, ref_sources, notes):
    empty = [i + 1 for i, h in enumerate(hyps) if not h.strip()]
    if empty:
        notes.append(f"{len(empty)} empty hypothesis line(s) (scored 0), first at line {empty[0]}")
    for lines, source in zip(refs, ref_sources):
        empty = [i + 1 for i, r in enumerate(lines) if not r.strip()]
        if empty:
            notes.append(f"{len(empty)} empty reference line(s) in {source} (scored 0), first at line {empty[0]}")


def read_plain(hyp_path, ref_paths):
    """Hypotheses and one or more reference files, one segment per line."""
    if not ref_paths:
        raise InputError("no references: pass --ref FILE (or --generate-log LOG with T- lines)")
    hyps = read_lines(hyp_path, "hypothesis")
    refs = [read_lines(p, "reference") for p in ref_paths]
    check_counts(hyps, str(hyp_path), refs, [str(p) for p in ref_paths])
    notes = []
    hyps = drop_unk(hyps, notes, "hypotheses")
    empty_line_notes(hyps, refs, [str(p) for p in ref_paths], notes)
    return ScoringInput(hyps, refs, str(hyp_path), [str(p) for p in ref_paths], notes)
