"""``fairseq-tpr-template-similarity``: STTR's Table IV similarity over a split (Sun, Wang, Li, Eq. 26).

::

    fairseq-tpr-template-similarity DATA_BIN --path CKPT [--path CKPT2 ...] [--label NAME ...]
        [--gen-subset test] [--batch-size N | --max-tokens N] [--cpu] [--json OUT] [--no-progress]

For every sentence ``b`` of the split (teacher forcing on the reference, no decoding)::

    sim_ts(b) = (cosine(mean H_ts(b), mean E_t(b)) + 1) / 2      Eq. 26, mapped to [0, 1]
    sim_s(b)  = (cosine(mean H_s(b),  mean E_t(b)) + 1) / 2      the same without the template

``H_ts`` is the template-aware document (Eq. 20, ``S x B x C``: the model's
``encoder_out["template_aware"]``), ``H_s`` the source encoder's output ``H_s^N`` that goes into
the template-aware attention (the document representation before the template is read, caught
with a forward hook on ``STTREncoder.source_encoder``), ``E_t`` the ``E_t`` of Eq. 23 as the
checkpoint's criterion defines it (``--template-mse-target``: by default the decoder's input, the
scaled embeddings of the reference's ``prev_output_tokens`` plus positions; ``token-embeddings``:
:meth:`STTRModel.target_embeddings` of the reference); means over non-pad positions. The per-sentence value is the criterion's own
:func:`~fairseq_tpr.criterions.label_smoothed_cross_entropy_with_template_mse.representation_similarity`
(the ``template_sim`` that training logs).

Printed: a Markdown table shaped like the paper's Table IV, one row per ``--path``: the row label
(``--label``, or from the checkpoint: ``STTR w/o loss`` for ``--template-mse-lambda 0``, ``+MSE
loss`` otherwise), lambda, ``Sim(%)`` = mean of ``sim_ts`` over the split in percent with its
standard deviation over sentences (population, ddof 0), the same for ``sim_s`` (the baseline
without the template), and the number of sentences. Table IV's ROUGE-L column is not computed
here (decode and score with ``fairseq-generate`` and ``fairseq-tpr-score``). ``--json OUT``
writes the same numbers plus every sentence's ``[id, sim_ts, sim_s]``. ``--records FILE`` (such a
JSON from another machine or session, same split) adds its rows whose label is not computed here
(a table assembled over sessions, as ``results_table --records``); ``--path`` may then be left out.

Checkpoints are loaded with fairseq's ``checkpoint_utils`` (the task and model settings stored in
the checkpoint, the data directory replaced by DATA_BIN); the split goes through the task's own
batch iterator (``--required-batch-size-multiple 1``: no sentence is dropped; the count is
checked). Errors (exit 2, one line) before any model runs: a missing checkpoint, a checkpoint
that is not ``--arch sttr*`` (its arch is named), one built with ``--template-mode none`` or
``concat`` (they have no ``H_ts``), a DATA_BIN without the split or without its templates.
"""
import json
import logging
import sys
import warnings

from fairseq_tpr import register
from fairseq_tpr.choices import SIMILARITY_BATCH_SIZE
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

PROG = "fairseq-tpr-template-similarity"
DEFAULT_BATCH_SIZE = SIMILARITY_BATCH_SIZE  # fairseq_tpr/choices.py, read before torch is imported


def build_parser():
    p = doc_parser(__doc__, prog=PROG)
    p.add_argument("data", metavar="DATA_BIN", help="binarized data with templates (preprocess/templates.sh)")
    p.add_argument("--path", action="append", metavar="CKPT",
                   help="an --arch sttr* checkpoint (--template-mode attention); repeat for more rows")
    p.add_argument("--label", action="append", metavar="NAME",
                   help="row name, one per --path in the same order (default: from the checkpoint's lambda)")
    p.add_argument("--gen-subset", default="test", metavar="SPLIT", help="split to score (default test)")
    p.add_argument("--batch-size", type=int, metavar="N",
                   help=f"sentences per batch (default {DEFAULT_BATCH_SIZE} when --max-tokens is not given)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="tokens per batch")
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even when CUDA is available")
    p.add_argument("--json", metavar="OUT", help="also write the numbers and every sentence's [id, sim_ts, sim_s]")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    p.add_argument("--records", metavar="FILE",
                   help="a --json output of the same split: its rows whose label is not computed here are added")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.path and not args.records:
        parser.error("give at least one --path CKPT (or --records FILE)")
    recorded = []
    if args.records:
        try:
            with open(args.records, encoding="utf-8") as f:
                rec = json.load(f)
            recorded, rec_split = rec["rows"], rec["split"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            parser.error(f"--records {args.records}: not a readable --json output of this command ({e})")
        if rec_split != args.gen_subset:
            parser.error(f"--records {args.records} holds split {rec_split!r}, not --gen-subset {args.gen_subset!r}")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    from fairseq_tpr.analysis.template_similarity import format_markdown, run

    logging.getLogger("fairseq").setLevel(logging.WARNING)  # dataset/model loading chatter
    warnings.filterwarnings("ignore", message=".*pin_memory.*")  # fairseq's data loader on a CPU-only machine
    # a bad input raises a FairseqTprError: the plugin's excepthook prints it as one "error:" line, exit 2
    rows = run(args.data, args.path, args.label, args.gen_subset, args.batch_size, args.max_tokens, args.cpu,
               progress=not args.no_progress) if args.path else []
    here = {r["label"] for r in rows}
    rows += [r for r in recorded if r["label"] not in here]
    print(format_markdown(rows, args.data, args.gen_subset), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"data": args.data, "split": args.gen_subset, "rows": rows}, f, indent=1)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
