"""The report of ``fairseq-tpr-score``: every chosen scorer run on the same input
(:func:`run_scorers`), notes and warnings about the text (:func:`text_notes`), and the report as
Markdown (:func:`markdown`; the same dictionary is the ``--json`` output).
"""
from ..errors import DependencyError
from .text import DEFAULT_SENTENCE_SPLIT, bpe_markers, looks_detokenized, mostly_cjk

L_LEVEL_NAMES = {"sentence": "sentence-level", "summary": "summary-level"}


def _metric_label(metric, values):
    level = values.get("level")
    return f"{metric} ({L_LEVEL_NAMES[level]})" if level else metric


def _cell(values):
    head = values["f"] if "f" in values else values["score"]
    text = f"{head:.2f}"
    if "f_ci" in values:
        text += f" (95% CI {values['f_ci'][0]:.2f}-{values['f_ci'][1]:.2f})"
    return text


def markdown(report):
    """The report as Markdown: the score table, then settings, skipped scorers and notes."""
    out = [f"Scores of {report['segments']} segments: hypotheses {report['hypotheses']}; "
           f"references {', '.join(report['references'])}.", "",
           "| scorer | metric | F1 / score (0-100) |", "|---|---|---|"]
    for result in report["scorers"]:
        for metric, values in result["metrics"].items():
            out.append(f"| {result['label']} | {_metric_label(metric, values)} | {_cell(values)} |")
    out.append("")
    out.append("Settings:")
    for result in report["scorers"]:
        settings = "; ".join(f"{k}: {v}" for k, v in result["settings"].items())
        out.append(f"- {result['label']}: {settings}")
    for title, entries in (("Not run", report["unavailable"]), ("Failed", report["failed"])):
        if entries:
            out.append(f"\n{title}:")
            out.extend(f"- {key}: {message}" for key, message in entries.items())
    if report["notes"]:
        out.append("\nNotes:")
        out.extend(f"- {note}" for note in report["notes"])
    return "\n".join(out) + "\n"


def text_notes(data, keys, char=False, sentence_split=DEFAULT_SENTENCE_SPLIT, metrics_named=False):
    """``(notes, warnings)`` about the text of ``data`` for the scorers ``keys``: Chinese text without
    ``char``, BPE markers left in the hypotheses, a files2rouge sentence split that splits nothing,
    several reference sets, METEOR left out in character mode (unless ``metrics_named``)."""
    notes, warnings = list(data.notes), []
    everything = data.hyps + data.refs[0]
    if not char and mostly_cjk(everything):
        warnings.append("the text is mostly Chinese/Japanese characters, which word-level ROUGE deletes "
                        "(only [a-z0-9] survive its tokenizer): pass --char")
    marker = bpe_markers(data.hyps)
    if marker:
        warnings.append(f"the hypotheses still hold {marker} markers: generate with --post-process/--bpe "
                        "(or remove them) so that words are scored")
    if (sentence_split == "files2rouge" and {"rouge", "rouge-perl"} & set(keys)
            and looks_detokenized(data.hyps + data.refs[0])):
        notes.append("no line has a ' . ' token but many have sentence-final periods inside: the files2rouge "
                     "rule splits nothing, so summary-level ROUGE-L equals sentence-level ROUGE-L; "
                     "PTB-tokenize first (as fairseq's BART recipe does) or pass --sentence-split punct")
    if len(data.refs) > 1 and {"rouge", "rouge-perl"} & set(keys):
        notes.append(f"{len(data.refs)} reference sets: ROUGE uses the first ({data.ref_sources[0]}), "
                     "BLEU and METEOR use all")
    if char and "meteor" not in keys and not metrics_named:
        notes.append("METEOR is English-only and is not run in --char mode unless named in --metrics")
    return notes, warnings


def run_scorers(data, keys, build, on_skip=None):
    """Score ``data`` with the scorer ``build(key)`` of every key: ``(results, unavailable, failed)``;
    a scorer that cannot run here (:class:`DependencyError`) or fails (``RuntimeError``) is
    recorded with its message (and passed to ``on_skip(key, "not run" | "failed", message)``)
    while the others still run."""
    results, unavailable, failed = [], {}, {}
    for key in keys:
        scorer = build(key)
        try:
            scorer.check()
            results.append(scorer.score(data.hyps, data.refs))
        except DependencyError as err:
            unavailable[key] = str(err)
            if on_skip:
                on_skip(key, "not run", str(err))
        except RuntimeError as err:
            failed[key] = str(err)
            if on_skip:
                on_skip(key, "failed", str(err))
    return results, unavailable, failed
