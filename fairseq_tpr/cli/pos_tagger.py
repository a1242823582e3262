"""Train and evaluate ATPL's BiLSTM POS tagger (Huang et al., Section 5, Eq. 8-10) on unbinding vectors.

    fairseq-tpr-pos-tagger --features unbinding \\
        --train-tags data/shapes/train.pos --train-u runs/atpl/u/train.npz \\
        --valid-tags data/shapes/valid.pos --valid-u runs/atpl/u/valid.npz \\
        --test-tags data/shapes/test.pos --test-u runs/atpl/u/test.npz \\
        --save-dir runs/pos/unbinding --results-json runs/pos/unbinding/results.json

    # the same tagger on word embeddings alone (no --*-u files needed)
    fairseq-tpr-pos-tagger --features words --train-tags ... --valid-tags ... --test-tags ... --save-dir runs/pos/words

    # evaluate a saved tagger
    fairseq-tpr-pos-tagger --load runs/pos/unbinding/checkpoint_best.pt --test-tags ... --test-u ...

Tag files are CoNLL-U (UPOS, or XPOS with --conllu-column xpos) or word/TAG (one sentence per
line), detected from the extension or the content. Unbinding files are ``fairseq-tpr-unbinding``
dumps (.npz with vectors, offsets, words); their words must equal the tag file's, sentence by
sentence. The word vocabulary and the tag set come from the training split; other words map to
``<unk>``. Training stops early when validation token accuracy has not improved for
``--patience`` epochs; the best epoch is kept (``checkpoint_best.pt``).

Reported per split (Markdown on stdout, JSON with --results-json): token accuracy, and accuracy
on tokens whose word is not in the training vocabulary (OOV) and on tokens whose word had more
than one tag in training (ambiguous), with their counts.
"""
import json
import os
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.cli import (GRAMMAR_SPLITS, add_grammar_size_args, add_grammar_split_args,
                             add_grammar_training_args, check_grammar_args, check_unbinding_args)
from fairseq_tpr.choices import POS_CONTEXTS, POS_FEATURES, POS_SCORERS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

# fairseq_tpr/choices.py, read before torch is imported


def build_parser():
    p = doc_parser(__doc__, prog="fairseq-tpr-pos-tagger")
    add_grammar_split_args(p, "tags", "tag file (CoNLL-U or word/TAG)")
    p.add_argument("--tag-format", default="auto", choices=["auto", "conllu", "wordtag"])
    p.add_argument("--conllu-column", default="upos", choices=["upos", "xpos"], help="CoNLL-U tag column")
    m = p.add_argument_group("model (ignored with --load: the checkpoint's are used)")
    m.add_argument("--features", default="unbinding", choices=POS_FEATURES,
                   help="BLSTM input: u_t (Eq. 8), a word embedding, or both concatenated")
    m.add_argument("--scorer", default="factored", choices=POS_SCORERS,
                   help="tag scores: word-conditioned W(x_t) of Eq. 9-10, or a plain linear map (ablation)")
    m.add_argument("--context", default="blstm", choices=POS_CONTEXTS,
                   help="the BLSTM of Eq. 8, or none: a per-token probe of the input vectors (not in the paper)")
    add_grammar_size_args(m, word_dim=64, word_dim_help="word embedding size (features words/both)")
    t = p.add_argument_group("training")
    add_grammar_training_args(t, unit="sentences", score="accuracy")
    t.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    t.add_argument("--no-progress-bar", action="store_true")
    o = p.add_argument_group("output")
    o.add_argument("--save-dir", help="write checkpoint_best.pt here, and checkpoint_last.pt after every epoch: "
                   "a run that finds checkpoint_last.pt there continues from it (same flags and data)")
    o.add_argument("--load", help="evaluate this saved tagger (no training)")
    o.add_argument("--results-json", help="write the per-split results here")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    import torch

    from fairseq_tpr.grammar import tagger as pos

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))))
    given = [s for s in GRAMMAR_SPLITS if getattr(args, f"{s}_tags")]
    check_grammar_args(parser, args, "tags", training=not args.load)
    if args.load:
        if args.train_tags:
            parser.error("--load evaluates a saved tagger; drop --train-tags (or drop --load to train a new one)")
        if not given:
            parser.error("--load needs at least one of --valid-tags/--test-tags to evaluate")

    # an InputError (a bad tag or unbinding file) or CheckpointError reaches the console entry of
    # fairseq_tpr.errors: one 'error:' line, exit status 2
    ckpt = pos.load_checkpoint(args.load) if args.load else None
    cfg = ckpt["config"] if ckpt is not None else {k: getattr(args, k) for k in pos.MODEL_KEYS}
    need_u = pos.uses_unbinding(cfg)
    check_unbinding_args(parser, args, "tags", cfg["features"], need_u)
    tag_files = {s: getattr(args, f"{s}_tags") for s in given}
    u_files = {s: getattr(args, f"{s}_u") for s in given}
    splits, words, tags, ambiguous = pos.load_data(tag_files, u_files, cfg, ckpt, args.tag_format,
                                                   args.conllu_column)
    print(pos.describe(splits, words, tags, ambiguous, cfg), file=sys.stderr)

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = pos.build_model(cfg, len(words), len(tags)).to(device)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
    else:
        model, best_epoch = pos.train(
            cfg, model, splits, device, words, tags, ambiguous, seed=args.seed, max_epochs=args.max_epochs,
            patience=args.patience, batch_size=args.batch_size, lr=args.lr, clip_norm=args.clip_norm,
            save_dir=args.save_dir, progress=not args.no_progress_bar,
            run_key={"tag_files": tag_files, "u_files": u_files if need_u else {}})

    rows = pos.evaluate(model, splits, device, batch_size=args.batch_size)
    print(pos.markdown(rows, pos.title(cfg)))
    if args.results_json:
        Path(args.results_json).parent.mkdir(parents=True, exist_ok=True)
        checkpoint = args.load or (str(Path(args.save_dir) / "checkpoint_best.pt") if args.save_dir else None)
        result = {"config": cfg, "checkpoint": checkpoint, "splits": rows, "tag_files": tag_files,
                  "u_files": u_files if need_u else {}}
        if ckpt is None:
            result["best_epoch"] = best_epoch
        Path(args.results_json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
