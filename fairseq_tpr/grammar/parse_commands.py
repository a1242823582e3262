"""The work behind ``fairseq-tpr-parse train | decode | score | table`` (ATPL's parser, Sec. 6):
training with its report and results file, decoding with a saved parser, EVALB of two tree files,
and the seed table from results files or from a record. The console script (``cli/parse.py``) parses
the arguments and calls these with the namespace it got; a usage error comes back as a
``ValueError`` the script turns into its usage message."""
import json
import os
import sys
from pathlib import Path

from .parser import SPLITS


def _torch():
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))))
    return torch


def sentences(args):
    """The normalised trees' sentences, one per line (``fairseq-tpr-parse sentences``)."""
    from fairseq_tpr.grammar.parser import read_examples

    examples = read_examples(args.trees)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(" ".join(ex.words) + "\n" for ex in examples), encoding="utf-8")
    print(f"{args.out}: {len(examples)} sentences, {sum(len(ex.words) for ex in examples)} words")
    return 0


def train(args):
    """Train a parser from ``args`` (``fairseq-tpr-parse train``'s namespace), print the report, write
    ``--results-json``; returns 0."""
    torch = _torch()
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


def decode(args):
    """Parse ``--trees``/``--tags`` with the parser of ``--load`` (``fairseq-tpr-parse decode``)."""
    torch = _torch()
    from fairseq_tpr.grammar import evalb
    from fairseq_tpr.grammar import parser as P
    from fairseq_tpr.corpora.ptb_trees import write_trees

    if args.gold_segments and not args.trees:
        raise ValueError("--gold-segments takes the segmentation from --trees")
    if args.score and not args.trees:
        raise ValueError("--score compares with --trees")
    ckpt, vocab = P.load_checkpoint(args.load)
    cfg = ckpt["config"]
    if cfg["features"] == "unbinding" and not args.u:
        raise ValueError("this parser reads unbinding vectors: give --u (fairseq-tpr-unbinding writes them)")
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


def score(args):
    """EVALB (COLLINS.prm) of ``args.test`` against ``args.gold`` (``fairseq-tpr-parse score``)."""
    from dataclasses import replace

    from fairseq_tpr.grammar import evalb

    params = replace(evalb.COLLINS, labeled=not args.unlabeled, cutoff_len=args.cutoff_len)
    res = evalb.score_files(args.gold, args.test, params)
    print(evalb.report(res, per_sentence=args.per_sentence))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def table(args):
    """The seed table of ``args.rows`` (``NAME=RESULTS.json[,...]``, or run names of ``--records``)."""
    from fairseq_tpr.grammar.parser import seed_table

    record = json.loads(args.records.read_text(encoding="utf-8")) if args.records else None
    rows = []
    for item in args.rows:
        name, sep, paths = item.partition("=")
        files = [x for x in paths.split(",") if x]
        if not sep or not files:
            raise ValueError(f"'{item}' is not NAME=RESULTS.json[,RESULTS.json...] (with --records: NAME=RUN[,RUN...])")
        if record is not None:  # run names in the record
            missing = [f for f in files if f not in record]
            if missing:
                raise ValueError(f"{name}: not in {args.records}: {', '.join(missing)} (it holds {', '.join(record)})")
            # a record keeps each split's scores under the split's name; results.json lists them under "splits"
            rows.append((name, [{"splits": [{"split": k, **v} for k, v in record[f].items()
                                            if isinstance(v, dict) and "f1" in v]} for f in files]))
            continue
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise ValueError(f"{name}: no such results file: {', '.join(missing)}")
        rows.append((name, [json.loads(Path(f).read_text(encoding="utf-8")) for f in files]))
    print(seed_table(rows, args.split, args.title))
    return 0
