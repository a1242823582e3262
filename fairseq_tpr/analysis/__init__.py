"""Analysis of trained TPR models: capture of roles, fillers, TPRs and role attention
(:mod:`.capture`, :mod:`.dump`), role statistics (:mod:`.stats`), k-means role clusters
and plots (:mod:`.cluster`, :mod:`.plots`) and the probe of Jiang et al. (:mod:`.probe`).
The console scripts are ``fairseq-tpr-roles`` and ``fairseq-tpr-probe``; see docs/analysis.md.
"""
from .capture import Capture, CaptureMismatch, model_kind, recompute_attention, sites  # noqa: F401
from .dump import AnalysisError, Dump, run_capture  # noqa: F401
