"""Console scripts of fairseq_tpr (see ``[project.scripts]`` in pyproject.toml), and the arguments
that several of them share. Nothing here imports torch: ``--help`` and usage errors stay fast
(tests/test_cli_startup.py)."""
import sys

from ..choices import GRAMMAR_SPLITS  # the splits of grammar/'s POS tagger and parser (one copy)


# ----------------------------------------------------------------------------- ATPL's POS tagger and parser
# fairseq-tpr-pos-tagger and fairseq-tpr-parse train: a model on the unbinding vectors u_t of each
# split's sentences (or on word embeddings), trained with early stopping (fairseq_tpr.grammar.training).


def add_grammar_split_args(p, gold: str, gold_help: str) -> None:
    """``--{split}-{gold}`` (the annotated sentences) and ``--{split}-u`` (their unbinding vectors) of each split."""
    for split in GRAMMAR_SPLITS:
        p.add_argument(f"--{split}-{gold}", help=f"{split} {gold_help}")
        p.add_argument(f"--{split}-u", help=f"{split} unbinding vectors (.npz from fairseq-tpr-unbinding)")


def add_grammar_size_args(m, *, word_dim: int, word_dim_help: str) -> None:
    """The sizes and dropouts of the BLSTM and its factored output ``W_a diag(W_b x) W_c`` (Eq. 10)."""
    m.add_argument("--hidden", type=int, default=128, help="BLSTM hidden size per direction")
    m.add_argument("--rank", type=int, default=64,
                   help="inner size of the factored output W_a diag(W_b x) W_c (Eq. 10)")
    m.add_argument("--word-dim", type=int, default=word_dim, help=word_dim_help)
    m.add_argument("--dropout", type=float, default=0.2)
    m.add_argument("--word-dropout", type=float, default=0.05,
                   help="probability of replacing a training word by <unk> (word embedding input)")


def add_grammar_training_args(g, *, unit: str, score: str) -> None:
    """Adam, clipping and early stopping on the validation ``score`` (``unit``: what a batch counts)."""
    g.add_argument("--max-epochs", type=int, default=30)
    g.add_argument("--patience", type=int, default=5,
                   help=f"stop after this many epochs without a better valid {score} (equal {score}: a lower "
                        f"valid loss counts as better)")
    g.add_argument("--batch-size", type=int, default=32, help=f"{unit} per batch")
    g.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    g.add_argument("--clip-norm", type=float, default=5.0)
    g.add_argument("--seed", type=int, default=1)


def check_grammar_args(parser, args, gold: str, *, training: bool) -> None:
    """Usage errors: a ``--SPLIT-u`` without its ``--SPLIT-{gold}``; to train, no train or valid
    split (valid stops training early) or a size below 1."""
    for s in GRAMMAR_SPLITS:
        if getattr(args, f"{s}_u") and not getattr(args, f"{s}_{gold}"):
            parser.error(f"--{s}-u given without --{s}-{gold}")
    if training:
        if not getattr(args, f"train_{gold}") or not getattr(args, f"valid_{gold}"):
            parser.error(f"training needs --train-{gold} and --valid-{gold} (valid is used for early stopping)")
        if args.max_epochs < 1 or args.patience < 1 or args.batch_size < 1:
            parser.error("--max-epochs, --patience and --batch-size must be >= 1")


def check_unbinding_args(parser, args, gold: str, features: str, needs_u: bool) -> None:
    """A model that reads u_t needs ``--SPLIT-u`` for every split given (a usage error names the
    missing ones); one that does not says on stderr that it ignores those given."""
    given = [s for s in GRAMMAR_SPLITS if getattr(args, f"{s}_{gold}")]
    if needs_u:
        missing = [f"--{s}-u" for s in given if not getattr(args, f"{s}_u")]
        if missing:
            parser.error(f"--features {features} reads unbinding vectors: give {' '.join(missing)} "
                         f"(write them with fairseq-tpr-unbinding), or use --features words")
    elif any(getattr(args, f"{s}_u") for s in given):
        print("note: --features words ignores the --*-u files", file=sys.stderr)
