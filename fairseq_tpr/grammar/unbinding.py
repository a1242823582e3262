"""The unbinding vectors u_t of an ATPL sentence autoencoder (Huang et al., Sec. 5.1, stage 1 of the
POS tagger): the library of ``fairseq-tpr-unbinding``.

Each sentence is teacher-forced through the autoencoder (the encoder reads the sentence, the ATPL
decoder rebuilds it) and the vector ``u_t`` with which the decoder unbinds token t is kept: one
vector per whitespace token, the end-of-sentence step dropped. A token missing from the
dictionary is read as ``<unk>`` (and counted).
"""
import numpy as np
import torch
from fairseq import checkpoint_utils

from ..errors import ConfigError
from ..models.atpl import ATPLDecoder


def load_autoencoder(path, data=None):
    """``(model in eval mode, task)`` of an ATPL autoencoder checkpoint; ``data`` replaces the data
    directory stored in it (for the dictionaries). Raises a :class:`ConfigError` for another model."""
    overrides = {"data": str(data)} if data else {}
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(path)], arg_overrides=overrides)
    model = models[0]
    if not isinstance(model.decoder, ATPLDecoder) or task.source_dictionary is None:
        raise ConfigError(f"{path} is not an ATPL autoencoder (--arch atpl_autoencoder*); "
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
