"""Build registered models the way fairseq's CLIs do (arch presets applied), on a toy dictionary."""
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask

import fairseq_tpr

fairseq_tpr.register()  # as fairseq-train --user-dir fairseq_tpr does (also benchmarks/ use this module)


def toy_dictionary(n_symbols=20):
    d = Dictionary()
    for i in range(n_symbols):
        d.add_symbol(f"w{i}")
    d.finalize(padding_factor=1)
    return d


def build(arch, *extra, src_dict=None, tgt_dict=None, seed=0):
    """(model, task, args) for ``--arch arch`` plus extra CLI flags; dropout stays as the preset sets it."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, ["/dev/null", "--task", "translation", "--arch", arch, "--cpu", *extra]
    )
    src_dict = src_dict or toy_dictionary()
    tgt_dict = tgt_dict or src_dict
    task = TranslationTask(args, src_dict, tgt_dict)
    torch.manual_seed(seed)
    model = task.build_model(args)
    return model, task, args


def random_batch(d, bsz=3, src_len=7, tgt_len=6, seed=1, pad_first=True):
    """Left-padded sources and right-padded previous outputs with some padding in the batch."""
    g = torch.Generator().manual_seed(seed)
    low = d.nspecial
    src = torch.randint(low, len(d), (bsz, src_len), generator=g)
    src_lengths = torch.full((bsz,), src_len)
    if pad_first and bsz > 1:
        src[0, :2] = d.pad()  # left padding on the first sentence
        src_lengths[0] = src_len - 2
    src[:, -1] = d.eos()
    prev = torch.randint(low, len(d), (bsz, tgt_len), generator=g)
    prev[:, 0] = d.eos()
    return src, src_lengths, prev


def assert_dictionaries_normalised_together(model, *inputs, **kw_inputs):
    """``model`` (float64) in a training forward pass hands every role binding its r_hat normalised
    together with the others' (``DiscreteRoleBinding.together`` set when the binding runs, reset after);
    with ``role_bindings`` listing none (so nothing is handed over) each binding normalises its own
    dictionary. The loss (mean square of the output) and every gradient agree to 1e-12."""
    from fairseq_tpr.modules import DiscreteRoleBinding

    model.train()
    bindings = [m for m in model.modules() if isinstance(m, DiscreteRoleBinding)]
    handed = []
    hooks = [b.register_forward_pre_hook(lambda m, args: handed.append(m.together is not None)) for b in bindings]

    def grads():
        model.zero_grad()
        handed.clear()
        loss = model(*inputs, **kw_inputs)[0].pow(2).mean()
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None], list(handed)

    try:
        together = grads()
        model.role_bindings = lambda: ()  # the bindings on their own
        alone = grads()
    finally:
        del model.role_bindings
        for hook in hooks:
            hook.remove()
    assert bindings and together[2] == [True] * len(bindings) and alone[2] == [False] * len(bindings)
    assert all(b.together is None for b in bindings)
    torch.testing.assert_close(together[0], alone[0], atol=1e-12, rtol=1e-12)
    assert len(together[1]) == len(alone[1])
    for a, w in zip(together[1], alone[1]):
        torch.testing.assert_close(a, w, atol=1e-12, rtol=1e-12)


class CaptioningTask:
    """What the captioning models (``atpl*``, ``nic*``) read from their task in ``build_model``."""

    def __init__(self, dictionary, feature_dim):
        self.target_dictionary, self.source_dictionary, self.feature_dim = dictionary, None, feature_dim

        class cfg:
            data = "DATA"

        self.cfg = cfg


def decode_step_by_step(model, prev, encoder_out, reorder=None):
    """The decoder's output for ``prev`` (``B x T``) one position at a time through fairseq's incremental
    state, the steps concatenated (``B x T x ...``): what the teacher-forced full pass must equal. With
    ``reorder`` (a permutation of the batch), after the second step the cached state and the encoder output
    are reordered by it and then by its inverse, as beam search reorders them: the cache must follow."""
    state, steps = {}, []
    for t in range(prev.size(1)):
        steps.append(model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)[0])
        if reorder is not None and t == 1:
            perm = torch.tensor(reorder)
            for order in (perm, torch.argsort(perm)):
                model.decoder.reorder_incremental_state_scripting(state, order)
                encoder_out = model.encoder.reorder_encoder_out(encoder_out, order)
    return torch.cat(steps, dim=1)
