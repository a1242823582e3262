"""Corpus builders: raw material -> a data directory (text, subwords, binarized fairseq data).

One module per corpus, each runnable as ``python -m fairseq_tpr.corpora.NAME`` (``--help`` lists
its options); the scripts in ``preprocess/`` are one-line wrappers over them.

Summarization and translation releases, sharing the pipeline of :mod:`.prepare` (normalise,
truncate, subwords, ``fairseq-preprocess``): :mod:`.xsum`, :mod:`.cnndm`, :mod:`.wikihow`,
:mod:`.arxiv`, :mod:`.gigaword`, :mod:`.lcsts`, :mod:`.wmt14_en_de`; :mod:`.debian` builds two such
corpora (summarization, en-de) from the Debian archive.

Per system:

- TP-Transformer: :mod:`.math_dataset` (DeepMind's Mathematics Dataset, generated in its own venv
  or read from the release); :mod:`.synthetic` (the reversal task of the quick demo);
- STTR: :mod:`.template_retrieval` (BM25 templates, ``fairseq-tpr-retrieve-templates``) and
  :mod:`.templates` (binarizes them with a data-bin's source dictionary);
- ATPL: :mod:`.captions` (a raw captioning directory -> binarized), :mod:`.coco` (Karpathy's COCO
  splits + features), :mod:`.image_features` (ResNet-152 features of COCO images), :mod:`.shapes`
  (a synthetic captioning corpus with POS tags and scenes), :mod:`.pos` (CoNLL-U and word/TAG tagged
  corpora);
- discourse-tree attention: :mod:`.extractive` (documents, references and RST trees -> the
  extractive data directory), :mod:`.debian_extractive` (Debian documents in its input layout),
  :mod:`.manpages` (Debian manual pages: DESCRIPTION sentences -> the NAME line's summary, in that
  layout), :mod:`.sample_documents` (a seeded per-split sample of such a corpus, pages cut to their
  first sentences), :mod:`.rst_parse` (RST trees from the Feng & Hirst parser), :mod:`.rst_trees` (the tree
  files RST parsers write).

Shared: :mod:`.rawio` reads raw files with errors that name the file and line (a
:class:`~fairseq_tpr.errors.InputError`; a bad option of a builder is a
:class:`~fairseq_tpr.errors.ConfigError`); :mod:`.linefiles` reads the line-aligned
``{split}.{src,tgt}`` layout.

Data flows one way: modules here import the package root, ``modules/`` (tree maths) and ``data/``
(the formats they write), never ``models/``, ``scoring/``, ``analysis/`` or ``cli/``.
"""
