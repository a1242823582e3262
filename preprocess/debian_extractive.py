#!/usr/bin/env python
"""``python preprocess/debian_extractive.py ARGS`` runs ``python -m fairseq_tpr.corpora.debian_extractive ARGS`` (``--help`` lists every option)."""
import runpy

runpy.run_module("fairseq_tpr.corpora.debian_extractive", run_name="__main__")
