"""Criterions (``--user-dir`` does not import this folder: :func:`fairseq_tpr.register` does)."""
from . import cross_entropy_with_roles, label_smoothed_cross_entropy_with_roles  # noqa: F401
from . import label_smoothed_cross_entropy_with_template_mse  # noqa: F401
from . import extractive_bce  # noqa: F401
