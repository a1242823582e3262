"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use with ``--user-dir fairseq_tpr`` (or ``import fairseq_tpr``). Importing registers every
architecture, criterion and scorer explicitly (fairseq's ``--user-dir`` only imports
``models/`` and ``tasks/`` by itself) and lets fairseq checkpoints load under torch's
default ``weights_only=True`` loading. It also fixes the fairseq bugs listed in ``fairseq_fixes.py``.
"""
import logging


class _OptionalTensorboardNotice(logging.Filter):
    """Drops fairseq's import-time "Please install tensorboardX" line (``fairseq/tasks/text_to_speech.py``):
    tensorboardX is optional (``pip install fairseq_tpr[logging]`` for ``--tensorboard-logdir``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Please install tensorboardX" not in record.getMessage()


# before fairseq's first import; under fairseq-train fairseq is imported (and has logged) already
logging.getLogger("fairseq.tasks.text_to_speech").addFilter(_OptionalTensorboardNotice())

from .checkpoint_safety import allow_fairseq_checkpoints  # noqa: E402
from .errors import install_excepthook  # noqa: E402
from .fairseq_fixes import apply_all as apply_fairseq_fixes  # noqa: E402

allow_fairseq_checkpoints()
install_excepthook()  # a FairseqTprError at the top of any command: one "error:" line, exit 2
apply_fairseq_fixes()  # fairseq bugs that change results (see fairseq_fixes.py)

from . import criterions, models  # noqa: E402,F401  (registration)
from . import scoring  # noqa: E402,F401  (registers --scoring rouge)
from . import tasks  # noqa: E402,F401

__version__ = "0.1.0"
