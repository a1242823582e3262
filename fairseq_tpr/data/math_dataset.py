"""Renamed to :mod:`fairseq_tpr.corpora.math_dataset`; ``python -m fairseq_tpr.data.math_dataset`` still runs it in this release."""
import runpy
import sys

if __name__ == "__main__":
    print("renamed: use python -m fairseq_tpr.corpora.math_dataset", file=sys.stderr)
    runpy.run_module("fairseq_tpr.corpora.math_dataset", run_name="__main__")
