"""Data-parallel training where fairseq assumes CUDA: torchrun and fairseq's own launch on the CPU,
and DDP's device ids.
"""

from .patching import patch

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

    def build(original):
        def _infer_torch_distributed_launch_init(cfg):
            if torch.cuda.device_count() > 0:
                return original(cfg)
            cfg.distributed_init_method = "env://"
            cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
            cfg.distributed_rank = int(os.environ["RANK"])
            cfg.device_id = 0  # the CPU
            cfg.distributed_no_spawn = True  # torchrun started the processes

        return _infer_torch_distributed_launch_init

    patch(distributed_utils, "_infer_torch_distributed_launch_init", build)


def _cpu_launch_spawns_here(cfg) -> bool:
    """Prepare ``cfg`` (a full fairseq config) for data-parallel training on CPU; return whether
    this process must start the workers itself (see :func:`cpu_distributed_launch`)."""
    import logging
    import os
    import socket

    from ..errors import ConfigError

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


def cpu_distributed_launch(cfg, main, kwargs) -> bool:
    """The CPU launch of :func:`~.launch.fix_call_main`: starts the workers and returns True where
    fairseq's ``call_main`` would not train on the CPU (below); returns False (nothing done) where
    fairseq's own ``call_main`` is right.

    ``fairseq/distributed/utils.py`` lines 368-387 (``call_main``) and
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

    on_cpu = cfg.common.cpu or not torch.cuda.is_available()
    if cfg.common.tpu or not on_cpu or not _cpu_launch_spawns_here(cfg):
        return False
    dt = cfg.distributed_training
    kwargs["start_rank"] = 0
    dt.distributed_rank = None  # distributed_main gives process i rank i
    torch.multiprocessing.spawn(fn=distributed_utils.distributed_main, args=(main, cfg, kwargs),
                                nprocs=dt.distributed_world_size, join=True)
    return True


def fix_ddp_device_ids_on_cpu() -> None:
    """``fairseq/models/distributed_fairseq_model.py`` lines 60-63: ``--ddp-backend pytorch_ddp``
    (the default) and ``c10d`` give torch's ``DistributedDataParallel``
    ``device_ids=[args.device_id]`` and ``output_device=args.device_id`` even for a model on the
    CPU, which torch refuses ("device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules"). We leave both out when the
    module's parameters are on the CPU. Test: ``tests/test_distributed_cpu.py``."""
    from fairseq.models import distributed_fairseq_model

    def build(original):
        def DistributedDataParallel(module, device_ids=None, output_device=None, **kwargs):
            if all(p.device.type == "cpu" for p in module.parameters()):
                device_ids = output_device = None
            return original(module, device_ids=device_ids, output_device=output_device, **kwargs)

        return DistributedDataParallel

    patch(distributed_fairseq_model, "DistributedDataParallel", build)
