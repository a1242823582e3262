"""Analysis of trained TPR models: capture of roles, fillers, TPRs and role attention
(:mod:`.capture`, :mod:`.dump`), role statistics (:mod:`.stats`), k-means role clusters
and plots (:mod:`.cluster`, :mod:`.plots`), the subcommands of ``fairseq-tpr-roles``
(:mod:`.roles`), the probe of Jiang et al. (:mod:`.probe`, run per layer by
:mod:`.layer_probe` for ``fairseq-tpr-probe``), STTR's Table IV similarity
(:mod:`.template_similarity`), learning curves and the results table of recipe runs
(:mod:`.learning_curve`, :mod:`.results_table`). See docs/analysis.md.
"""
from .capture import Capture, model_kind, recompute_attention, sites  # noqa: F401
from .dump import Dump, run_capture  # noqa: F401
