"""Tasks and their datasets: a ``--task language_modeling`` data directory without its dictionary is
an ``error:`` line naming the file and the command that writes it, not a ``FileNotFoundError``
traceback; fairseq's datasets that name numpy 1's ``np.compat.long`` run under numpy 2.
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
