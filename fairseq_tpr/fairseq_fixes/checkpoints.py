"""Checkpoints: atomic writes, damaged files read with a clear error, and a checkpoint that does not fit
the model or the data explained (dictionary fingerprints, sizes) instead of torch's trace.
"""

import torch

from .patching import patch


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

    from .. import checkpoint_io

    def build_save(original_save):
        def torch_persistent_save(obj, filename, async_write: bool = False):
            if async_write or not checkpoint_utils.PathManager.supports_rename(filename):
                return original_save(obj, filename, async_write=async_write)
            checkpoint_io.atomic_write(filename, lambda f: torch.save(obj, f))

        return torch_persistent_save

    def build_path_manager(path_manager):
        class AtomicCopyPathManager(path_manager):
            """fairseq's ``PathManager`` whose ``copy`` of a local file is atomic."""

            @staticmethod
            def copy(src_path: str, dst_path: str, overwrite: bool = False) -> bool:
                local = path_manager.supports_rename(src_path) and path_manager.supports_rename(dst_path)
                if not local or (not overwrite and os.path.exists(dst_path)):
                    return path_manager.copy(src_path, dst_path, overwrite=overwrite)
                checkpoint_io.atomic_copy(src_path, dst_path)
                return True

        return AtomicCopyPathManager

    patch(checkpoint_utils, "torch_persistent_save", build_save)
    patch(checkpoint_utils, "PathManager", build_path_manager, keep_doc=False)  # checkpoint_utils' own name only


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

    from .. import checkpoint_io
    from ..errors import CheckpointError

    logger = logging.getLogger(__name__)

    def build(original):
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

        return load_checkpoint_to_cpu

    patch(checkpoint_utils, "load_checkpoint_to_cpu", build)


def _data_dictionaries(data) -> str:
    """``DATA/dict.a.txt, DATA/dict.b.txt`` (what a data directory's dictionaries are), or DATA."""
    import glob
    import os

    if not data:
        return "the data directory"
    root = str(data).split(os.pathsep)[0]
    files = sorted(glob.glob(os.path.join(root, "dict*.txt")))
    return ", ".join(files) if files else root


def _training_dictionaries(path):
    """``(data directory, source dictionary file, target dictionary file)`` the checkpoint *path*
    was trained with, from its saved options (the files as ``DATA/dict.{lang}.txt``), or Nones."""
    import os

    from fairseq import checkpoint_utils

    try:
        task = checkpoint_utils.load_checkpoint_to_cpu(str(path))["cfg"]["task"]
        data = str(task["data"]).split(os.pathsep)[0]
        langs = [task.get("source_lang"), task.get("target_lang")]
    except Exception:  # noqa: BLE001  (only for the message)
        return None, None, None
    return (data, *(os.path.join(data, f"dict.{lang}.txt") if lang else None for lang in langs))


def fix_checkpoint_mismatch_load() -> None:
    """``fairseq/checkpoint_utils.py`` lines 437-513 (``load_model_ensemble_and_task``, used by
    ``fairseq-generate``/``-interactive``/``-validate`` and the hub API): a checkpoint that does
    not fit the data dies with a traceback that names neither the checkpoint nor the data: torch's
    ``RuntimeError: Error(s) in loading state_dict for TransformerModel: size mismatch for
    encoder.embed_tokens.weight ...`` (line 511) for a checkpoint of another dictionary size
    (another data directory or ``--task``), and ``IOError: Model file not found`` (line 448) for a
    missing one. We load the checkpoints one at a time (the same loop over ``filenames``, with the
    same task, set up from the first checkpoint when none is given) and raise instead a
    :class:`fairseq_tpr.errors.ConfigError` naming the checkpoint, the data directory's
    dictionaries, what differs and the fix, or an :class:`~fairseq_tpr.errors.InputError` for the
    missing file. A ``ConfigError`` of the plugin's own checks while the model is built from the
    checkpoint's options (its dictionary fingerprint, ``fairseq_tpr/models/checks.py``; the
    parameter shapes of the TP-Transformers) gets the checkpoint's name in front. Any other
    error is re-raised unchanged.

    ``fairseq/trainer.py`` lines 596-600 (``Trainer.load_checkpoint``: ``fairseq-train`` resuming
    or ``--restore-file``) replace whatever ``load_state_dict`` raised by a bare ``Exception("Cannot
    load model parameters from checkpoint ...")``: when what it replaced is one of the two errors
    above, we raise the same ``ConfigError`` instead. Test: ``tests/test_bad_flags.py``."""
    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer

    patch(checkpoint_utils, "load_model_ensemble_and_task", _ensemble_loader_that_explains)
    patch(Trainer, "load_checkpoint", _restore_that_explains)


def _does_not_fit(filename, error, data):
    """The ConfigError for *error* while checkpoint *filename* is loaded for the data directory *data*:
    the plugin's own ConfigError with the checkpoint (and data) named, torch's load error explained
    (:mod:`fairseq_tpr.checkpoint_mismatch`), or None for any other error."""
    from ..checkpoint_mismatch import explain, from_load_error
    from ..errors import ConfigError

    if isinstance(error, ConfigError):
        if str(filename) in str(error):
            return error
        dictionaries = _data_dictionaries(data)
        named = data and any(f in str(error) for f in dictionaries.split(", "))
        return ConfigError(f"checkpoint {filename}" + ("" if named or not data else f" (data: {dictionaries})")
                           + f": {error}")
    mismatch = from_load_error(str(error)) if isinstance(error, RuntimeError) else None
    if mismatch is not None:
        return ConfigError(explain(mismatch, checkpoint=filename, data=data or None,
                                   data_dictionaries=_data_dictionaries(data) if data else None,
                                   trained_on=_training_dictionaries(filename)))
    return None


def _missing_checkpoint(filename):
    """The InputError of a checkpoint path that does not exist, naming what its folder holds."""
    import os

    from ..errors import InputError

    folder = os.path.dirname(os.path.abspath(filename))
    found = sorted(n for n in os.listdir(folder) if n.endswith(".pt")) if os.path.isdir(folder) else []
    there = (f"{folder} holds {', '.join(found[:8])}" if found
             else f"{folder} holds no .pt file" if os.path.isdir(folder) else f"{folder} does not exist")
    return InputError(f"checkpoint {filename} does not exist ({there}): pass the path of a checkpoint "
                      f"(e.g. --path SAVE_DIR/checkpoint_best.pt)")


def _ensemble_loader_that_explains(original):
    """fairseq's ``load_model_ensemble_and_task``, one checkpoint at a time, its errors explained."""
    from ..errors import ConfigError

    def load_one(filename, arg_overrides, task, strict, suffix, num_shards, state):
        data = getattr(getattr(task, "cfg", None), "data", None) or (arg_overrides or {}).get("data")
        try:
            return original([filename], arg_overrides, task, strict, suffix, num_shards, state)
        except (ConfigError, RuntimeError) as error:
            clear = _does_not_fit(filename, error, data)
            if clear is None or clear is error:
                raise
            raise clear from None
        except OSError as error:
            if not str(error).startswith("Model file not found"):
                raise
            raise _missing_checkpoint(filename) from None

    def load_model_ensemble_and_task(filenames, arg_overrides=None, task=None, strict=True, suffix="",
                                     num_shards=1, state=None):
        if len(filenames) == 1:
            return load_one(filenames[0], arg_overrides, task, strict, suffix, num_shards, state)
        if state is not None or not filenames:  # fairseq's own assert, or nothing to load
            return original(filenames, arg_overrides, task, strict, suffix, num_shards, state)
        ensemble, cfg = [], None
        for filename in filenames:
            models, cfg, task = load_one(filename, arg_overrides, task, strict, suffix, num_shards, None)
            ensemble.extend(models)
        return ensemble, cfg, task

    return load_model_ensemble_and_task


def _restore_that_explains(original_restore):
    """fairseq's ``Trainer.load_checkpoint``, its bare "Cannot load model parameters" explained."""
    def load_checkpoint(self, filename, *args, **kwargs):
        try:
            return original_restore(self, filename, *args, **kwargs)
        except Exception as error:  # noqa: BLE001  (fairseq raises a bare Exception here)
            if type(error) is not Exception or not str(error).startswith("Cannot load model parameters"):
                raise
            clear = _does_not_fit(filename, error.__context__, self.cfg.task.data)
            if clear is None:
                raise
            raise clear from None

    return load_checkpoint
