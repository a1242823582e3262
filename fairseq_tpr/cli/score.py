"""``fairseq-tpr-score``: ROUGE (rouge-score and the official ROUGE-1.5.5 Perl script), METEOR 1.5
and sacreBLEU for hypotheses against references, as a Markdown table and JSON.

Plain files, one segment per line::

    fairseq-tpr-score --hyp test.hypo --ref test.target [--ref test.target2] --json scores.json

or the output of ``fairseq-generate`` (the detokenized ``D-`` hypotheses, ordered by sample id,
against the log's ``T-`` lines, or against ``--ref`` with line i = sample id i)::

    fairseq-tpr-score --generate-log gen.out --expect 11334 [--ref test.target]

``--metrics rouge,rouge-perl,meteor,bleu`` chooses scorers (default: every one that can run
here; a scorer whose system package is missing says what to install and the others still run).
``--char`` scores characters (Chinese, LCSTS). Every setting is in ``docs/scoring.md``.
Exit status: 0; 2 for bad input; 1 when a scorer named in ``--metrics`` could not run or failed.
"""
import json
import logging
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.choices import DEFAULT_SENTENCE_SPLIT, SCORER_KEYS, SENTENCE_SPLITS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

PROG = "fairseq-tpr-score"
# the parser's choices (fairseq_tpr/choices.py: the scorers' modules import torch and fairseq)
SCORERS = SCORER_KEYS


def build_parser():
    parser = doc_parser(__doc__, prog=PROG)
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--hyp", metavar="FILE", help="hypotheses, one per line")
    src.add_argument("--generate-log", metavar="LOG",
                     help="fairseq-generate output: D- (else H-) hypotheses by sample id, T- references")
    parser.add_argument("--ref", metavar="FILE", action="append", default=[],
                        help="references, one per line (repeat for several reference sets: BLEU and METEOR "
                             "use all, ROUGE the first)")
    parser.add_argument("--expect", type=int, metavar="N",
                        help="number of test segments: fail when the generate log holds a different number of hypotheses")
    parser.add_argument("--metrics", default=None, metavar="LIST",
                        help=f"comma-separated subset of {','.join(SCORERS)} (default: every available one; "
                             "with --char, METEOR only when named)")
    parser.add_argument("--char", action="store_true",
                        help="character mode (Chinese, LCSTS): every non-space character is a token")
    parser.add_argument("--sentence-split", choices=SENTENCE_SPLITS, default=DEFAULT_SENTENCE_SPLIT,
                        help="how a line is cut into sentences for summary-level ROUGE-L: files2rouge (at ' . ', "
                             "the default), punct (after . ! ? and 。！？; for detokenized text), none")
    parser.add_argument("--no-stemmer", action="store_true",
                        help="no Porter stemming in either ROUGE (on by default, files2rouge's -m)")
    parser.add_argument("--bleu-tokenize", default=None, metavar="TOK",
                        help="sacreBLEU tokenizer (default 13a; char with --char)")
    parser.add_argument("--json", metavar="OUT", help="also write every score, P/R and setting to this JSON file")
    return parser


def _choose_metrics(arg, char, parser):
    if arg is None:
        keys = [k for k in SCORERS if not (char and k == "meteor")]
        return keys, False
    keys = [k.strip() for k in arg.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SCORERS]
    if unknown or not keys:
        parser.error(f"--metrics: unknown metric(s) {', '.join(unknown) or '(none given)'}; choose from {','.join(SCORERS)}")
    return list(dict.fromkeys(keys)), True


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.getLogger("absl").setLevel(logging.WARNING)  # rouge-score logs its tokenizer choice at INFO
    keys, explicit = _choose_metrics(args.metrics, args.char, parser)
    if args.expect is not None and args.expect < 1:
        parser.error("--expect must be a positive number of segments")
    if args.generate_log is None and args.expect is not None:
        parser.error("--expect applies to --generate-log (plain files are checked line by line)")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    from fairseq_tpr.scoring import build_scorer, read_generate_log, read_plain
    from fairseq_tpr.scoring.report import markdown, run_scorers, text_notes

    # an InputError (a missing, empty or undecodable file, mismatched counts) reaches the console entry of
    # fairseq_tpr.errors: one 'error:' line, exit status 2
    if args.generate_log:
        data = read_generate_log(args.generate_log, args.ref, args.expect)
    else:
        data = read_plain(args.hyp, args.ref)

    notes, warnings = text_notes(data, keys, char=args.char, sentence_split=args.sentence_split,
                                 metrics_named=args.metrics is not None)
    for warning in warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)

    def build(key):
        return build_scorer(key, char=args.char, stemmer=not args.no_stemmer, sentence_split=args.sentence_split,
                            bleu_tokenize=args.bleu_tokenize)

    def skipped(key, what, message):
        print(f"{PROG}: {key} {what}: {message}", file=sys.stderr)

    results, unavailable, failed = run_scorers(data, keys, build, on_skip=skipped)

    report = {
        "segments": len(data), "hypotheses": data.hyp_source, "references": data.ref_sources,
        "char": args.char, "sentence_split": args.sentence_split, "stemmer": not args.no_stemmer,
        "scale": "0-100", "scorers": [r.to_json() for r in results],
        "unavailable": unavailable, "failed": failed, "notes": notes + warnings,
    }
    sys.stdout.write(markdown(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if failed or (explicit and unavailable):
        return 1
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
