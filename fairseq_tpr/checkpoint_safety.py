"""Let fairseq checkpoints load under torch's default ``torch.load(weights_only=True)``.

A fairseq checkpoint holds, besides tensors and containers: an ``argparse.Namespace``
(legacy ``args``) and numpy scalars/arrays (logged metrics such as ``best_loss`` in the
``extra_state``). We allow exactly those types; anything else, in particular a pickle that
would call a function such as ``os.system``, is still refused by torch. We never set
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``: a checkpoint is untrusted input.
"""
import argparse

import numpy as np
import torch


def _numpy_types():
    types = [np.ndarray, np.dtype]
    try:  # numpy >= 1.25 / 2.x
        from numpy.core.multiarray import _reconstruct, scalar  # noqa: F401  (numpy<2 name)
    except ImportError:  # pragma: no cover
        _reconstruct = scalar = None
    try:
        from numpy._core.multiarray import _reconstruct as _reconstruct2, scalar as scalar2
        _reconstruct, scalar = _reconstruct2, scalar2
    except ImportError:  # numpy < 2
        pass
    types += [f for f in (_reconstruct, scalar) if f is not None]
    # dtype classes (numpy >= 1.25 pickles dtypes as e.g. numpy.dtypes.Float64DType)
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None:
        types += [getattr(dtypes, n) for n in dir(dtypes) if n.endswith("DType")]
    return types


SAFE_GLOBALS = [argparse.Namespace] + _numpy_types()


def allow_fairseq_checkpoints() -> None:
    """Register the types of :data:`SAFE_GLOBALS` with ``torch.serialization.add_safe_globals``."""
    torch.serialization.add_safe_globals(SAFE_GLOBALS)
