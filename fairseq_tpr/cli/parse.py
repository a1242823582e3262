"""ATPL's constituency parser (Huang et al., Sec. 6, Eq. 10-14) on unbinding vectors u_t: train, decode, score.

    # the autoencoder's input for a treebank split (the trees' words, after normalisation)
    fairseq-tpr-parse sentences --trees train.mrg --out train.txt
    #   ... then fairseq-tpr-unbinding --path AE.pt --input train.txt --out train.npz (docs/atpl.md)

    # train on u_t (the paper) or on word embeddings trained from scratch (the baseline)
    fairseq-tpr-parse train --train-trees train.mrg --train-u train.npz \\
        --valid-trees valid.mrg --valid-u valid.npz --test-trees test.mrg --test-u test.npz \\
        --save-dir runs/parse/u --results-json runs/parse/u/results.json --out-dir runs/parse/u
    fairseq-tpr-parse train --features words --train-trees ... --valid-trees ... --test-trees ... --save-dir ...

    # parse with a saved parser (words and POS tags from a tree file or a word/TAG file)
    fairseq-tpr-parse decode --load runs/parse/u/checkpoint_best.pt --trees test.mrg --u test.npz --out test.pred.mrg

    # EVALB (COLLINS.prm) of parsed trees against gold trees
    fairseq-tpr-parse score test.mrg test.pred.mrg [--per-sentence] [--json scores.json]

    # F1 mean ± sd over seeds, from the results.json of several runs
    fairseq-tpr-parse table u_t=runs/u-s1/results.json,runs/u-s2/results.json words=...

Trees are Penn Treebank brackets, one per line or in .mrg layout. Training trees are normalised
(function tags cut, -NONE- removed, one-label unary chains collapsed) and encoded per layer;
the model reads u_t (or a learned word embedding, --features words) and the POS tags of the
trees. Training stops early when the validation F1 has not improved for --patience epochs; the
best epoch is kept (checkpoint_best.pt, written atomically). Reported per split: EVALB
precision, recall, F1 and complete match, and the F1 when the gold segmentation of every layer
is given (the paper's Table 3, third column). docs/atpl.md ("Parsing") lists the choices.
"""
import sys
from pathlib import Path

from fairseq_tpr.cli import (add_grammar_size_args, add_grammar_split_args, add_grammar_training_args,
                             check_grammar_args, check_unbinding_args)
from fairseq_tpr.choices import LAYER_INPUTS, PARSER_FEATURES, SEGMENT_TARGETS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser



def _model_args(p):
    m = p.add_argument_group("model")
    m.add_argument("--features", default="unbinding", choices=PARSER_FEATURES,
                   help="BLSTM input: the unbinding vectors u_t (Eq. 11, the paper) or a word embedding trained "
                        "from scratch (the baseline)")
    m.add_argument("--segment-target", default="parity", choices=SEGMENT_TARGETS,
                   help="what a segment decision says: the paper's alternating bit z_{k,t}, or 'a new segment starts'")
    m.add_argument("--layer-input", default="u", choices=LAYER_INPUTS,
                   help="BLSTM input of layer k: u_t only (Eq. 13 as written) or u_t plus the code of the layer below")
    add_grammar_size_args(m, word_dim=0, word_dim_help="word embedding size for --features words (0: the size of "
                                                       "u_t in the dumps given, else 32: same sizes as the u_t parser)")


def build_parser():
    p = doc_parser(__doc__, prog="fairseq-tpr-parse")
    sub = p.add_subparsers(dest="command", required=True, metavar="{train,decode,score,sentences,table}")

    t = sub.add_parser("train", help="train a parser, then decode and score its splits")
    add_grammar_split_args(t, "trees", "trees (.mrg or one bracketed tree per line)")
    _model_args(t)
    add_grammar_training_args(t.add_argument_group("training"), unit="trees", score="F1")
    _run_args(t)
    o = t.add_argument_group("output")
    o.add_argument("--save-dir", help="write checkpoint_best.pt here, and checkpoint_last.pt after every epoch: "
                   "a run that finds checkpoint_last.pt there continues from it (same flags and data)")
    o.add_argument("--results-json", help="write the per-split scores here")
    o.add_argument("--out-dir", help="write the decoded trees of each split here ({split}.pred.mrg)")

    d = sub.add_parser("decode", help="parse with a saved parser")
    d.add_argument("--load", required=True, help="checkpoint_best.pt of fairseq-tpr-parse train")
    src = d.add_mutually_exclusive_group(required=True)
    src.add_argument("--trees", help="trees whose words and POS tags are parsed (and scored against, with --score)")
    src.add_argument("--tags", help="a word/TAG file (one sentence per line): words and POS tags to parse")
    d.add_argument("--u", help="unbinding vectors of these sentences (parsers trained on u_t)")
    d.add_argument("--out", required=True, help="decoded trees, one per line")
    d.add_argument("--gold-segments", action="store_true",
                   help="take every layer's segmentation from --trees; predict only the categories")
    d.add_argument("--score", action="store_true", help="print EVALB against --trees")
    d.add_argument("--batch-size", type=int, default=32)
    _run_args(d)

    s = sub.add_parser("score", help="EVALB (COLLINS.prm) of test trees against gold trees")
    s.add_argument("gold")
    s.add_argument("test")
    s.add_argument("--per-sentence", action="store_true", help="EVALB's per-sentence table too")
    s.add_argument("--unlabeled", action="store_true", help="spans only (LABELED 0)")
    s.add_argument("--cutoff-len", type=int, default=40, help="the second summary's length limit")
    s.add_argument("--json", help="write the summaries here")

    w = sub.add_parser("sentences", help="the normalised trees' sentences, one per line (the autoencoder's input)")
    w.add_argument("--trees", required=True)
    w.add_argument("--out", required=True)

    tb = sub.add_parser("table", help="F1 mean ± sd over runs, from results.json files")
    tb.add_argument("rows", nargs="+", metavar="NAME=RESULTS.json[,RESULTS.json...]")
    tb.add_argument("--split", default="test")
    tb.add_argument("--title", default="parser F1")
    tb.add_argument("--records", type=Path, metavar="JSON",
                    help="rows name runs of this record ({run: results}, e.g. docs/img/parse_shapes_runs.json)")
    return p


def _run_args(p):
    p.add_argument("--max-layers", type=int, default=0,
                   help="decode at most this many layers, then force the root (0: twice the tallest training tree)")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    p.add_argument("--no-progress-bar", action="store_true")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "train":
        check_grammar_args(parser, args, "trees", training=True)
        check_unbinding_args(parser, args, "trees", args.features, args.features == "unbinding")
    from fairseq_tpr.grammar import parse_commands  # torch, after the arguments are checked

    if args.command == "sentences":
        return parse_commands.sentences(args)
    try:
        return getattr(parse_commands, args.command)(args)
    except ValueError as usage:  # a combination of arguments that does not work: the usage message
        if type(usage) is not ValueError:
            raise
        parser.error(str(usage))


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
