"""One explanation of a checkpoint that does not fit its model (``fairseq_tpr/checkpoint_mismatch.py``):
the plugin's models compare shapes themselves, fairseq's loaders meet torch's error text; both read the
same mismatch out of the same difference, and one function words it."""
from torch import nn

from fairseq_tpr.checkpoint_mismatch import explain, from_load_error, from_shapes


class _Net(nn.Module):
    def __init__(self, vocab, ffn, extra=False):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, 4)
        self.fc1 = nn.Linear(4, ffn)
        if extra:
            self.r_proj = nn.Linear(4, 4)


def test_shapes_and_torchs_error_give_the_same_mismatch():
    model, checkpoint = _Net(25, 8), _Net(24, 16, extra=True).state_dict()
    by_shapes = from_shapes({k: v.shape for k, v in model.state_dict().items()},
                            {k: v.shape for k, v in checkpoint.items()})
    try:
        model.load_state_dict(checkpoint)
    except RuntimeError as error:
        by_text = from_load_error(str(error))
    assert by_text is not None and by_shapes is not None
    assert sorted(by_text.resized) == sorted(by_shapes.resized) == [
        ("embed_tokens.weight", (24, 4), (25, 4)), ("fc1.bias", (16,), (8,)), ("fc1.weight", (16, 4), (8, 4))]
    assert by_text.unexpected == by_shapes.unexpected == ["r_proj.bias", "r_proj.weight"]
    assert by_text.missing == by_shapes.missing == []
    assert from_load_error("CUDA out of memory") is None
    assert from_shapes({"a": (1,)}, {"a": (1,), "version": (1,)}) is None  # fairseq's bookkeeping buffers


def test_the_message_names_what_differs_and_the_fix():
    model, checkpoint = _Net(25, 8), _Net(24, 16, extra=True).state_dict()
    mismatch = from_shapes({k: v.shape for k, v in model.state_dict().items()},
                           {k: v.shape for k, v in checkpoint.items()})
    text = explain(mismatch, checkpoint="ckpt.pt", data="bin", data_dictionaries="bin/dict.en.txt, bin/dict.de.txt",
                   trained_on=("old", "old/dict.en.txt", "old/dict.de.txt"))
    assert text.startswith("checkpoint ckpt.pt does not fit the model built for bin")
    assert "its dictionary has 24 symbols (embed_tokens.weight: checkpoint (24, 4) vs model (25, 4)) but the data " \
           "directory's (bin/dict.en.txt, bin/dict.de.txt) have 25" in text
    assert "fc1.weight: checkpoint (16, 4) vs model (8, 4) -> check --*-ffn-embed-dim" in text
    assert "unexpected parameters 2, e.g. r_proj.bias" in text
    assert "`fairseq-preprocess --srcdict old/dict.en.txt --tgtdict old/dict.de.txt`" in text
    plain = explain(from_load_error(_torch_error(_Net(25, 8), checkpoint)))
    assert plain.startswith("The checkpoint does not fit the model built: ") and "it holds another architecture" in plain


def _torch_error(model, state):
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        return str(error)
    raise AssertionError("loaded")
