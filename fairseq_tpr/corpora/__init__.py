"""Corpus builders: raw material -> a data directory (text, subwords, binarized fairseq data).

One module per corpus, each runnable as ``python -m fairseq_tpr.corpora.NAME`` (``--help`` lists
its options); ``preprocess/NAME.sh`` is a one-line wrapper over it.

Summarization and translation releases, sharing the pipeline of :mod:`.prepare` (normalise,
truncate, subwords, ``fairseq-preprocess``): :mod:`.xsum`, :mod:`.cnndm`, :mod:`.wikihow`,
:mod:`.arxiv`, :mod:`.gigaword`, :mod:`.lcsts`, :mod:`.wmt14_en_de`; :mod:`.debian` builds two such
corpora from the Debian archive. :mod:`.rawio` reads raw files with errors that name the file and
line (:class:`~.rawio.CorpusError`, the error of every builder here); :mod:`.linefiles` reads the
line-aligned ``{split}.{src,tgt}`` layout.

Data flows one way: nothing here imports ``cli``, ``analysis``, ``scoring`` or ``models``.
"""
