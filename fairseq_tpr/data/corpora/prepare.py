"""Renamed to :mod:`fairseq_tpr.corpora.prepare`; ``python -m fairseq_tpr.data.corpora.prepare`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.prepare", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.prepare", run_name="__main__")
