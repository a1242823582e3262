"""Old home of the corpus builders, now :mod:`fairseq_tpr.corpora`: only the ``python -m`` alias :mod:`.prepare` is left."""
