"""The plugin's models (one file per system; the shared pieces beside them, docs/architecture.md).

fairseq's ``--user-dir fairseq_tpr`` imports the package, then every file of ``tasks/`` and of
``models/``: this ``__init__`` (like ``tasks/__init__``) is where fairseq's commands reach
:func:`fairseq_tpr.register`, the one entry point, which registers the whole plugin (its one list of
registering modules, the checkpoint types, the fixes, the error hook). Nothing else happens here.
"""
from .. import register

register()
