"""Batching: fairseq dropped the last batch of every split whose size was not a multiple of
``--required-batch-size-multiple`` (default 8), in every command that batches.
"""
import numpy as np

from .patching import patch


def fix_last_batch_kept() -> None:
    """``fairseq/data/data_utils.py`` lines 357-358 (``batch_by_size``, what
    ``FairseqDataset.batch_by_size`` and so every task's ``get_batch_iterator`` call)::

        if bsz_mult > 1 and len(b[-1]) % bsz_mult != 0:
            b = b[:-1]

    drop the last batch when its size is not a multiple of ``--required-batch-size-multiple`` (default
    8). Every arch loses those examples, with no word: ``fairseq-generate`` and ``fairseq-validate``
    up to 7 sentences per split (a 13-sentence test split generated 12 hypotheses), ``fairseq-train``
    the last batch of every epoch (batches are built in length order, so the longest examples), and a
    split that fits in one batch of fewer than 8 examples is "empty" (fairseq's iterator raises).
    fairseq's tracker has it open (issues #5036, #5351).

    We keep it: the batches fairseq built stay as they are (every batch but the last still a multiple
    of the setting, or below it) and the examples it dropped, which are the tail of ``indices`` (the
    batches are consecutive slices of it, ``data_utils_fast.pyx``), come back as the last batch,
    within ``--max-tokens`` and ``--batch-size`` as fairseq built it. ``fixed_shapes`` batching (which
    ignores the multiple) is left alone. Tests: ``tests/test_lost_examples.py``."""
    from fairseq.data import data_utils

    def build(original):
        def batch_by_size(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None, max_sentences=None,
                          required_batch_size_multiple=1, fixed_shapes=None):
            if not isinstance(indices, np.ndarray):
                indices = np.fromiter(indices, dtype=np.int64, count=-1)
            batches = original(indices, num_tokens_fn, num_tokens_vec, max_tokens, max_sentences,
                               required_batch_size_multiple, fixed_shapes)
            if fixed_shapes is None and required_batch_size_multiple > 1:
                kept = sum(len(batch) for batch in batches)
                if kept < len(indices):
                    batches = list(batches) + [indices[kept:]]
            return batches

        return batch_by_size

    patch(data_utils, "batch_by_size", build)
