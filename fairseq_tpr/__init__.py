"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use with ``--user-dir fairseq_tpr`` (or ``import fairseq_tpr``). Importing registers every
architecture, criterion and scorer explicitly (fairseq's ``--user-dir`` only imports
``models/`` and ``tasks/`` by itself) and lets fairseq checkpoints load under torch's
default ``weights_only=True`` loading.
"""
from .checkpoint_safety import allow_fairseq_checkpoints

allow_fairseq_checkpoints()

from . import criterions, models  # noqa: E402,F401  (registration)
from . import scoring  # noqa: E402,F401  (registers --scoring rouge)
from . import tasks  # noqa: E402,F401

__version__ = "0.1.0"
