"""Tasks registered with fairseq (fairseq's ``--user-dir`` imports this package; so does ``fairseq_tpr/__init__.py``)."""
from . import image_captioning  # noqa: F401
from . import template_summarization  # noqa: F401
from . import extractive_summarization  # noqa: F401
