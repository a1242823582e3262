"""Renamed to :mod:`fairseq_tpr.corpora.synthetic`; ``python -m fairseq_tpr.data.synthetic`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.synthetic", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.synthetic", run_name="__main__")
