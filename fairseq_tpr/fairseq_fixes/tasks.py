"""Tasks and their datasets: a ``--task language_modeling`` data directory without its dictionary, and
source and target files of different lengths, are ``error:`` lines naming the files, not tracebacks;
fairseq's datasets that name numpy 1's ``np.compat.long`` run under numpy 2.
"""
import os

from .patching import patch


def fix_language_modeling_without_dictionary() -> None:
    """``fairseq/tasks/language_modeling.py`` line 155 (``LanguageModelingTask.setup_dictionary``,
    run by ``fairseq-train``, ``-validate``, ``-eval-lm``, ``-interactive``, ``-generate`` and the hub)
    loads ``DATA/dict.txt`` with ``Dictionary.load`` and dies with ``FileNotFoundError`` and its
    traceback when the directory has none (a data directory of ``fairseq-preprocess`` without
    ``--only-source`` has ``dict.SRC.txt``/``dict.TGT.txt``; a typo in the path has nothing). Now an
    :class:`~fairseq_tpr.errors.InputError` names the missing file, what the directory holds and the
    command that writes it. Test: ``tests/test_lm_cli.py``."""
    from fairseq.tasks.language_modeling import LanguageModelingTask

    from fairseq_tpr.errors import InputError

    def build(original):
        def setup_dictionary(cls, args, **kwargs):
            if args.data:
                from fairseq import utils

                root = utils.split_paths(args.data)[0]
                path = os.path.join(root, "dict.txt")
                if not os.path.isfile(path):
                    if not os.path.isdir(root):
                        found = "which does not exist"
                    else:
                        dicts = sorted(f for f in os.listdir(root) if f.startswith("dict."))
                        found = (f"which holds {', '.join(dicts)} (a translation data directory?)" if dicts
                                 else "which holds no dictionary")
                    raise InputError(
                        f"{path} is missing: --task language_modeling reads the data directory's dict.txt, and "
                        f"{root} is a directory {found}. Binarize the text with `fairseq-preprocess --only-source "
                        f"--trainpref TRAIN.txt --validpref VALID.txt --destdir DATA` (or preprocess/debian_lm.sh) "
                        f"and pass DATA.")
            return original(cls, args, **kwargs)

        return setup_dictionary

    patch(LanguageModelingTask, "setup_dictionary", build)


class _NumpyWithCompat:
    """numpy as a fairseq module sees it, plus numpy 1's ``np.compat.long`` (``int``), which numpy 2
    removed; every other attribute is numpy's own."""

    def __init__(self, numpy_module):
        from types import SimpleNamespace

        self._numpy = numpy_module
        self.compat = SimpleNamespace(long=int)

    def __getattr__(self, name):
        return getattr(self._numpy, name)


def fix_numpy2_compat_long() -> None:
    """``fairseq/data/token_block_dataset.py`` line 125 (``TokenBlockDataset._build_slice_indices`` with
    ``--sample-break-mode eos``: the language-modelling task's ``build_dataset_for_inference``, that is
    ``fairseq-interactive`` and the hub's ``sample``/``score`` of every language model) and
    ``fairseq/data/language_pair_dataset.py`` line 292 (``--num-buckets``) name ``np.compat.long``,
    which numpy 2 removed (``AttributeError: module 'numpy' has no attribute 'compat'``). The
    ``np`` of those two fairseq modules (only theirs; numpy itself is not touched) now also has
    ``compat.long``, numpy 1's ``int``. Test: ``tests/test_lm_cli.py`` (fairseq-interactive, the hub)."""
    import numpy

    from fairseq.data import language_pair_dataset, token_block_dataset

    if hasattr(numpy, "compat"):  # numpy 1: nothing to do
        return
    for module in (token_block_dataset, language_pair_dataset):
        patch(module, "np", _NumpyWithCompat, keep_doc=False)


def fix_mismatched_pair_files() -> None:
    """``fairseq/data/language_pair_dataset.py`` lines 234-237 (``LanguagePairDataset.__init__``, which
    every translation-style task builds: ``translation``, fairseq's others, and this plugin's)
    ``assert len(src) == len(tgt), "Source and target must contain the same number of examples"``:
    source and target text of different line counts, binarized side by side by ``fairseq-preprocess``
    (which does not compare them), reached ``fairseq-train`` as an ``AssertionError`` under a 57-line
    traceback that names neither file. Now an :class:`~fairseq_tpr.errors.InputError` names both
    binarized files (:func:`dataset_file`) and their example counts and says how to fix the text.
    Test: ``tests/test_lost_examples.py``."""
    from fairseq.data import LanguagePairDataset

    from fairseq_tpr.errors import InputError

    def build(original):
        def __init__(self, src, src_sizes, src_dict, tgt=None, *args, **kwargs):
            if tgt is not None and len(src) != len(tgt):
                src_file, tgt_file = dataset_file(src) or "the source side", dataset_file(tgt) or "the target side"
                raise InputError(
                    f"{src_file} has {len(src):,} examples and {tgt_file} {len(tgt):,}: a source and its target must "
                    f"have one line each, in the same order. Make the two text files the same length (wc -l) and "
                    f"binarize them again (fairseq-preprocess)")
            original(self, src, src_sizes, src_dict, tgt, *args, **kwargs)

        return __init__

    patch(LanguagePairDataset, "__init__", build)


def dataset_file(dataset):
    """The file a fairseq dataset reads (``PREFIX.bin``/``.idx`` of a binarized split, the text of a
    ``--dataset-impl raw`` one), looking through wrappers (``.dataset``), concatenations
    (``.datasets``) and source-target pairs (``.src``, ``.tgt``), several joined by ' + '; None for a
    dataset built in memory."""
    for _ in range(32):  # wrappers nest a few levels; never loop on a cycle
        if dataset is None:
            return None
        if hasattr(dataset, "src") and hasattr(dataset, "tgt"):  # LanguagePairDataset
            files = [dataset_file(side) for side in (dataset.src, dataset.tgt) if side is not None]
            return " + ".join(files) if files and all(files) else None
        mmap_prefix, path = getattr(dataset, "_path", None), getattr(dataset, "path", None)
        if isinstance(mmap_prefix, str):
            return f"{mmap_prefix}.bin"
        if isinstance(path, str):
            return path if os.path.isfile(path) else f"{path}.bin"
        parts = getattr(dataset, "datasets", None)
        if isinstance(parts, (list, tuple)) and parts:
            files = [dataset_file(part) for part in parts]
            return " + ".join(files) if all(files) else None
        dataset = getattr(dataset, "dataset", None)
    return None


def signed_offset_dtype(max_int_to_represent):
    """The smallest signed integer type that holds ``max_int_to_represent`` (int32 or int64): offsets
    that ``TokenBlockDataset.__getitem__`` subtracts from must be able to go below 0."""
    import numpy as np

    if max_int_to_represent is not None and max_int_to_represent < 2 ** 31 - 1:
        return np.int32
    return np.int64


def fix_token_block_offsets() -> None:
    """``fairseq/data/token_block_dataset.py`` lines 136-140 (``_build_slice_indices``) store the block
    offsets as unsigned integers (``best_fitting_int_dtype``: uint16 up to 65,500 tokens), and
    ``__getitem__`` (lines 166-186) computes ``e - 2`` and ``e - 1`` on them: for a block of one token
    (an empty line under ``--sample-break-mode eos``, which is its ``</s>`` alone: what
    ``fairseq-interactive``, the hub and ``fairseq-tpr-roles dump --lines`` read) numpy wraps around,
    prints "overflow encountered in scalar subtract" and slices ``buffer[0:65535]`` where fairseq
    meant ``buffer[0:-1]``. The offsets of that module are now signed (:func:`signed_offset_dtype`,
    int32 below 2**31 tokens), so the subtraction is the Python slice fairseq wrote, without a
    warning; the token arrays themselves are untouched. Test: ``tests/test_lost_examples.py``."""
    from fairseq.data import token_block_dataset

    patch(token_block_dataset, "best_fitting_int_dtype", lambda original: signed_offset_dtype, keep_doc=False)


def fix_blocks_beyond_positions() -> None:
    """Examples longer than the model's positions, for every arch:

    * ``fairseq/tasks/fairseq_task.py`` lines 184-192 (``FairseqTask.filter_indices_by_size``, used by
      ``fairseq-train``, ``-validate`` and ``-generate``) raise a bare ``Exception("Size of sample #i is
      invalid ...")`` under a traceback. Now an :class:`~fairseq_tpr.errors.InputError`: one line with
      how many examples, of which file, the first one's size, the positions and the two ways out.
      With ``--skip-invalid-size-inputs-valid-test`` fairseq's own warning, with the count, stays.
    * ``fairseq/tasks/language_modeling.py`` line 366 (``eval_lm_dataloader``) always skips such
      examples (``ignore_invalid_inputs=True``): ``fairseq-eval-lm --tokens-per-sample 1024`` (the
      default) on a model of 64 positions skipped every block and printed "Loss (base 2): 0.0000,
      Perplexity: 1.00". Now, when the blocks are cut at ``--tokens-per-sample`` (``--sample-break-mode``
      none, complete or complete_doc) and some of them are longer than the model's positions, a
      :class:`~fairseq_tpr.errors.ConfigError` says how many and names the largest
      ``--tokens-per-sample`` that fits. (A split shorter than the positions is one block that fits,
      at any ``--tokens-per-sample``: nothing to refuse. Under ``eos`` a block is a line, whatever
      ``--tokens-per-sample``: fairseq's warning counts the lines it skips.)

    Generation is not touched: ``fairseq-interactive``, ``fairseq-generate`` and the hub clip to the
    model's positions as fairseq does. Tests: ``tests/test_lm_cli.py``, ``tests/test_lost_examples.py``."""
    import numpy as np
    from fairseq.tasks import FairseqTask
    from fairseq.tasks.language_modeling import LanguageModelingTask

    from fairseq_tpr.errors import ConfigError, InputError

    def build(original_filter):
        def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
            if ignore_invalid_inputs:
                return original_filter(self, indices, dataset, max_positions, ignore_invalid_inputs)
            kept, ignored = dataset.filter_indices_by_size(indices, max_positions)
            if len(ignored) > 0:
                where = dataset_file(dataset) or "the split"
                block_hint = (f"; a language model: --tokens-per-sample {max_positions} or less"
                              if isinstance(max_positions, int) else "")
                size = dataset.size(ignored[0])
                size = tuple(int(s) for s in size) if isinstance(size, (tuple, list, np.ndarray)) else int(size)
                raise InputError(
                    f"{len(ignored):,} example{'s' if len(ignored) > 1 else ''} of {where} "
                    f"{'are' if len(ignored) > 1 else 'is'} longer than the model's positions (max_positions "
                    f"{max_positions}; example #{ignored[0]} has size {size}): skip this example with "
                    f"--skip-invalid-size-inputs-valid-test (a warning counts what is left out){block_hint}")
            return kept

        return filter_indices_by_size

    patch(FairseqTask, "filter_indices_by_size", build)

    def build_eval(original_eval):
        def eval_lm_dataloader(self, dataset, *args, **kwargs):
            max_positions = kwargs.get("max_positions", args[2] if len(args) > 2 else None)
            tokens = self.args.tokens_per_sample
            sizes = getattr(dataset, "sizes", None)
            if (isinstance(max_positions, int) and tokens > max_positions and sizes is not None
                    and self.args.sample_break_mode in ("none", "complete", "complete_doc")):
                longer = int((np.asarray(sizes) > max_positions).sum())
                if longer:
                    raise ConfigError(
                        f"--tokens-per-sample {tokens} is above the positions of the model (max positions "
                        f"{max_positions}, as it was trained): {longer:,} of the {len(sizes):,} blocks are longer, "
                        f"and fairseq-eval-lm would skip them. Pass --tokens-per-sample {max_positions} or less "
                        f"(with --context-window to score each token with more context).")
            return original_eval(self, dataset, *args, **kwargs)

        return eval_lm_dataloader

    patch(LanguageModelingTask, "eval_lm_dataloader", build_eval)
