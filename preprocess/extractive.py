#!/usr/bin/env python
"""``python preprocess/extractive.py ARGS`` runs ``python -m fairseq_tpr.corpora.extractive ARGS`` (``--help`` lists every option)."""
import runpy

runpy.run_module("fairseq_tpr.corpora.extractive", run_name="__main__")
