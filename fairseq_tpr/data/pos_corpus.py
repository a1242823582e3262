"""Renamed to :mod:`fairseq_tpr.corpora.pos`; ``python -m fairseq_tpr.data.pos_corpus`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.pos", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.pos", run_name="__main__")
