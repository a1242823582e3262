"""What fairseq's beam search gets wrong without its CUDA extensions.

``--no-repeat-ngram-size`` without fairseq's CUDA extension (on CPU, or with a fairseq wheel
built without ``ngram_repeat_block_cuda``): ``SequenceGenerator`` hands ``NGramRepeatBlock``
the whole token buffer (``bsz*beam x (max_len + 2)``, padding after ``step``), and the Python
path compares the buffer's LAST n-1 entries, which are padding, with the earlier n-grams, so
nothing is ever blocked. We give the Python path the tokens generated so far,
``tokens[:, : step + 1]``, which is what the CUDA kernel reads (it indexes by ``step``).
Slicing an already-sliced buffer is a no-op, so the fix is harmless where fairseq is right.
"""
import types

from fairseq.ngram_repeat_block import NGramRepeatBlock

from .patching import patch


def _renamed(function, name: str):
    """A copy of ``function`` (same code, globals, defaults) whose ``__name__`` is ``name``."""
    copy = types.FunctionType(function.__code__, function.__globals__, name, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__, copy.__annotations__, copy.__doc__ = (
        function.__kwdefaults__, dict(function.__annotations__), function.__doc__)
    return copy


def fix_ngram_repeat_block() -> None:
    """``fairseq/ngram_repeat_block.py`` line 96 (``NGramRepeatBlock._no_repeat_ngram``, the Python
    path that ``forward`` takes at line 88), called from ``fairseq/sequence_generator.py`` line 422
    with the whole token buffer: it gets ``tokens[:, : step + 1]`` instead (module docstring).

    fairseq's method stays on the class as ``_no_repeat_ngram_fairseq`` and the replacement calls it
    as a method of ``self``, which TorchScript compiles (``torch.jit.script`` of a
    ``SequenceGenerator``, fairseq's ``tests/test_sequence_generator.py``); an unbound call with
    ``self`` as first argument does not compile, and TorchScript names a method it compiles on
    demand by its function's ``__name__``, hence the renamed copy. Tests: ``tests/test_fairseq_fixes.py``,
    ``tests/test_torchscript.py``."""
    def build(original):
        NGramRepeatBlock._no_repeat_ngram_fairseq = _renamed(original, "_no_repeat_ngram_fairseq")

        def _no_repeat_ngram(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
            return self._no_repeat_ngram_fairseq(tokens[:, : step + 1], lprobs, bsz, beam_size, step)

        return _no_repeat_ngram

    patch(NGramRepeatBlock, "_no_repeat_ngram", build)
