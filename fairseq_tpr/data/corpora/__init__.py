"""Readers for the standard raw releases of summarization and translation corpora, and the shared
pipeline (:mod:`.prepare`) that turns them into binarized fairseq data."""
