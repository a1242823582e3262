"""Resuming: a resumed run takes the batches of the straight run, and a finished run started again takes
no update.
"""
from .patching import patch


def fix_resume_epoch_iterator() -> None:
    """``fairseq/checkpoint_utils.py`` line 287 (``load_checkpoint``) resumes with
    ``trainer.get_train_iterator(epoch=itr_state["epoch"])`` and ``fairseq/tasks/fairseq_task.py``
    lines 277-318 (``get_batch_iterator``) then build the batches of a new ``EpochBatchIterator``
    with ``numpy_seed(seed + epoch)`` (the order of equal-length sentences, hence which sentences
    share a batch) for the resumed epoch ``e``. A straight run builds that iterator once, in epoch
    1, and reuses it in every later epoch (``dataset_to_epoch_iter``, ``can_reuse_epoch_itr``):
    its frozen batches are epoch 1's, shuffled per epoch with ``self.seed + epoch``
    (``fairseq/data/iterators.py`` ``ordered_batches``). So a run resumed in epoch 2 or later
    (``EpochBatchIterator.load_state_dict`` fast-forwards through the wrong batches) trains on
    other batches than the straight run from the first resumed update on; resumed in epoch 1 it
    happens to agree. With ``--update-ordered-indices-seed`` the iterator's seed also was
    ``seed + e`` instead of ``seed + 1``.

    We build such an iterator as the straight run does, for epoch 1 (same seeds, same frozen
    batches, same dummy batch), then set its epoch and the dataset's epoch to ``e`` as fairseq
    would; ``load_state_dict`` then fast-forwards to the saved position. Iterators that are not
    reused across epochs are left alone, because there fairseq rebuilds every epoch's batches
    with that epoch's seed in both runs: sharded data, ``--update-epoch-batch-itr``,
    ``rebuild_batches``, datasets with ``can_reuse_epoch_itr_across_epochs = False`` and tasks
    that override ``get_batch_iterator``. Torch's RNG needs no fix: ``Trainer.train_step``
    reseeds it with ``seed + num_updates`` before every update (``fairseq/trainer.py`` line
    1374). Test: ``tests/test_resume.py``."""
    import logging

    from fairseq.tasks import FairseqTask
    from fairseq.trainer import Trainer

    logger = logging.getLogger("fairseq.trainer")  # fairseq's own message, from its logger

    def build(original):
        def get_train_iterator(self, epoch, combine=True, load_dataset=True, data_selector=None,
                               shard_batch_itr=True, disable_iterator_cache=False):
            if epoch <= 1 or type(self.task).get_batch_iterator is not FairseqTask.get_batch_iterator:
                return original(self, epoch, combine, load_dataset, data_selector, shard_batch_itr,
                                disable_iterator_cache)
            if load_dataset:  # as fairseq's get_train_iterator does, before looking at the dataset
                logger.info("loading train data for epoch {}".format(epoch))
                self.task.load_dataset(self.cfg.dataset.train_subset, epoch=epoch, combine=combine,
                                       data_selector=data_selector, tpu=self.tpu)
            dataset = self.task.dataset(self.cfg.dataset.train_subset)
            reused_across_epochs = (
                not disable_iterator_cache
                and not self.cfg.dataset.update_epoch_batch_itr
                and self.task.can_reuse_epoch_itr(dataset)
                and not getattr(self.task.cfg, "rebuild_batches", False)
                and not self.task.has_sharded_data(self.cfg.dataset.train_subset)
            )
            if not reused_across_epochs or dataset in getattr(self.task, "dataset_to_epoch_iter", {}):
                return original(self, epoch, combine, False, data_selector, shard_batch_itr,
                                disable_iterator_cache)
            epoch_itr = original(self, 1, combine, False, data_selector, shard_batch_itr,
                                 disable_iterator_cache)
            epoch_itr.epoch = epoch  # what EpochBatchIterator(epoch=epoch) would have set
            dataset.set_epoch(epoch)
            return epoch_itr

        return get_train_iterator

    patch(Trainer, "get_train_iterator", build)


def fix_finished_run_resume() -> None:
    """``fairseq_cli/train.py`` lines 195-207 (``main``) call ``train`` for the next epoch and
    ``train`` (lines 323-350) takes an update before it asks ``validate_and_save`` (lines 384-401)
    whether ``--max-update`` or ``--stop-time-hours`` is reached. A run restored from a
    ``checkpoint_last.pt`` written when it stopped at ``--max-update N`` therefore takes update N+1
    and saves it, for every arch: rerunning a finished command changes its checkpoints (30 -> 31
    updates; the LM table's ``transformer_lm-s1`` shows 6,001).

    ``fairseq_cli/train.py`` calls ``logging.basicConfig`` when imported; a program that registers
    the plugin before importing it (rather than ``fairseq-train``, which has imported it already)
    keeps its own logging set-up (:func:`_import_without_logging_setup`).

    We ask first: when the restored run has already reached ``--max-update`` (or ``--stop-time-hours``),
    ``train`` logs so and returns ``should_stop`` without taking a batch; the checkpoints are left as
    they are. Otherwise fairseq's ``train`` runs unchanged. Test: ``tests/test_lost_examples.py``."""
    import logging
    import math

    train_cli = _import_without_logging_setup("fairseq_cli.train")

    def build(original):
        logger = logging.getLogger("fairseq_cli.train")  # fairseq's own logger for the training loop

        def train(cfg, trainer, task, epoch_itr):
            num_updates = trainer.get_num_updates()
            max_update = cfg.optimization.max_update or math.inf
            stop_hours = cfg.optimization.stop_time_hours
            if num_updates >= max_update:
                logger.info(f"nothing to train: the restored run is at update {num_updates}, --max-update "
                            f"{cfg.optimization.max_update}; the checkpoints are left as they are")
                return [None], True
            if stop_hours > 0 and trainer.cumulative_training_time() / (60 * 60) > stop_hours:
                logger.info(f"nothing to train: the restored run has trained "
                            f"{trainer.cumulative_training_time() / 3600:.2f} hours, --stop-time-hours {stop_hours}")
                return [None], True
            return original(cfg, trainer, task, epoch_itr)

        return train

    patch(train_cli, "train", build)


def _import_without_logging_setup(name: str):
    """``importlib.import_module(name)`` for a fairseq command module that calls ``logging.basicConfig``
    at import: a root logger without handlers gets a ``NullHandler`` for the import, so that call
    configures nothing; it is removed after."""
    import importlib
    import logging

    root = logging.getLogger()
    guard = None if root.handlers else logging.NullHandler()
    if guard is not None:
        root.addHandler(guard)
    try:
        return importlib.import_module(name)
    finally:
        if guard is not None:
            root.removeHandler(guard)
