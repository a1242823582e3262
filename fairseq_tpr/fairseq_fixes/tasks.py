"""Tasks and their datasets: a ``--task language_modeling`` data directory without its dictionary, and
source and target files of different lengths, are ``error:`` lines naming the files, not tracebacks;
fairseq's datasets that name numpy 1's ``np.compat.long`` run under numpy 2.
"""
import os


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

    original = LanguageModelingTask.setup_dictionary.__func__
    if getattr(original, "fairseq_tpr_fixed", False):
        return

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

    setup_dictionary.fairseq_tpr_fixed = True
    LanguageModelingTask.setup_dictionary = classmethod(setup_dictionary)


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
        if not isinstance(module.np, _NumpyWithCompat):
            module.np = _NumpyWithCompat(module.np)


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

    original = LanguagePairDataset.__init__
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def __init__(self, src, src_sizes, src_dict, tgt=None, *args, **kwargs):
        if tgt is not None and len(src) != len(tgt):
            src_file, tgt_file = dataset_file(src) or "the source side", dataset_file(tgt) or "the target side"
            raise InputError(
                f"{src_file} has {len(src):,} examples and {tgt_file} {len(tgt):,}: a source and its target must "
                f"have one line each, in the same order. Make the two text files the same length (wc -l) and "
                f"binarize them again (fairseq-preprocess)")
        original(self, src, src_sizes, src_dict, tgt, *args, **kwargs)

    __init__.fairseq_tpr_fixed = True
    __init__.fairseq_tpr_original = original
    __init__.__doc__ = original.__doc__
    LanguagePairDataset.__init__ = __init__


def dataset_file(dataset):
    """The file a fairseq dataset reads (``PREFIX.bin``/``.idx`` of a binarized split, the text of a
    ``--dataset-impl raw`` one), looking through wrappers (``.dataset``) and concatenations
    (``.datasets``, joined by ' + '); None for a dataset built in memory."""
    for _ in range(32):  # wrappers nest a few levels; never loop on a cycle
        if dataset is None:
            return None
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
