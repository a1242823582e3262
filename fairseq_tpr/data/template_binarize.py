"""Renamed to :mod:`fairseq_tpr.corpora.templates`; ``python -m fairseq_tpr.data.template_binarize`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.templates", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.templates", run_name="__main__")
