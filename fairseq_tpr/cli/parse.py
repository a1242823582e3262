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
import argparse
import json
import os
import sys
from pathlib import Path

from fairseq_tpr.cli import (GRAMMAR_SPLITS as SPLITS, add_grammar_size_args, add_grammar_split_args,
                             add_grammar_training_args, check_grammar_args, check_unbinding_args)
from fairseq_tpr.errors import command

# the choices of fairseq_tpr.grammar.parser_model, without importing torch before parsing
FEATURES = ("unbinding", "words")
SEGMENT_TARGETS = ("parity", "boundary")
LAYER_INPUTS = ("u", "u+prev")


def _model_args(p):
    m = p.add_argument_group("model")
    m.add_argument("--features", default="unbinding", choices=FEATURES,
                   help="BLSTM input: the unbinding vectors u_t (Eq. 11, the paper) or a word embedding trained "
                        "from scratch (the baseline)")
    m.add_argument("--segment-target", default="parity", choices=SEGMENT_TARGETS,
                   help="what a segment decision says: the paper's alternating bit z_{k,t}, or 'a new segment starts'")
    m.add_argument("--layer-input", default="u", choices=LAYER_INPUTS,
                   help="BLSTM input of layer k: u_t only (Eq. 13 as written) or u_t plus the code of the layer below")
    add_grammar_size_args(m, word_dim=0, word_dim_help="word embedding size for --features words (0: the size of "
                                                       "u_t in the dumps given, else 32: same sizes as the u_t parser)")


def get_parser():
    doc = __doc__.splitlines()
    p = argparse.ArgumentParser(prog="fairseq-tpr-parse", description=doc[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog="\n".join(doc[1:]))
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
    parser = get_parser()
    args = parser.parse_args(argv)
    if args.command == "score":
        return _score(args)
    if args.command == "table":
        return _table(parser, args)
    if args.command == "sentences":
        from fairseq_tpr.grammar.parser import read_examples

        examples = read_examples(args.trees)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("".join(" ".join(ex.words) + "\n" for ex in examples), encoding="utf-8")
        print(f"{args.out}: {len(examples)} sentences, {sum(len(ex.words) for ex in examples)} words")
        return 0
    if args.command == "train":
        check_grammar_args(parser, args, "trees", training=True)
        check_unbinding_args(parser, args, "trees", args.features, args.features == "unbinding")
        return _train(args)
    return _decode(parser, args)


def _torch(args):
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))))
    return torch


def _train(args):
    torch = _torch(args)
    from fairseq_tpr.grammar import parser as P

    cfg = {k: getattr(args, k) for k in P.MODEL_KEYS}
    given = [s for s in SPLITS if getattr(args, f"{s}_trees")]
    tree_files = {s: getattr(args, f"{s}_trees") for s in given}
    u_files = {s: getattr(args, f"{s}_u") for s in given}
    if not cfg["word_dim"]:  # the baseline as wide as u_t: d_u of --train-u when given
        cfg["word_dim"] = 32
        if args.train_u and Path(args.train_u).is_file():
            from fairseq_tpr.grammar.unbinding_dump import load_unbinding

            cfg["word_dim"] = load_unbinding(args.train_u).dim
    splits, vocab = P.load_data(tree_files, u_files, cfg)
    print(P.describe(splits, vocab, cfg), file=sys.stderr)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = P.build_model(cfg, vocab).to(device)
    print(f"{sum(p.numel() for p in model.parameters())} parameters", file=sys.stderr)
    max_layers = args.max_layers or None
    model, best_epoch, best_f1 = P.train(
        cfg, model, splits, vocab, device, seed=args.seed, max_epochs=args.max_epochs, patience=args.patience,
        batch_size=args.batch_size, lr=args.lr, clip_norm=args.clip_norm, save_dir=args.save_dir,
        progress=not args.no_progress_bar, max_layers=max_layers,
        run_key={"tree_files": tree_files, "u_files": u_files if cfg["features"] == "unbinding" else {}})
    rows = []
    for s in given:
        pred, res = P.evaluate(model, splits[s], vocab, device, args.batch_size, max_layers)
        _, gold_seg = P.evaluate(model, splits[s], vocab, device, args.batch_size, max_layers, gold_segments=True)
        rows.append(P.result_row(s, res, gold_seg))
        if args.out_dir:
            from fairseq_tpr.corpora.ptb_trees import write_trees

            write_trees(Path(args.out_dir) / f"{s}.pred.mrg", pred)
    print(P.markdown(rows, P.title(cfg)))
    if args.results_json:
        Path(args.results_json).parent.mkdir(parents=True, exist_ok=True)
        checkpoint = str(Path(args.save_dir) / "checkpoint_best.pt") if args.save_dir else None
        result = {"config": cfg, "seed": args.seed, "checkpoint": checkpoint, "best_epoch": best_epoch,
                  "valid_f1_at_best_epoch": best_f1, "parameters": sum(p.numel() for p in model.parameters()),
                  "tree_files": tree_files, "u_files": u_files if cfg["features"] == "unbinding" else {},
                  "splits": rows}
        Path(args.results_json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def _decode(parser, args):
    torch = _torch(args)
    from fairseq_tpr.grammar import evalb
    from fairseq_tpr.grammar import parser as P
    from fairseq_tpr.corpora.ptb_trees import write_trees

    if args.gold_segments and not args.trees:
        parser.error("--gold-segments takes the segmentation from --trees")
    if args.score and not args.trees:
        parser.error("--score compares with --trees")
    ckpt, vocab = P.load_checkpoint(args.load)
    cfg = ckpt["config"]
    if cfg["features"] == "unbinding" and not args.u:
        parser.error("this parser reads unbinding vectors: give --u (fairseq-tpr-unbinding writes them)")
    path = P.examples_from_tags(args.tags) if args.tags else args.trees
    splits, _ = P.load_data({"test": path}, {"test": args.u}, cfg, vocab)
    device = torch.device(args.device)
    model = P.build_model(cfg, vocab).to(device)
    model.load_state_dict(ckpt["model"])
    pred = P.decode(model, splits["test"], vocab, device, args.batch_size, args.max_layers or None,
                    gold_segments=args.gold_segments)
    write_trees(args.out, pred)
    print(f"{args.out}: {len(pred)} trees", file=sys.stderr)
    if args.score:
        print(evalb.report(evalb.score_trees([ex.gold for ex in splits["test"].examples], pred)))
    return 0


def _score(args):
    from dataclasses import replace

    from fairseq_tpr.grammar import evalb

    params = replace(evalb.COLLINS, labeled=not args.unlabeled, cutoff_len=args.cutoff_len)
    res = evalb.score_files(args.gold, args.test, params)
    print(evalb.report(res, per_sentence=args.per_sentence))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def _table(parser, args):
    from fairseq_tpr.grammar.parser import seed_table

    record = json.loads(args.records.read_text(encoding="utf-8")) if args.records else None
    rows = []
    for item in args.rows:
        name, sep, paths = item.partition("=")
        files = [x for x in paths.split(",") if x]
        if not sep or not files:
            parser.error(f"'{item}' is not NAME=RESULTS.json[,RESULTS.json...] (with --records: NAME=RUN[,RUN...])")
        if record is not None:  # run names in the record
            missing = [f for f in files if f not in record]
            if missing:
                parser.error(f"{name}: not in {args.records}: {', '.join(missing)} (it holds {', '.join(record)})")
            # a record keeps each split's scores under the split's name; results.json lists them under "splits"
            rows.append((name, [{"splits": [{"split": k, **v} for k, v in record[f].items()
                                            if isinstance(v, dict) and "f1" in v]} for f in files]))
            continue
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            parser.error(f"{name}: no such results file: {', '.join(missing)}")
        rows.append((name, [json.loads(Path(f).read_text(encoding="utf-8")) for f in files]))
    print(seed_table(rows, args.split, args.title))
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
