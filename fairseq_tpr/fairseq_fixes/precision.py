"""``--fp16``/``--bf16``: the device fairseq picks for them (the implied ``--tpu`` of ``--bf16``, half
precision on the CPU).
"""
import torch


def _half_precision_flag(common):
    """The half-precision training flag a run was given (the most specific name), or None."""
    for flag, on in (("--memory-efficient-bf16", common.memory_efficient_bf16), ("--bf16", common.bf16),
                     ("--memory-efficient-fp16", common.memory_efficient_fp16), ("--fp16", common.fp16)):
        if on:
            return flag
    return None


def check_half_precision_devices(cfg) -> None:
    """The half-precision check of :func:`~.launch.fix_call_main`, before any process starts.

    ``fairseq/options.py`` lines 199-201 (``--bf16`` implies ``--tpu``) and
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

    ``fairseq-train`` imports the plugin before ``call_main`` (as for the CPU launch), so the checks
    run before any process is spawned. ``fairseq-hydra-train`` never implies ``tpu``. Tests:
    ``tests/test_fairseq_fixes.py`` (the flags, on CPU) and ``tests/test_cuda.py`` (``fairseq-train
    --bf16`` and ``--fp16`` on a GPU)."""
    import importlib.util

    from fairseq_tpr.errors import ConfigError

    common = cfg.common
    flag = _half_precision_flag(common)
    if common.bf16 and common.tpu and importlib.util.find_spec("torch_xla") is None:
        common.tpu = False  # implied by --bf16 (fairseq/options.py), impossible without torch_xla
    if flag and not common.tpu and (common.cpu or not torch.cuda.is_available()):
        where = "--cpu was given" if common.cpu else "torch sees no CUDA GPU"
        raise ConfigError(f"{flag} trains on a CUDA GPU (fairseq's half-precision optimizer keeps its "
                          f"float32 weights there), but {where}: drop {flag} to train in float32 on the "
                          f"CPU, or run on a GPU")
