"""Models registered with fairseq (imported explicitly by ``fairseq_tpr/__init__.py``)."""
from . import matched_transformers, tp_transformer, tp_transformer_d  # noqa: F401
from . import atpl, nic  # noqa: F401
from . import sttr  # noqa: F401
from . import discourse_synthesizer  # noqa: F401
