"""``fairseq-tpr-unbinding``: dump the unbinding vectors u_t of an ATPL sentence autoencoder
(Huang et al., Sec. 5.1, stage 1 of the POS tagger) for a corpus.

    fairseq-tpr-unbinding --path CKPT --input SENTENCES.txt --out U.npz [--batch-size N] [--data DIR]

``SENTENCES.txt`` holds one whitespace-tokenised sentence per line. Each sentence is
teacher-forced through the autoencoder (encoder reads the sentence, the ATPL decoder rebuilds
it) and the vector ``u_t`` with which the decoder unbinds token t is kept: one vector per
whitespace token, the end-of-sentence step dropped. A token missing from the dictionary is
read as ``<unk>`` (counted in the summary line printed on stdout). ``U.npz`` holds

- ``vectors``  float32, total_tokens x d (d = the model's --tpr-dim);
- ``offsets``  int64, n_sentences + 1: sentence i is ``vectors[offsets[i]:offsets[i+1]]``;
- ``words``    the tokens (str array), aligned with ``vectors``.

The checkpoint's task (``translation``) needs its dictionaries: they are read from the data
directory stored in the checkpoint, or from ``--data DIR`` when it moved.
"""
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.errors import InputError
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-unbinding")
    parser.add_argument("--path", required=True, help="ATPL autoencoder checkpoint")
    parser.add_argument("--input", required=True, help="one whitespace-tokenised sentence per line")
    parser.add_argument("--out", required=True, help="output .npz")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data", help="data directory with the checkpoint's dictionaries (if it moved)")
    parser.add_argument("--cpu", action="store_true", help="stay on CPU even when CUDA is available")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    # an InputError, or the ConfigError/CheckpointError of load_autoencoder, reaches the console entry of
    # fairseq_tpr.errors: one 'error:' line, exit status 2
    for p in (args.path, args.input):
        if not Path(p).exists():
            raise InputError(f"{p}: no such file")
    sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    empty = [n for n, s in enumerate(sentences, 1) if not s.split()]
    if empty:
        raise InputError(f"{args.input} line {empty[0]} is empty ({len(empty)} empty lines); "
                         f"one sentence per line, no blank lines")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are checked
    import numpy as np
    import torch

    from fairseq_tpr.grammar.unbinding import load_autoencoder, unbinding_vectors

    model, task = load_autoencoder(args.path, args.data)
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    model = model.to(device)
    vectors, offsets, words, n_unk = unbinding_vectors(model, task.source_dictionary, task.target_dictionary,
                                                       sentences, args.batch_size, device)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, vectors=vectors, offsets=offsets, words=words)
    print(f"{args.out}: {len(sentences)} sentences, {len(words)} tokens, u_t of size {vectors.shape[1]}; "
          f"{n_unk} tokens read as <unk>")


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
