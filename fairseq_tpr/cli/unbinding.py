"""``fairseq-tpr-unbinding``: dump the unbinding vectors u_t of an ATPL sentence autoencoder
(Huang et al., Sec. 5.1, stage 1 of the POS tagger) for a corpus.

    fairseq-tpr-unbinding --path CKPT --input SENTENCES.txt --out U.npz [--batch-size N] [--data DIR]

``SENTENCES.txt`` holds one whitespace-tokenised sentence per line. Each sentence is
teacher-forced through the autoencoder (encoder reads the sentence, the ATPL decoder rebuilds
it) and the vector ``u_t`` with which the decoder unbinds token t is kept: one vector per
whitespace token, the end-of-sentence step dropped. A token missing from the dictionary is
read as ``<unk>`` (counted on stderr). ``U.npz`` holds

- ``vectors``  float32, total_tokens x d (d = the model's --tpr-dim);
- ``offsets``  int64, n_sentences + 1: sentence i is ``vectors[offsets[i]:offsets[i+1]]``;
- ``words``    the tokens (str array), aligned with ``vectors``.

The checkpoint's task (``translation``) needs its dictionaries: they are read from the data
directory stored in the checkpoint, or from ``--data DIR`` when it moved.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch


def load_autoencoder(path, data=None):
    import fairseq_tpr  # noqa: F401  (registers the archs)
    from fairseq import checkpoint_utils

    overrides = {"data": str(data)} if data else {}
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(path)], arg_overrides=overrides)
    model = models[0]
    from ..models.atpl import ATPLDecoder

    if not isinstance(model.decoder, ATPLDecoder) or task.source_dictionary is None:
        raise SystemExit(f"fairseq-tpr-unbinding: {path} is not an ATPL autoencoder (--arch atpl_autoencoder*); "
                         f"its decoder is {type(model.decoder).__name__}")
    model.eval()
    return model, task


@torch.no_grad()
def unbinding_vectors(model, src_dict, tgt_dict, sentences, batch_size=64, device="cpu"):
    """``(vectors total x d, offsets, words, n_unk)`` for whitespace-tokenised ``sentences``."""
    from fairseq.data import data_utils

    vecs, offsets, words, n_unk = [], [0], [], 0
    for start in range(0, len(sentences), batch_size):
        chunk = sentences[start:start + batch_size]
        toks = [s.split() for s in chunk]
        src = [torch.LongTensor([src_dict.index(w) for w in t] + [src_dict.eos()]) for t in toks]
        tgt = [torch.LongTensor([tgt_dict.index(w) for w in t] + [tgt_dict.eos()]) for t in toks]
        n_unk += sum(int((t[:-1] == tgt_dict.unk()).sum()) for t in tgt)
        src_tokens = data_utils.collate_tokens(src, src_dict.pad(), left_pad=model.encoder.left_pad)
        src_lengths = torch.LongTensor([len(s) for s in src])
        prev = data_utils.collate_tokens(tgt, tgt_dict.pad(), tgt_dict.eos(), left_pad=False,
                                         move_eos_to_beginning=True)
        _, extra = model(src_tokens.to(device), src_lengths, prev.to(device))
        U = extra["u"]  # B x T x d; step t (0-based) unbinds token t, the last real step is EOS
        for b, t in enumerate(toks):
            vecs.append(U[b, : len(t)].float().cpu().numpy())
            offsets.append(offsets[-1] + len(t))
            words.extend(t)
    d = model.decoder.d
    vectors = np.concatenate(vecs).astype(np.float32) if vecs else np.zeros((0, d), np.float32)
    return vectors, np.asarray(offsets, dtype=np.int64), np.asarray(words, dtype=str), n_unk


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--path", required=True, help="ATPL autoencoder checkpoint")
    parser.add_argument("--input", required=True, help="one whitespace-tokenised sentence per line")
    parser.add_argument("--out", required=True, help="output .npz")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data", help="data directory with the checkpoint's dictionaries (if it moved)")
    parser.add_argument("--cpu", action="store_true", help="stay on CPU even when CUDA is available")
    args = parser.parse_args(argv)
    for p in (args.path, args.input):
        if not Path(p).exists():
            parser.error(f"{p}: no such file")
    sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    empty = [n for n, s in enumerate(sentences, 1) if not s.split()]
    if empty:
        print(f"fairseq-tpr-unbinding: error: {args.input} line {empty[0]} is empty ({len(empty)} empty lines); "
              f"one sentence per line, no blank lines", file=sys.stderr)
        sys.exit(1)
    model, task = load_autoencoder(args.path, args.data)
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    model = model.to(device)
    vectors, offsets, words, n_unk = unbinding_vectors(model, task.source_dictionary, task.target_dictionary,
                                                       sentences, args.batch_size, device)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, vectors=vectors, offsets=offsets, words=words)
    print(f"{args.out}: {len(sentences)} sentences, {len(words)} tokens, u_t of size {vectors.shape[1]}; "
          f"{n_unk} tokens read as <unk>")


if __name__ == "__main__":
    main()
