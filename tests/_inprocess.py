"""``fairseq-preprocess`` and ``fairseq-train`` in the test process (no ~5 s import per call),
with the global state they leave behind put back."""
import logging
import random
from pathlib import Path

import numpy as np
import torch
from fairseq import checkpoint_utils, options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq.logging import metrics

import fairseq_tpr
from fairseq_tpr.corpora.synthetic import write_reversal_task

USER_DIR = Path(fairseq_tpr.__file__).resolve().parent


def preprocess_in_process(args):
    """``fairseq_cli.preprocess.main(args)``, closing the FileHandler it adds to destdir/preprocess.log."""
    from fairseq_cli import preprocess

    log = logging.getLogger("fairseq_cli.preprocess")
    handlers = list(log.handlers)
    try:
        preprocess.main(args)
    finally:
        for h in log.handlers[:]:
            if h not in handlers:
                log.removeHandler(h)
                h.close()


def binarize_pairs(raw, dest, *, test=False):
    """``raw/{train,valid}.{src,tgt}`` (and ``test`` with ``test=True``) binarized with a joined
    dictionary into ``dest``, which is returned."""
    raw = Path(raw)
    argv = ["--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--workers", "1",
            "--trainpref", str(raw / "train"), "--validpref", str(raw / "valid"), "--destdir", str(dest)]
    preprocess_in_process(options.get_preprocessing_parser().parse_args(
        argv + (["--testpref", str(raw / "test")] if test else [])))
    return Path(dest)


def binarize_reversal(root, n_train, n_valid=20, n_test=1):
    """The synthetic reversal task under ``root/raw``, binarized (joined dictionary) into
    ``root/bin``, which is returned."""
    root = Path(root)
    write_reversal_task(root / "raw", n_train, n_valid, n_test)
    return binarize_pairs(root / "raw", root / "bin")


def binarize_lm(root, splits):
    """``{split: [lines]}`` written to ``root/raw/{split}.txt`` and binarized with ``fairseq-preprocess
    --only-source`` (``dict.txt``, as ``--task language_modeling`` reads it) into ``root/bin``, which is
    returned."""
    root = Path(root)
    (root / "raw").mkdir(parents=True)
    argv = ["--only-source", "--workers", "1", "--destdir", str(root / "bin")]
    for split, lines in splits.items():
        (root / "raw" / f"{split}.txt").write_text("".join(line + "\n" for line in lines))
        argv += ["--trainpref" if split == "train" else f"--{split}pref", str(root / "raw" / f"{split}.txt")]
    args = options.get_preprocessing_parser().parse_args(argv)
    preprocess_in_process(args)
    return root / "bin"


def train_argv(data, save_dir, arch, criterion, max_update, *extra):
    """``fairseq-train`` arguments for a tiny CPU run on :func:`binarize_reversal`'s data."""
    return [
        str(data), "--user-dir", str(USER_DIR), "--task", "translation", "--source-lang", "src",
        "--target-lang", "tgt", "--arch", arch, "--criterion", criterion, "--label-smoothing", "0.1",
        "--optimizer", "adam", "--lr", "1e-3", "--max-update", str(max_update), "--save-dir", str(save_dir),
        "--no-epoch-checkpoints", "--cpu", "--seed", "1", "--num-workers", "0",
        "--required-batch-size-multiple", "1", "--log-format", "simple", "--log-interval", "1",
        "--no-progress-bar", *map(str, extra),
    ]


def _forget_best():
    if hasattr(checkpoint_utils.save_checkpoint, "best"):
        del checkpoint_utils.save_checkpoint.best


def _handlers():
    """logger -> its handlers, for every logger that exists."""
    loggers = [logging.getLogger()] + [v for v in logging.root.manager.loggerDict.values()
                                       if isinstance(v, logging.Logger)]
    return {logger: list(logger.handlers) for logger in loggers}


def train(argv):
    """``fairseq_cli.train.main`` on *argv*, as ``fairseq-train`` runs it. Python's ``random``
    starts from one fixed seed (fairseq never seeds it); the RNG states, fairseq's metrics and
    ``save_checkpoint.best`` are put back afterwards."""
    from fairseq_cli import train as fairseq_train

    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state()
    handlers = _handlers()
    _forget_best()
    random.seed(12345)
    try:
        distributed_utils.call_main(cfg, fairseq_train.main)
    finally:
        metrics.reset()
        _forget_best()
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
        for logger, before in _handlers().items():  # --log-file: fairseq adds a FileHandler per run
            for h in before:
                if h not in handlers.get(logger, ()):
                    logger.removeHandler(h)
                    h.close()
