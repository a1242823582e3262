"""Tasks registered with fairseq. fairseq's ``--user-dir`` imports this package (and ``models/``):
importing it registers its tasks and then the whole plugin (:func:`fairseq_tpr.register`)."""
from .. import register
from . import image_captioning  # noqa: F401
from . import template_summarization  # noqa: F401
from . import extractive_summarization  # noqa: F401

register()  # the criterions, the scorer, the checkpoint types and the fixes (fairseq_tpr/__init__.py)
