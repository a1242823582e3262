"""The plugin's tasks (``image_captioning``, ``template_summarization``, ``extractive_summarization``).

fairseq's ``--user-dir fairseq_tpr`` imports every file of ``tasks/`` (then of ``models/``): this
``__init__``, like ``models/__init__``, only calls :func:`fairseq_tpr.register`, the one entry point,
so that a task imported on its own comes with the whole plugin registered.
"""
from .. import register

register()
