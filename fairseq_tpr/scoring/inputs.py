"""Read hypotheses and references: plain line files, or the output of ``fairseq-generate``.

Every problem is a :class:`ScoringInputError` whose message names the file, the counts or the
line, and what to do, raised before any scorer runs.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path

from .text import remove_fairseq_unk

_GENERATE_LINE = re.compile(r"^([HDT])-(\d+)\t(.*)$")


class ScoringInputError(ValueError):
    """Bad input for scoring; the CLI prints ``error: <message>`` without a traceback."""


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
    """The lines of a UTF-8 text file, split on ``\\n`` only (``\\r`` before it is dropped; other
    Unicode line breaks stay inside their line, as fairseq reads them)."""
    path = Path(path)
    if not path.exists():
        raise ScoringInputError(f"{what} file {path} does not exist")
    if not path.is_file():
        raise ScoringInputError(f"{what} path {path} is not a file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_no = data[: err.start].count(b"\n") + 1
        raise ScoringInputError(
            f"{what} file {path} is not valid UTF-8: byte {data[err.start]:#04x} on line {line_no} "
            f"({err.reason}); convert it, e.g. iconv -f latin1 -t utf-8") from None
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _drop_unk(hyps, notes, what):
    removed, out = 0, []
    for line in hyps:
        line, n = remove_fairseq_unk(line)
        out.append(line)
        removed += n
    if removed:
        notes.append(f"{removed} '<unk>' token(s) removed from the {what} (an unknown word earns no credit)")
    return out


def _check_counts(hyps, hyp_source, refs, ref_sources):
    if not hyps:
        raise ScoringInputError(f"the hypothesis file {hyp_source} is empty (0 lines): nothing to score")
    for lines, source in zip(refs, ref_sources):
        if len(lines) != len(hyps):
            raise ScoringInputError(
                f"line counts differ: {len(hyps)} hypotheses in {hyp_source} but {len(lines)} references "
                f"in {source}; every hypothesis line must have its reference on the same line number")


def _empty_line_notes(hyps, refs, ref_sources, notes):
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
        raise ScoringInputError("no references: pass --ref FILE (or --generate-log LOG with T- lines)")
    hyps = read_lines(hyp_path, "hypothesis")
    refs = [read_lines(p, "reference") for p in ref_paths]
    _check_counts(hyps, str(hyp_path), refs, [str(p) for p in ref_paths])
    notes = []
    hyps = _drop_unk(hyps, notes, "hypotheses")
    _empty_line_notes(hyps, refs, [str(p) for p in ref_paths], notes)
    return ScoringInput(hyps, refs, str(hyp_path), [str(p) for p in ref_paths], notes)


@dataclass
class GenerateLog:
    """The best hypothesis and the target of every sample id in a ``fairseq-generate`` log."""

    hyps: dict  # id -> detokenized (D-) hypothesis, or the H- one when the log has no D- lines
    targets: dict  # id -> T- line
    hyp_kind: str  # "D" or "H"


def parse_generate_log(path):
    """Parse ``H-<id>\\t<score>\\t<text>``, ``D-<id>\\t<score>\\t<text>`` and ``T-<id>\\t<text>``
    lines; the first H-/D- line of an id is the best hypothesis (``--nbest`` > 1 prints more).
    Other lines (S-, P-, A-, logging, the score line) are ignored."""
    lines = read_lines(path, "fairseq-generate log")
    found = {"H": {}, "D": {}, "T": {}}
    for line_no, line in enumerate(lines, 1):
        match = _GENERATE_LINE.match(line)
        if not match:
            continue
        kind, sample_id, rest = match.group(1), int(match.group(2)), match.group(3)
        if kind in "HD":
            if "\t" not in rest:
                raise ScoringInputError(
                    f"{path} line {line_no}: a {kind}- line should read '{kind}-<id>\\t<score>\\t<text>', got {line!r}")
            rest = rest.split("\t", 1)[1]
            found[kind].setdefault(sample_id, rest)
        else:
            if sample_id in found["T"] and found["T"][sample_id] != rest:
                raise ScoringInputError(
                    f"{path} line {line_no}: sample id {sample_id} has two different T- lines: the file "
                    "holds more than one fairseq-generate run (or shard); score each run on its own")
            found["T"][sample_id] = rest
    kind = "D" if found["D"] else "H"
    if not found[kind]:
        raise ScoringInputError(
            f"{path} has no H-/D- hypothesis lines: is it the stdout of fairseq-generate (or the "
            "generate-<subset>.txt written with --results-path), and was it run without --quiet?")
    return GenerateLog(found[kind], found["T"], kind)


def read_generate_log(path, ref_paths=(), expect=None):
    """Hypotheses from a ``fairseq-generate`` log, ordered by sample id, with the log's T- lines
    as references, or with ``ref_paths`` (line i is sample id i) when given. ``expect`` is the
    number of test segments: fewer hypotheses are an error (fairseq's
    ``--required-batch-size-multiple`` trap drops the last batch)."""
    log = parse_generate_log(path)
    ids = sorted(log.hyps)
    notes = [f"hypotheses: the {'detokenized D-' if log.hyp_kind == 'D' else 'H-'} lines of {path}"]
    if expect is not None and len(ids) != expect:
        missing = sorted(set(range(expect)) - set(ids))
        where = f"; missing ids {', '.join(map(str, missing[:10]))}{' ...' if len(missing) > 10 else ''}" if missing else ""
        raise ScoringInputError(
            f"{path} holds {len(ids)} hypotheses but --expect {expect} segments were given{where}. "
            "If fairseq-generate dropped sentences, rerun it with --required-batch-size-multiple 1 "
            "(--skip-invalid-size-inputs-valid-test also drops inputs longer than --max-source-positions)")
    hyps = [log.hyps[i] for i in ids]
    if ref_paths:
        if ids != list(range(len(ids))):
            missing = sorted(set(range(max(ids) + 1)) - set(ids))
            raise ScoringInputError(
                f"{path}: the sample ids are not 0..{len(ids) - 1} (missing {', '.join(map(str, missing[:10]))}), "
                "so the hypotheses cannot be paired with the lines of --ref; rerun fairseq-generate "
                "with --required-batch-size-multiple 1")
        refs = [read_lines(p, "reference") for p in ref_paths]
        ref_sources = [str(p) for p in ref_paths]
        _check_counts(hyps, f"{path} (hypotheses by sample id)", refs, ref_sources)
    else:
        if not log.targets:
            raise ScoringInputError(
                f"{path} has no T- (target) lines: fairseq-generate prints them only when the test "
                "split has a target side (binarize it with --testpref for both languages), or pass "
                "the raw references with --ref FILE")
        lacking = [i for i in ids if i not in log.targets]
        if lacking:
            raise ScoringInputError(
                f"{path}: sample ids {', '.join(map(str, lacking[:10]))} have a hypothesis but no T- line")
        refs = [[log.targets[i] for i in ids]]
        ref_sources = [f"{path} (T- lines)"]
        notes.append("references: the T- lines of the log (tokenized as fairseq-generate prints them; "
                     "unknown words read '<<unk>>'); pass --ref FILE to score against the raw references")
    hyps = _drop_unk(hyps, notes, "hypotheses")
    _empty_line_notes(hyps, refs, ref_sources, notes)
    return ScoringInput(hyps, refs, f"{path} ({log.hyp_kind}- lines)", ref_sources, notes)
