"""The plugin's criterions, registered by :func:`fairseq_tpr.register` (``--user-dir`` does not import
this folder)."""
