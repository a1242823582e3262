"""The one reader of ``fairseq-generate`` logs.

``fairseq-generate`` prints, per sample id ``i`` (in batch order, not by id)::

    S-i<TAB>source tokens
    T-i<TAB>target tokens                      (only when the split has a target side)
    H-i<TAB>score<TAB>hypothesis tokens        (--nbest lines, the best first)
    D-i<TAB>score<TAB>detokenized hypothesis   (after --post-process / --bpe / --tokenizer)
    P-i<TAB>positional scores                  (and A- alignments, logging, the BLEU line)

:func:`parse_generate_log` reads every S-/T-/H-/D- line and keeps, per id, the source, the
target, the best (first) H- hypothesis as printed (tokenized), its score and the best D-
hypothesis. Every other line is ignored. It is strict, and names the file and line number:

* an ``H-``/``D-`` line must have a score column (``H-i<TAB>score<TAB>text``): a line without
  one is not fairseq-generate's output (read naively, its text would become the score and the
  hypothesis would be empty);
* one id may not have two different ``S-`` or ``T-`` lines: such a file holds two
  concatenated runs (or shards) whose samples share ids, and pairing its hypotheses with
  references would mix them.

Its callers: :func:`read_generate_log` (``fairseq-tpr-score``: D- over H- hypotheses against T-
lines or ``--ref`` files), :mod:`.captions` (``fairseq-tpr-caption-score``) and
:mod:`.math_eval` (``fairseq-tpr-math-eval``: tokenized H- against T-).
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional

from ..errors import InputError
from .inputs import ScoringInput, check_counts, drop_unk, empty_line_notes, read_lines

_LINE = re.compile(r"^([STHD])-(\d+)\t(.*)$")


@dataclass
class GenerateLog:
    """What a ``fairseq-generate`` log says about each sample id."""

    path: str
    sources: Dict[int, str] = field(default_factory=dict)  # id -> S- line
    targets: Dict[int, str] = field(default_factory=dict)  # id -> T- line
    tokenized: Dict[int, str] = field(default_factory=dict)  # id -> best H- hypothesis, as printed
    scores: Dict[int, float] = field(default_factory=dict)  # id -> score of that H- hypothesis
    detokenized: Dict[int, str] = field(default_factory=dict)  # id -> best D- hypothesis

    @property
    def hyp_kind(self) -> str:
        """``"D"`` when the log has detokenized lines (they win), else ``"H"``."""
        return "D" if self.detokenized else "H"

    @property
    def hypotheses(self) -> Dict[int, str]:
        """id -> best hypothesis: the detokenized D- line, or the H- line when the log has no D- lines."""
        return self.detokenized if self.detokenized else self.tokenized

    def require_hypotheses(self):
        """Raise an :class:`InputError` when the log holds no H-/D- line at all."""
        if not self.tokenized and not self.detokenized:
            raise InputError(
                f"{self.path} has no H-/D- hypothesis lines: is it the stdout of fairseq-generate (or the "
                "generate-<subset>.txt written with --results-path), and was it run without --quiet?")


def parse_generate_lines(lines: Iterable[str], path: str = "<fairseq-generate output>") -> GenerateLog:
    """:class:`GenerateLog` of ``lines`` (``path`` names them in errors); see the module docstring."""
    log = GenerateLog(str(path))
    first_seen: Dict[tuple, int] = {}  # (kind, id) -> line number of its first S-/T- line
    for line_no, line in enumerate(lines, 1):
        match = _LINE.match(line.rstrip("\r\n"))
        if not match:
            continue
        kind, sample_id, rest = match.group(1), int(match.group(2)), match.group(3)
        if kind in "HD":
            score, text = _split_score(rest, kind, path, line_no, line)
            if kind == "H":
                if sample_id not in log.tokenized:
                    log.tokenized[sample_id], log.scores[sample_id] = text, score
            else:
                log.detokenized.setdefault(sample_id, text)
            continue
        seen = log.sources if kind == "S" else log.targets
        if sample_id in seen and seen[sample_id] != rest:
            raise InputError(
                f"{path} line {line_no}: sample id {sample_id} has two different {kind}- lines (the first on "
                f"line {first_seen[kind, sample_id]}): the file holds more than one fairseq-generate run (or "
                "shard) with the same sample ids; score each run on its own")
        if sample_id not in seen:
            seen[sample_id] = rest
            first_seen[kind, sample_id] = line_no
    return log


def _split_score(rest: str, kind: str, path, line_no: int, line: str):
    score, tab, text = rest.partition("\t")
    try:
        value = float(score)
    except ValueError:
        value = None
    if not tab or value is None:
        article = "an" if kind == "H" else "a"
        raise InputError(
            f"{path} line {line_no}: {article} {kind}- line must read '{kind}-<id>\\t<score>\\t<text>' as "
            f"fairseq-generate prints it, got {line!r} (no score column); pass the unmodified fairseq-generate output")
    return value, text


def parse_generate_log(path) -> GenerateLog:
    """:class:`GenerateLog` of the ``fairseq-generate`` log (stdout, or ``generate-<subset>.txt``) at ``path``."""
    return parse_generate_lines(read_lines(path, "fairseq-generate log"), str(path))


def read_generate_log(path, ref_paths=(), expect: Optional[int] = None) -> ScoringInput:
    """Hypotheses from a ``fairseq-generate`` log, ordered by sample id, with the log's T- lines
    as references, or with ``ref_paths`` (line i is sample id i) when given. ``expect`` is the
    number of test segments: fewer hypotheses are an error (fairseq without the plugin drops the
    last batch at its default ``--required-batch-size-multiple``; ``fairseq_fixes/batches.py``)."""
    log = parse_generate_log(path)
    log.require_hypotheses()
    hyps_by_id = log.hypotheses
    ids = sorted(hyps_by_id)
    notes = [f"hypotheses: the {'detokenized D-' if log.hyp_kind == 'D' else 'H-'} lines of {path}"]
    if expect is not None and len(ids) != expect:
        missing = sorted(set(range(expect)) - set(ids))
        where = f"; missing ids {', '.join(map(str, missing[:10]))}{' ...' if len(missing) > 10 else ''}" if missing else ""
        raise InputError(
            f"{path} holds {len(ids)} hypotheses but --expect {expect} segments were given{where}. "
            "If fairseq-generate dropped sentences, rerun it with --user-dir fairseq_tpr or --required-batch-size-multiple 1 "
            "(fairseq alone drops the last batch at its default multiple of 8) and without "
            "--skip-invalid-size-inputs-valid-test (which drops inputs longer than --max-source-positions)")
    hyps = [hyps_by_id[i] for i in ids]
    if ref_paths:
        if ids != list(range(len(ids))):
            missing = sorted(set(range(max(ids) + 1)) - set(ids))
            raise InputError(
                f"{path}: the sample ids are not 0..{len(ids) - 1} (missing {', '.join(map(str, missing[:10]))}), "
                "so the hypotheses cannot be paired with the lines of --ref; rerun fairseq-generate "
                "with --required-batch-size-multiple 1")
        refs = [read_lines(p, "reference") for p in ref_paths]
        ref_sources = [str(p) for p in ref_paths]
        check_counts(hyps, f"{path} (hypotheses by sample id)", refs, ref_sources)
    else:
        if not log.targets:
            raise InputError(
                f"{path} has no T- (target) lines: fairseq-generate prints them only when the test "
                "split has a target side (binarize it with --testpref for both languages), or pass "
                "the raw references with --ref FILE")
        lacking = [i for i in ids if i not in log.targets]
        if lacking:
            raise InputError(
                f"{path}: sample ids {', '.join(map(str, lacking[:10]))} have a hypothesis but no T- line")
        refs = [[log.targets[i] for i in ids]]
        ref_sources = [f"{path} (T- lines)"]
        notes.append("references: the T- lines of the log (tokenized as fairseq-generate prints them; "
                     "unknown words read '<<unk>>'); pass --ref FILE to score against the raw references")
    hyps = drop_unk(hyps, notes, "hypotheses")
    empty_line_notes(hyps, refs, ref_sources, notes)
    return ScoringInput(hyps, refs, f"{path} ({log.hyp_kind}- lines)", ref_sources, notes)
