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
import re

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


_TORCHRUN_VARS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
_CPU_LAUNCH = ("torchrun --nproc_per_node N $(which fairseq-train) DATA --user-dir fairseq_tpr ... "
               "--cpu --distributed-world-size N")


def fix_torchrun_without_cuda() -> None:
    """``fairseq/distributed/utils.py`` line 91 (``_infer_torch_distributed_launch_init``, used
    for a torchrun launch): ``cfg.device_id = cfg.distributed_rank % torch.cuda.device_count()``
    divides by zero on a machine without CUDA, so ``torchrun ... fairseq-train`` dies before it
    trains. Without a GPU there is no device to pick: we take device 0 (a device_id above 0 would
    make line 84 call ``torch.cuda.set_device``). Where CUDA devices exist fairseq's code runs
    unchanged. Test: ``tests/test_distributed_cpu.py``."""
    import os

    import torch
    from fairseq.distributed import utils as distributed_utils

    original = distributed_utils._infer_torch_distributed_launch_init
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def _infer_torch_distributed_launch_init(cfg):
        if torch.cuda.device_count() > 0:
            return original(cfg)
        cfg.distributed_init_method = "env://"
        cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
        cfg.distributed_rank = int(os.environ["RANK"])
        cfg.device_id = 0  # the CPU
        cfg.distributed_no_spawn = True  # torchrun started the processes

    _infer_torch_distributed_launch_init.fairseq_tpr_fixed = True
    distributed_utils._infer_torch_distributed_launch_init = _infer_torch_distributed_launch_init


def _cpu_launch_spawns_here(cfg) -> bool:
    """Prepare ``cfg`` (a full fairseq config) for data-parallel training on CPU; return whether
    this process must start the workers itself (see :func:`fix_cpu_distributed_launch`)."""
    import logging
    import os
    import socket

    from .errors import ConfigError

    log = logging.getLogger(__name__)
    dt = cfg.distributed_training
    torchrun = all(key in os.environ for key in _TORCHRUN_VARS)
    if (torchrun and dt.distributed_init_method is None and dt.distributed_world_size == 1
            and int(os.environ["WORLD_SIZE"]) > 1):
        log.info("torchrun started %s processes: --distributed-world-size %s", os.environ["WORLD_SIZE"],
                 os.environ["WORLD_SIZE"])
        dt.distributed_world_size = int(os.environ["WORLD_SIZE"])
    if dt.distributed_init_method is None and dt.distributed_world_size <= 1:
        return False  # one process, not distributed
    if dt.distributed_backend == "nccl":
        log.info("training on CPU: --distributed-backend gloo instead of nccl")
        dt.distributed_backend = "gloo"
    if dt.distributed_no_spawn or (torchrun and dt.distributed_init_method is None):
        return False  # the launcher started one process per rank; fairseq's code takes it from here
    if torchrun:
        raise ConfigError(
            f"under torchrun, --distributed-init-method {dt.distributed_init_method} without "
            "--distributed-no-spawn would start more processes inside each worker: leave "
            f"--distributed-init-method out and let torchrun set the ranks: {_CPU_LAUNCH}")
    if int(os.environ.get("SLURM_NNODES", "1")) > 1 or (dt.distributed_rank or 0) != 0:
        raise ConfigError(
            f"--distributed-rank {dt.distributed_rank} (or a Slurm job on several nodes): on CPU, "
            "fairseq's own process spawning serves one node and starts every rank there; for "
            "several nodes run torchrun on each, with --nnodes, --node_rank, --master_addr and "
            f"--master_port: {_CPU_LAUNCH}")
    if dt.distributed_init_method is None:
        port = dt.distributed_port
        if port <= 0:
            with socket.socket() as sock:
                sock.bind(("localhost", 0))
                port = sock.getsockname()[1]
        dt.distributed_init_method = f"tcp://localhost:{port}"
    return True


def fix_cpu_distributed_launch() -> None:
    """``fairseq/distributed/utils.py`` lines 368-387 (``call_main``) and
    ``fairseq/dataclass/configs.py`` line 273 (``--distributed-backend`` defaults to nccl), when
    training on CPU (``--cpu``, or no CUDA) with more than one process:

    * nccl has no CPU tensors: we switch nccl to gloo.
    * fairseq's own spawn starts ``min(torch.cuda.device_count(), world size)`` processes (line
      383), none without a GPU, so ``--cpu --distributed-world-size 2 --distributed-init-method
      tcp://...`` exits 0 having trained nothing; without an init method, line 159 asserts that
      the world size fits the GPUs. We start one process per rank on this node instead (on CPU
      fairseq's spawn serves one node) and raise a ``FairseqTprError`` giving the torchrun line
      where that cannot be right: a start rank other than 0 or a Slurm job on several nodes (the
      ranks live on other nodes), or ``--distributed-init-method`` under torchrun without
      ``--distributed-no-spawn``.
    * the default ``--distributed-world-size`` is the number of GPUs, 1 on CPU, so under torchrun
      fairseq returns at line 54 and every process trains alone on all the data: we take
      torchrun's WORLD_SIZE.

    Nothing changes with GPUs (and without ``--cpu``) or on TPUs. ``fairseq-train`` imports the
    plugin before ``call_main`` (``options.parse_args_and_arch`` -> ``import_user_module``), in
    every torchrun process; the processes spawned here get the fixes they need from ``cfg`` and from
    ``fairseq_cli/train.py``'s ``main``, which imports the plugin before building the trainer.
    ``fairseq-hydra-train`` imports it only in ``main``, too late for this fix (README: Data-parallel
    training). Test: ``tests/test_distributed_cpu.py``."""
    import torch
    from fairseq.distributed import utils as distributed_utils

    original = distributed_utils.call_main
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def call_main(cfg, main, **kwargs):
        on_cpu = cfg.common.cpu or not torch.cuda.is_available()
        if cfg.common.tpu or not on_cpu or not _cpu_launch_spawns_here(cfg):
            return original(cfg, main, **kwargs)
        dt = cfg.distributed_training
        kwargs["start_rank"] = 0
        dt.distributed_rank = None  # distributed_main gives process i rank i
        torch.multiprocessing.spawn(fn=distributed_utils.distributed_main, args=(main, cfg, kwargs),
                                    nprocs=dt.distributed_world_size, join=True)

    call_main.fairseq_tpr_fixed = True
    call_main.__doc__ = original.__doc__
    distributed_utils.call_main = call_main


def _half_precision_flag(common):
    """The half-precision training flag a run was given (the most specific name), or None."""
    for flag, on in (("--memory-efficient-bf16", common.memory_efficient_bf16), ("--bf16", common.bf16),
                     ("--memory-efficient-fp16", common.memory_efficient_fp16), ("--fp16", common.fp16)):
        if on:
            return flag
    return None


def fix_half_precision_devices() -> None:
    """``fairseq/options.py`` lines 199-201 (``--bf16`` implies ``--tpu``) and
    ``fairseq/optim/fp16_optimizer.py`` (``_FP16OptimizerMixin.build_fp32_params`` puts the float32
    master weights on ``torch.cuda.current_device()``), for ``fairseq-train``:

    * ``--bf16`` (or ``--memory-efficient-bf16``) on a GPU: fairseq turns on ``--tpu`` with it, and
      the trainer then asks torch_xla for a device and dies with ``'NoneType' object has no
      attribute 'xla_device'``. Where torch_xla is not installed no TPU run can be meant, so we
      turn the implied ``tpu`` off again: the GPU trains in bfloat16 through fairseq's own path
      (the model cast by the trainer, ``FP16Optimizer`` with float32 master weights and no loss
      scaling). With torch_xla installed nothing changes.
    * ``--fp16``/``--bf16`` (and the memory-efficient forms) on the CPU (``--cpu``, or torch sees
      no GPU): fairseq's optimizer dies inside torch ("Torch not compiled with CUDA enabled") or
      in torch_xla; we raise a ``ConfigError`` naming the flag instead.

    ``fairseq-train`` imports the plugin before ``call_main`` (as for
    :func:`fix_cpu_distributed_launch`), so the checks run before any process is spawned.
    ``fairseq-hydra-train`` never implies ``tpu``. Tests: ``tests/test_fairseq_fixes.py`` (the
    flags, on CPU) and ``tests/test_cuda.py`` (``fairseq-train --bf16`` and ``--fp16`` on a GPU)."""
    import importlib.util

    from fairseq.distributed import utils as distributed_utils

    from fairseq_tpr.errors import ConfigError

    original = distributed_utils.call_main
    if getattr(original, "fairseq_tpr_half_precision", False):
        return

    def call_main(cfg, main, **kwargs):
        common = cfg.common
        flag = _half_precision_flag(common)
        if common.bf16 and common.tpu and importlib.util.find_spec("torch_xla") is None:
            common.tpu = False  # implied by --bf16 (fairseq/options.py), impossible without torch_xla
        if flag and not common.tpu and (common.cpu or not torch.cuda.is_available()):
            where = "--cpu was given" if common.cpu else "torch sees no CUDA GPU"
            raise ConfigError(f"{flag} trains on a CUDA GPU (fairseq's half-precision optimizer keeps its "
                              f"float32 weights there), but {where}: drop {flag} to train in float32 on the "
                              f"CPU, or run on a GPU")
        return original(cfg, main, **kwargs)

    call_main.fairseq_tpr_fixed = getattr(original, "fairseq_tpr_fixed", False)
    call_main.fairseq_tpr_half_precision = True
    call_main.__doc__ = original.__doc__
    distributed_utils.call_main = call_main


def fix_ddp_device_ids_on_cpu() -> None:
    """``fairseq/models/distributed_fairseq_model.py`` lines 60-63: ``--ddp-backend pytorch_ddp``
    (the default) and ``c10d`` give torch's ``DistributedDataParallel``
    ``device_ids=[args.device_id]`` and ``output_device=args.device_id`` even for a model on the
    CPU, which torch refuses ("device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules"). We leave both out when the
    module's parameters are on the CPU. Test: ``tests/test_distributed_cpu.py``."""
    from fairseq.models import distributed_fairseq_model

    original = distributed_fairseq_model.DistributedDataParallel
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def DistributedDataParallel(module, device_ids=None, output_device=None, **kwargs):
        if all(p.device.type == "cpu" for p in module.parameters()):
            device_ids = output_device = None
        return original(module, device_ids=device_ids, output_device=output_device, **kwargs)

    DistributedDataParallel.fairseq_tpr_fixed = True
    distributed_fairseq_model.DistributedDataParallel = DistributedDataParallel


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


_STATE_DICT_ERROR = "Error(s) in loading state_dict for"
_SIZE_MISMATCH = re.compile(r"size mismatch for (\S+): copying a param with shape torch\.Size\(\[([\d, ]*)\]\) from "
                            r"checkpoint, the shape in current model is torch\.Size\(\[([\d, ]*)\]\)")
_KEYS = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: (.*?)\.\s*$", re.M)


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


def _state_dict_mismatch_message(path, error: BaseException, data) -> str:
    """The :class:`ConfigError` message for torch's ``load_state_dict`` error *error* when
    checkpoint *path* is loaded into the model built for the data directory *data*."""
    text = str(error)
    resized = _SIZE_MISMATCH.findall(text)
    keys = {kind: names.split(", ") for kind, names in _KEYS.findall(text)}
    trained_on, source_dict, target_dict = _training_dictionaries(path)
    parts = []
    dictionary = [(name, theirs, ours) for name, theirs, ours in resized
                  if "embed_tokens" in name or "output_projection" in name]
    if dictionary:
        name, theirs, ours = dictionary[0]
        parts.append(f"its dictionary has {theirs.split(',')[0]} symbols ({name}: checkpoint ({theirs}), model "
                     f"({ours})) but the data directory's ({_data_dictionaries(data)}) have {ours.split(',')[0]}: "
                     f"the model was trained on other data (another data directory or --task)")
    other = [f"{name}: checkpoint ({theirs}) vs model ({ours})" for name, theirs, ours in resized
             if (name, theirs, ours) not in dictionary[:1] and "embed_tokens" not in name
             and "output_projection" not in name]
    if other:
        parts.append("other sizes differ (" + "; ".join(other[:3]) + ")")
    if keys:
        parts.append("it holds another architecture (" + "; ".join(
            f"{kind.lower()} parameters {len(names)}, e.g. {names[0]}" for kind, names in keys.items()) + ")")
    if other or keys:
        parts.append("build the checkpoint's architecture (fairseq-train --restore-file: its --arch and sizes; "
                     "fairseq-generate: no --model-overrides that change them)")
    if not parts:
        parts.append(" ".join(text.split())[:300])
    fix = ("pass the data directory the model was trained on"
           + (f" ({trained_on}, per the checkpoint)" if trained_on else "")
           + ", or binarize the input with its dictionaries (`fairseq-preprocess --srcdict "
           + (f"{source_dict} --tgtdict {target_dict}`)" if source_dict and target_dict
              else "DICT --tgtdict DICT` with the training data's dict.*.txt)"))
    return f"checkpoint {path} does not fit the model built for {data or 'the data'}: " + "; ".join(parts) + \
        (f"; {fix}" if dictionary else "")


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
    import os

    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer

    from .errors import ConfigError, InputError

    original = checkpoint_utils.load_model_ensemble_and_task
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def does_not_fit(filename, error, data):
        """The ConfigError for *error* while checkpoint *filename* is loaded for *data*, or None."""
        if isinstance(error, ConfigError):
            if str(filename) in str(error):
                return error
            dictionaries = _data_dictionaries(data)
            named = data and any(f in str(error) for f in dictionaries.split(", "))
            return ConfigError(f"checkpoint {filename}" + ("" if named or not data else f" (data: {dictionaries})")
                               + f": {error}")
        if isinstance(error, RuntimeError) and str(error).startswith(_STATE_DICT_ERROR):
            return ConfigError(_state_dict_mismatch_message(filename, error, data))
        return None

    def load_one(filename, arg_overrides, task, strict, suffix, num_shards, state):
        data = getattr(getattr(task, "cfg", None), "data", None) or (arg_overrides or {}).get("data")
        try:
            return original([filename], arg_overrides, task, strict, suffix, num_shards, state)
        except (ConfigError, RuntimeError) as error:
            clear = does_not_fit(filename, error, data)
            if clear is None or clear is error:
                raise
            raise clear from None
        except OSError as error:
            if not str(error).startswith("Model file not found"):
                raise
            folder = os.path.dirname(os.path.abspath(filename))
            found = sorted(n for n in os.listdir(folder) if n.endswith(".pt")) if os.path.isdir(folder) else []
            there = (f"{folder} holds {', '.join(found[:8])}" if found
                     else f"{folder} holds no .pt file" if os.path.isdir(folder) else f"{folder} does not exist")
            raise InputError(f"checkpoint {filename} does not exist ({there}): pass the path of a checkpoint "
                             f"(e.g. --path SAVE_DIR/checkpoint_best.pt)") from None

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

    load_model_ensemble_and_task.fairseq_tpr_fixed = True
    load_model_ensemble_and_task.fairseq_tpr_original = original
    load_model_ensemble_and_task.__doc__ = original.__doc__
    checkpoint_utils.load_model_ensemble_and_task = load_model_ensemble_and_task

    original_restore = Trainer.load_checkpoint

    def load_checkpoint(self, filename, *args, **kwargs):
        try:
            return original_restore(self, filename, *args, **kwargs)
        except Exception as error:  # noqa: BLE001  (fairseq raises a bare Exception here)
            if type(error) is not Exception or not str(error).startswith("Cannot load model parameters"):
                raise
            clear = does_not_fit(filename, error.__context__, self.cfg.task.data)
            if clear is None:
                raise
            raise clear from None

    load_checkpoint.fairseq_tpr_fixed = True
    load_checkpoint.__doc__ = original_restore.__doc__
    Trainer.load_checkpoint = load_checkpoint


def fix_per_parameter_adam() -> None:
    """``fairseq/optim/adam.py``: ``FairseqAdam.__init__`` (lines 66 and 77) builds the module's
    ``Adam``, whose ``step`` (lines 159-239) loops over the parameters in Python, about eight kernel
    launches per parameter tensor (the optimizer step of an fp32 GPU run is a chain of a few
    thousand tiny launches). After fairseq's ``__init__`` has built that optimizer, we make it a
    :class:`~fairseq_tpr.multi_tensor_adam.MultiTensorAdam` (its subclass with the same update in
    ``torch._foreach_*`` calls, equal in float64, the same state dict): only ``step`` changes, so
    speed changes and results do not. fairseq's CUDA ``FusedAdam``, where installed, is left as
    fairseq chose it. (Renaming the module's ``Adam`` instead would break fairseq's own
    ``super(Adam, self)`` in ``Adam.__init__``.) ``FAIRSEQ_TPR_ADAM_LOOP=1`` in the environment keeps
    fairseq's loop, for measuring the difference (``benchmarks/fairseq_train_speed.py``). Test:
    ``tests/test_multi_tensor_adam.py``."""
    import os

    from fairseq.optim.adam import Adam, FairseqAdam

    from .multi_tensor_adam import MultiTensorAdam

    original = FairseqAdam.__init__
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def __init__(self, cfg, params):
        original(self, cfg, params)
        if type(self._optimizer) is Adam and os.environ.get("FAIRSEQ_TPR_ADAM_LOOP") != "1":
            self._optimizer.__class__ = MultiTensorAdam

    __init__.fairseq_tpr_fixed = True
    __init__.__doc__ = original.__doc__
    FairseqAdam.__init__ = __init__


def apply_all() -> None:
    """Install every fix of this module (idempotent)."""
    fix_ngram_repeat_block()
    fix_float64_softmax()
    fix_torchrun_without_cuda()
    fix_cpu_distributed_launch()
    fix_half_precision_devices()
    fix_ddp_device_ids_on_cpu()
    fix_resume_epoch_iterator()
    fix_atomic_checkpoint_writes()
    fix_damaged_checkpoint_load()
    fix_checkpoint_mismatch_load()
    fix_per_parameter_adam()
