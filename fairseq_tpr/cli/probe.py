"""``fairseq-tpr-probe``: probe a frozen checkpoint's roles, fillers, TPRs or layer outputs, per layer.

The probe of Jiang et al. 2021 (span convolution + self-attentive span pooling + 2-layer
MLP, after Tenney et al. 2019), trained on one split and scored on another::

    fairseq-tpr-probe DATA_BIN --path CKPT --side encoder \\
        --train-split train --train-labels train.labels --max-train-examples 2000 \\
        --eval-split test --eval-labels test.labels \\
        --representation role filler tpr layer [--layers 0 2] [--label-format token|span] [--json probe.json]

prints micro-/macro-F1 per layer and representation. ``layer`` (the output of each layer)
works for every checkpoint, a plain Transformer included; ``role``/``filler``/``tpr`` need a
TP-Transformer (continuous or discrete roles). Label file format: see
:mod:`fairseq_tpr.analysis.probe` and docs/analysis.md. The driver is
:func:`fairseq_tpr.analysis.layer_probe.probe_checkpoint`.
"""
import sys

from fairseq_tpr import register
from fairseq_tpr.choices import PROBE_REPRESENTATIONS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

REPRESENTATIONS = PROBE_REPRESENTATIONS  # fairseq_tpr/choices.py, read before torch is imported


def build_parser():
    p = doc_parser(__doc__, prog="fairseq-tpr-probe")
    p.add_argument("data", help="binarized data directory (fairseq-preprocess --destdir)")
    p.add_argument("--path", required=True, help="fairseq checkpoint (kept frozen)")
    p.add_argument("--side", choices=("encoder", "decoder"), default="encoder",
                   help="probe encoder positions (labels on source tokens) or decoder positions (labels on target "
                        "tokens: position t is probed for the token it predicts)")
    p.add_argument("--attention", choices=("self", "cross"), default=None,
                   help="which attention's role/filler/TPR on the decoder (default: cross; encoder: self)")
    p.add_argument("--representation", nargs="+", choices=REPRESENTATIONS, default=["layer"])
    p.add_argument("--layers", type=int, nargs="+", help="layer indices (default: all; negative counts from the end)")
    p.add_argument("--train-split", default="train")
    p.add_argument("--train-labels", required=True)
    p.add_argument("--max-train-examples", type=int, default=2000)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--eval-labels", required=True)
    p.add_argument("--max-eval-examples", type=int, default=None)
    p.add_argument("--label-format", choices=("token", "span"), default="token")
    p.add_argument("--conv-context", type=int, default=0,
                   help="span convolution kernel 2c+1 (c=0: per-token projection; causal on the decoder)")
    p.add_argument("--proj", type=int, default=256, help="span convolution output size")
    p.add_argument("--hidden", type=int, default=256, help="MLP hidden size")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32, help="examples per probe update")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--json", help="write the scores here")
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    from fairseq_tpr.analysis.layer_probe import probe_checkpoint

    # an InputError (a bad label file, split) or ConfigError (a flag or checkpoint that does not fit)
    # reaches fairseq_tpr.errors.command: one 'error:' line, exit status 2
    probe_checkpoint(a.data, a.path, a.train_labels, a.eval_labels, side=a.side, attention=a.attention,
                     representations=a.representation, layers=a.layers, train_split=a.train_split,
                     max_train_examples=a.max_train_examples, eval_split=a.eval_split,
                     max_eval_examples=a.max_eval_examples, label_format=a.label_format,
                     conv_context=a.conv_context, proj=a.proj, hidden=a.hidden, epochs=a.epochs, lr=a.lr,
                     batch_size=a.batch_size, seed=a.seed, cpu=a.cpu, json_path=a.json)


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
