"""Models registered with fairseq. fairseq's ``--user-dir`` imports this package (and ``tasks/``):
importing it registers its models and then the whole plugin (:func:`fairseq_tpr.register`:
criterions, the scorer, the checkpoint types, the fixes)."""
from .. import register
from . import matched_transformers, tp_transformer, tp_transformer_d, tp_transformer_lm  # noqa: F401
from . import atpl, nic  # noqa: F401
from . import sttr  # noqa: F401
from . import discourse_synthesizer  # noqa: F401

register()  # the criterions, the scorer, the checkpoint types and the fixes (fairseq_tpr/__init__.py)
