"""Renamed to :mod:`fairseq_tpr.corpora.debian`; ``python -m fairseq_tpr.data.debian_corpus`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.debian", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.debian", run_name="__main__")
