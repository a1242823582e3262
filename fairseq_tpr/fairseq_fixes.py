"""Fixes for fairseq bugs that change results, applied once when ``fairseq_tpr`` is imported.

This is the one place that patches fairseq. Each patch is one function below, named in
:func:`apply_all`, with a docstring naming the upstream file and line it fixes, and a test in
``tests/test_fairseq_fixes.py`` (or a test file named in the docstring) that fails without it.

``--no-repeat-ngram-size`` without fairseq's CUDA extension (on CPU, or with a fairseq wheel
built without ``ngram_repeat_block_cuda``): ``SequenceGenerator`` hands ``NGramRepeatBlock``
the whole token buffer (``bsz*beam x (max_len + 2)``, padding after ``step``), and the Python
path compares the buffer's LAST n-1 entries, which are padding, with the earlier n-grams, so
nothing is ever blocked. We give the Python path the tokens generated so far,
``tokens[:, : step + 1]``, which is what the CUDA kernel reads (it indexes by ``step``).
Slicing an already-sliced buffer is a no-op, so the fix is harmless where fairseq is right.
"""
import torch
import torch.nn.functional as F
from fairseq.ngram_repeat_block import NGramRepeatBlock


def fix_ngram_repeat_block() -> None:
    original = NGramRepeatBlock._no_repeat_ngram
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def _no_repeat_ngram(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        return original(self, tokens[:, : step + 1], lprobs, bsz, beam_size, step)

    _no_repeat_ngram.fairseq_tpr_fixed = True
    _no_repeat_ngram.__doc__ = original.__doc__
    NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram


def fix_float64_softmax() -> None:
    """``fairseq/utils.py`` lines 514-525 (``softmax``, ``log_softmax``) always return float32:
    ``F.softmax(x, dim=dim, dtype=torch.float32)``. That is right for fp16/bf16, but a float64
    model (``model.double()``) gets its attention weights (``MultiheadAttention``'s hand-written
    path, used in incremental decoding) and its output distribution (``get_normalized_probs``,
    used by beam search) rounded to float32, so incremental and full decoding, or batch 1 and
    batch N, differ by 1e-7 instead of 1e-16. We compute in float64 when the input is float64
    and leave every other dtype to fairseq's code."""
    from fairseq import utils

    for name in ("softmax", "log_softmax"):
        original = getattr(utils, name)
        if getattr(original, "fairseq_tpr_fixed", False):
            continue

        def keeps_float64(x, dim: int, onnx_trace: bool = False, _original=original, _name=name):
            if x.dtype == torch.float64 and not onnx_trace:
                return getattr(F, _name)(x, dim=dim)
            return _original(x, dim, onnx_trace=onnx_trace)

        keeps_float64.fairseq_tpr_fixed = True
        keeps_float64.fairseq_tpr_original = original
        keeps_float64.__doc__ = original.__doc__
        setattr(utils, name, keeps_float64)


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

    original = Trainer.get_train_iterator
    if getattr(original, "fairseq_tpr_fixed", False):
        return

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

    get_train_iterator.fairseq_tpr_fixed = True
    get_train_iterator.fairseq_tpr_original = original
    get_train_iterator.__doc__ = original.__doc__
    Trainer.get_train_iterator = get_train_iterator


def fix_atomic_checkpoint_writes() -> None:
    """``fairseq/checkpoint_utils.py`` line 139 (``save_checkpoint``) writes
    ``checkpoint_last.pt``, ``checkpoint_best.pt`` and the epoch/update checkpoints after the first
    one with ``PathManager.copy`` (``shutil.copyfile``: in place, not atomic), and
    ``torch_persistent_save`` (line 578) writes ``NAME.tmp`` and renames it without an fsync,
    retrying ``torch.save`` into the same half-written handle. A kill or a full disk during the
    copy leaves a truncated ``checkpoint_last.pt``, which the next ``fairseq-train`` resumes from.

    Every local write of a checkpoint now goes through :func:`fairseq_tpr.checkpoint_io.atomic_write`
    (``NAME.tmp`` in the same directory, flush, fsync, ``os.replace``, fsync of the directory): the
    final name holds the old checkpoint or the new one, never part of one; a write that raises
    removes its ``.tmp`` and re-raises (no retry). Remote paths (ioPath handlers) and
    ``--write-checkpoints-asynchronously`` keep fairseq's code. Test:
    ``tests/test_checkpoint_damage.py``."""
    import os

    from fairseq import checkpoint_utils

    from . import checkpoint_io

    original_save = checkpoint_utils.torch_persistent_save
    if getattr(original_save, "fairseq_tpr_fixed", False):
        return
    path_manager = checkpoint_utils.PathManager

    def torch_persistent_save(obj, filename, async_write: bool = False):
        if async_write or not path_manager.supports_rename(filename):
            return original_save(obj, filename, async_write=async_write)
        checkpoint_io.atomic_write(filename, lambda f: torch.save(obj, f))

    class AtomicCopyPathManager(path_manager):
        """fairseq's ``PathManager`` whose ``copy`` of a local file is atomic."""

        @staticmethod
        def copy(src_path: str, dst_path: str, overwrite: bool = False) -> bool:
            local = path_manager.supports_rename(src_path) and path_manager.supports_rename(dst_path)
            if not local or (not overwrite and os.path.exists(dst_path)):
                return path_manager.copy(src_path, dst_path, overwrite=overwrite)
            checkpoint_io.atomic_copy(src_path, dst_path)
            return True

    torch_persistent_save.fairseq_tpr_fixed = True
    torch_persistent_save.fairseq_tpr_original = original_save
    checkpoint_utils.torch_persistent_save = torch_persistent_save
    checkpoint_utils.PathManager = AtomicCopyPathManager  # checkpoint_utils' own name only


def fix_damaged_checkpoint_load() -> None:
    """``fairseq/checkpoint_utils.py`` line 340 (``load_checkpoint_to_cpu``, used by
    ``fairseq-train``'s resume, ``fairseq-generate``/``-interactive``/``-validate`` and the hub
    API) dies on a damaged checkpoint with torch's internals: ``RuntimeError: PytorchStreamReader
    failed reading zip archive`` (truncated), a bare ``EOFError`` (empty), ``OSError: [Errno 22]``
    or ``KeyError`` (other damage), none naming the file or what to do. When the load fails and
    :func:`fairseq_tpr.checkpoint_io.diagnose` finds the file's bytes damaged, we raise
    :class:`fairseq_tpr.errors.CheckpointError` naming the file, the damage and the newest intact
    ``checkpoint*.pt`` of the same directory to pass with ``--restore-file``/``--path``; with
    ``FAIRSEQ_TPR_CHECKPOINT_FALLBACK=1`` we load that one instead, with a warning. A failure
    on an intact file (e.g. ``torch.load``'s ``weights_only`` refusal of a checkpoint that would
    run code) is re-raised unchanged; nothing is ever unpickled without ``weights_only``. The
    existence check in ``Trainer.load_checkpoint`` (``PathManager.isfile``) is unchanged, so a
    damaged ``checkpoint_last.pt`` is never skipped silently. Test:
    ``tests/test_checkpoint_damage.py``."""
    import logging
    import os

    from fairseq import checkpoint_utils

    from . import checkpoint_io
    from .errors import CheckpointError

    logger = logging.getLogger(__name__)

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
        try:
            return original(path, arg_overrides, load_on_all_ranks)
        except Exception as error:
            damage = checkpoint_io.diagnose(path, error) if os.path.isfile(path) else None
            if damage is None:
                raise
            alternative = checkpoint_io.newest_intact_sibling(path)
            if alternative is not None and checkpoint_io.fallback_enabled():
                logger.warning(f"checkpoint {path} is {damage}; loading the newest intact checkpoint "
                               f"{alternative} instead ({checkpoint_io.FALLBACK_ENV} is set)")
                return original(str(alternative), arg_overrides, load_on_all_ranks)
            raise CheckpointError(checkpoint_io.damage_message(path, damage, alternative)) from None

    load_checkpoint_to_cpu.fairseq_tpr_fixed = True
    load_checkpoint_to_cpu.fairseq_tpr_original = original
    load_checkpoint_to_cpu.__doc__ = original.__doc__
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


def apply_all() -> None:
    """Install every fix of this module (idempotent)."""
    fix_ngram_repeat_block()
    fix_float64_softmax()
    fix_resume_epoch_iterator()
    fix_atomic_checkpoint_writes()
    fix_damaged_checkpoint_load()
