"""BLEU-1..4, METEOR, ROUGE-L and CIDEr of generated captions against ALL references of each image,
with pycocoevalcap (the COCO caption evaluation code); the library of ``fairseq-tpr-caption-score``.

:func:`read_generate_log` takes the hypotheses of a ``fairseq-generate`` log (sample id k is the
k-th image of the split's ``S.feat.ids``), :func:`nearest_train_captions` makes a control without
training (the caption of each image's nearest training image), :func:`collect` pairs hypotheses with the references
of their image and checks the counts, :func:`score` runs the pycocoevalcap scorers. SPICE is not
computed: it downloads Stanford CoreNLP models at run time, which cannot work offline.
"""
import shutil
from collections import defaultdict
from importlib.util import find_spec

from ..errors import DependencyError, InputError
from . import inputs
from .generate_log import parse_generate_log
from ..choices import CAPTION_METRICS

METRICS = CAPTION_METRICS


def read_lines(path, what="caption"):
    """The lines of a UTF-8 text file (captions, image ids), without their newline; a missing file
    or bytes that are not UTF-8 are an :class:`InputError` naming the file, line and byte."""
    return inputs.read_lines(path, what)


def read_generate_log(path):
    """``{sample id: caption}`` from a fairseq-generate log: the best detokenized ``D-`` hypothesis of
    every id, or the ``H-`` one when the log has no ``D-`` lines (read by :mod:`.generate_log`,
    which refuses lines without a score column and concatenated runs)."""
    log = parse_generate_log(path)
    log.require_hypotheses()
    return {i: h.strip() for i, h in log.hypotheses.items()}


def nearest_train_captions(data_dir, split, train_split="train"):
    """A control that needs no training: for every image of ``split`` (in ``S.feat.ids`` order), the
    first caption of the ``train_split`` image whose features are closest in cosine similarity.
    What a captioner that only recognises the training image it looks most like would write."""
    import numpy as np

    from ..data.captioning import load_features

    train, train_ids, _ = load_features(data_dir, train_split)
    feats, _, _ = load_features(data_dir, split)
    if train.shape[1] != feats.shape[1]:
        raise InputError(f"{data_dir}: {train_split}.feat.npy has {train.shape[1]}-d features but {split}.feat.npy "
                         f"{feats.shape[1]}-d")
    first = {}
    for caption, image in zip(read_lines(f"{data_dir}/{train_split}.txt"),
                              (i.strip() for i in read_lines(f"{data_dir}/{train_split}.img"))):
        first.setdefault(image, caption)
    missing = [i for i in train_ids if i not in first]
    if missing:
        raise InputError(f"{data_dir}/{train_split}.img: image {missing[0]!r} of {train_split}.feat.ids has no caption")

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    nearest = (unit(feats) @ unit(train).T).argmax(axis=1)
    return [first[train_ids[j]] for j in nearest]


def collect(refs, ref_images, hyps, hyp_images):
    """``(gts, res)`` dictionaries ``{image id: [captions]}`` for pycocoevalcap, checked."""
    ref_lines, ref_ids = read_lines(refs), [i.strip() for i in read_lines(ref_images)]
    if len(ref_lines) != len(ref_ids):
        raise InputError(f"{refs} has {len(ref_lines)} lines but {ref_images} has {len(ref_ids)}: "
                         f"one image id per reference caption")
    gts = defaultdict(list)
    for c, i in zip(ref_lines, ref_ids):
        gts[i].append(c)
    hyp_ids = [i.strip() for i in read_lines(hyp_images)]
    if isinstance(hyps, dict):  # from a generate log: sample id -> caption
        bad = [k for k in hyps if k >= len(hyp_ids)]
        if bad:
            raise InputError(f"sample id {bad[0]} of the generate log has no line in {hyp_images} "
                             f"({len(hyp_ids)} lines): pass the S.feat.ids of the generated split")
        if len(hyps) != len(hyp_ids):
            missing = sorted(set(range(len(hyp_ids))) - set(hyps))
            raise InputError(f"the generate log has {len(hyps)} hypotheses for {len(hyp_ids)} images "
                             f"(first missing sample id {missing[0]}); run fairseq-generate with "
                             f"--required-batch-size-multiple 1 so that no image is dropped")
        res = {hyp_ids[k]: [h] for k, h in hyps.items()}
    else:
        if len(hyps) != len(hyp_ids):
            raise InputError(f"{len(hyps)} hypotheses but {hyp_images} has {len(hyp_ids)} image ids")
        res = {}
        for n, (h, i) in enumerate(zip(hyps, hyp_ids), 1):
            if i in res:
                raise InputError(f"{hyp_images} line {n}: image {i!r} has a second hypothesis")
            res[i] = [h]
    no_ref = [i for i in res if i not in gts]
    if no_ref:
        raise InputError(f"image {no_ref[0]!r} ({len(no_ref)} in all) has a hypothesis but no reference "
                         f"in {refs}")
    return {i: gts[i] for i in res}, res


def score(gts, res, ptb_tokenize=True, metrics=METRICS):
    """pycocoevalcap scores ``{metric: value}`` (fractions, BLEU/METEOR/ROUGE in [0, 1])."""
    if find_spec("pycocoevalcap") is None:
        raise DependencyError("caption metrics need pycocoevalcap, which is not installed: "
                              "pip install --no-build-isolation 'fairseq_tpr[captioning]'")
    needs_java = ptb_tokenize or "METEOR" in metrics
    if needs_java and shutil.which("java") is None:
        raise DependencyError("pycocoevalcap's PTB tokenizer and METEOR need Java (`java` on PATH); install a "
                              "JRE (scripts/system_deps.sh) or pass --no-ptb-tokenize --metrics without METEOR")
    if ptb_tokenize:
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        tok = PTBTokenizer()
        gts = tok.tokenize({i: [{"caption": c} for c in cs] for i, cs in gts.items()})
        res = tok.tokenize({i: [{"caption": c} for c in cs] for i, cs in res.items()})
    else:
        gts = {i: [" ".join(c.lower().split()) for c in cs] for i, cs in gts.items()}
        res = {i: [" ".join(c.lower().split()) for c in cs] for i, cs in res.items()}
    out = {}
    if any(m.startswith("BLEU") for m in metrics):
        from pycocoevalcap.bleu.bleu import Bleu

        bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
        out.update({f"BLEU-{n + 1}": float(b) for n, b in enumerate(bleu) if f"BLEU-{n + 1}" in metrics})
    if "METEOR" in metrics:
        from pycocoevalcap.meteor.meteor import Meteor

        m = Meteor()
        try:
            out["METEOR"] = float(m.compute_score(gts, res)[0])
        finally:
            m.close() if hasattr(m, "close") else None
    if "ROUGE-L" in metrics:
        from pycocoevalcap.rouge.rouge import Rouge

        out["ROUGE-L"] = float(Rouge().compute_score(gts, res)[0])
    if "CIDEr" in metrics:
        from pycocoevalcap.cider.cider import Cider

        out["CIDEr"] = float(Cider().compute_score(gts, res)[0])
    return out
