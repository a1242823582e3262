"""fairseq's Python n-gram blocking (CPU path of --no-repeat-ngram-size) sees the generated tokens."""
import torch
from fairseq.ngram_repeat_block import NGramRepeatBlock

import fairseq_tpr  # noqa: F401  (applies the fix)

PAD, BOS = 1, 2


def test_repeated_bigram_is_blocked_in_a_padded_buffer():
    blocker = NGramRepeatBlock(2, use_extension=False)
    # buffer of fairseq's SequenceGenerator: BOS, generated 5 6 5 (step 3), then padding
    tokens = torch.tensor([[BOS, 5, 6, 5, PAD, PAD, PAD], [BOS, 7, 8, 9, PAD, PAD, PAD]])
    lprobs = torch.zeros(2, 12)
    out = blocker(tokens, lprobs, bsz=1, beam_size=2, step=3)
    # row 0 ends in "5": "5 6" was generated before, so 6 is banned; row 1 has no repeat
    assert torch.isinf(out[0, 6]) and out[0, 6] < 0
    assert torch.isfinite(out[0, [i for i in range(12) if i != 6]]).all()
    assert torch.isfinite(out[1]).all()


def test_trigram_blocking_ignores_the_padding():
    blocker = NGramRepeatBlock(3, use_extension=False)
    # "the the" followed by "the" would repeat the trigram "the the the" only after it occurred
    tokens = torch.tensor([[BOS, 4, 4, 4, 4, PAD, PAD, PAD]])
    out = blocker(tokens, torch.zeros(1, 6), bsz=1, beam_size=1, step=4)
    assert torch.isinf(out[0, 4])
    # before the trigram has occurred once, nothing is banned (padding never matches)
    tokens = torch.tensor([[BOS, 4, 4, PAD, PAD, PAD, PAD, PAD]])
    out = blocker(tokens, torch.zeros(1, 6), bsz=1, beam_size=1, step=2)
    assert torch.isfinite(out).all()
