"""fairseq's ``call_main``, the start of every fairseq command: one wrapper for the checks and the
launch that fairseq gets wrong (``--fp16``/``--bf16`` devices, data-parallel training on the CPU).
"""
from .distributed import cpu_distributed_launch
from .patching import patch
from .precision import check_half_precision_devices


def fix_call_main() -> None:
    """``fairseq/distributed/utils.py`` ``call_main(cfg, main, **kwargs)``: first
    :func:`~.precision.check_half_precision_devices` (``--bf16`` without its implied ``--tpu``;
    half precision on the CPU an error), then :func:`~.distributed.cpu_distributed_launch` (one
    process per rank on the CPU, where fairseq would start none), else fairseq's own
    ``call_main``. Tests: ``tests/test_fairseq_fixes.py``, ``tests/test_distributed_cpu.py``."""
    from fairseq.distributed import utils as distributed_utils

    def build(original):
        def call_main(cfg, main, **kwargs):
            check_half_precision_devices(cfg)
            if cpu_distributed_launch(cfg, main, kwargs):
                return None
            return original(cfg, main, **kwargs)

        return call_main

    patch(distributed_utils, "call_main", build)
