#!/usr/bin/env python
"""``python preprocess/extract_features.py ARGS`` runs ``python -m fairseq_tpr.corpora.image_features ARGS`` (``--help`` lists every option)."""
import runpy

runpy.run_module("fairseq_tpr.corpora.image_features", run_name="__main__")
