"""Grammar from TPR models: ATPL's POS tagger (Huang et al., Section 5), trained on the unbinding
vectors ``u_t`` of an ATPL sentence autoencoder (:mod:`.unbinding` dumps them,
:mod:`.tagger` trains and evaluates the tagger of
:class:`~fairseq_tpr.grammar.tagger_model.BiLSTMPosTagger`). The console scripts are
``fairseq-tpr-unbinding`` and ``fairseq-tpr-pos-tagger``; see docs/pos_tagging.md.
"""
