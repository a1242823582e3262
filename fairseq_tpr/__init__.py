"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use with ``--user-dir fairseq_tpr`` (or ``import fairseq_tpr``). Importing registers every
architecture, criterion and scorer explicitly (fairseq's ``--user-dir`` only imports
``models/`` and ``tasks/`` by itself) and lets fairseq checkpoints load under torch's
default ``weights_only=True`` loading. It also fixes fairseq's CPU n-gram blocking
(``fairseq_fixes.py``).
"""
from .checkpoint_safety import allow_fairseq_checkpoints
from .fairseq_fixes import fix_ngram_repeat_block

allow_fairseq_checkpoints()
fix_ngram_repeat_block()  # --no-repeat-ngram-size blocks nothing on CPU otherwise (see fairseq_fixes.py)

from . import criterions, models  # noqa: E402,F401  (registration)
from . import scoring  # noqa: E402,F401  (registers --scoring rouge)
from . import tasks  # noqa: E402,F401

__version__ = "0.1.0"
