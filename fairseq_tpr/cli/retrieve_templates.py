"""``fairseq-tpr-retrieve-templates``: STTR templates by BM25 retrieval over the training articles.

The retrieval is :mod:`fairseq_tpr.corpora.template_retrieval` (its docstring is this command's
``--help``: the module needs numpy and scipy, neither torch nor fairseq, so this command imports it
at once); ``preprocess/templates.sh`` binarizes what it writes. A bad input or flag reaches the
user through the console entry (:func:`fairseq_tpr.errors.command`): one ``error:`` line, exit 2.
The retrieval needs neither torch nor fairseq, and this command imports neither.
"""
import sys

from fairseq_tpr.corpora import template_retrieval
from fairseq_tpr.corpora.template_retrieval import EMPTY_QUERY_POLICIES
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    p = doc_parser(template_retrieval.__doc__, prog="fairseq-tpr-retrieve-templates")
    p.add_argument("raw_dir", help="directory with {split}.{source-ext} and train.{target-ext}")
    p.add_argument("--out", help="where {split}.template goes (default: RAW_DIR)")
    p.add_argument("--source-ext", default="source")
    p.add_argument("--target-ext", default="target")
    p.add_argument("--splits", default="train,valid,test")
    p.add_argument("--top-k", type=int, default=1, help="BM25 candidates kept per query (default 1)")
    p.add_argument("--rerank", choices=("none", "rouge1"), default="none")
    p.add_argument("--copy-from", help="directory whose train.{target-ext} supplies the template text "
                                       "(e.g. the BPE'd files; default RAW_DIR)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="for the train split, allow training articles identical to the query (never the query itself)")
    p.add_argument("--exclude-same", metavar="EXT",
                   help="for the train split, never a template from a training article whose line of train.EXT "
                        "equals the query's (e.g. package: a corpus split by group; see above)")
    p.add_argument("--stopwords", choices=("en", "none"), default="en")
    p.add_argument("--random-templates", action="store_true", help="a random other training summary (robustness check)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-df", type=float, default=1.0,
                   help="ignore query words found in more than this fraction of the training articles (1.0: exact "
                        "BM25; 0.05 makes a Gigaword-sized index fast, see docs/sttr.md)")
    p.add_argument("--on-empty-query", choices=EMPTY_QUERY_POLICIES, default="error",
                   help="what an empty source line gets: error (default: stop, naming the file and line); skip "
                        "(an empty template and id -1, outputs stay aligned; preprocess/templates.sh refuses empty "
                        "templates, so drop those lines first); fallback (a template anyway: the first usable other "
                        "training summary, a random one with --random-templates). skip and fallback print how many "
                        "lines were empty")
    p.add_argument("--threads", type=int, default=0, help="retrieval processes (0 or 1: in this process)")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    template_retrieval.retrieve(
        args.raw_dir, args.out, source_ext=args.source_ext, target_ext=args.target_ext,
        splits=args.splits.split(","), top_k=args.top_k, rerank=args.rerank, copy_from=args.copy_from,
        keep_duplicates=args.keep_duplicates, stopwords=args.stopwords, random_templates=args.random_templates,
        seed=args.seed, max_df=args.max_df, threads=args.threads, show_progress=not args.no_progress,
        on_empty_query=args.on_empty_query, exclude_same=args.exclude_same)
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
