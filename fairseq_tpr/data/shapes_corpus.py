"""Renamed to :mod:`fairseq_tpr.corpora.shapes` (the corpus) and :mod:`fairseq_tpr.scoring.shapes_eval`
(``--evaluate``); ``python -m fairseq_tpr.data.shapes_corpus`` still runs them in this release."""
import runpy
import sys

if __name__ == "__main__":
    evaluate = any(a.split("=")[0] == "--evaluate" for a in sys.argv[1:])
    new = "fairseq_tpr.scoring.shapes_eval" if evaluate else "fairseq_tpr.corpora.shapes"
    print(f"renamed: use python -m {new}", file=sys.stderr)
    runpy.run_module(new, run_name="__main__")
