"""Console scripts of fairseq_tpr (see ``entry_points`` in setup.py)."""
