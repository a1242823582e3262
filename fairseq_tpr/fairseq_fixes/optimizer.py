"""fairseq's Adam: speed, not results.
"""

from .patching import patch


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

    from ..multi_tensor_adam import MultiTensorAdam

    def build(original):
        def __init__(self, cfg, params):
            original(self, cfg, params)
            if type(self._optimizer) is Adam and os.environ.get("FAIRSEQ_TPR_ADAM_LOOP") != "1":
                self._optimizer.__class__ = MultiTensorAdam

        return __init__

    patch(FairseqAdam, "__init__", build)
