"""What ``benchmarks/throughput.py`` measures: the pairs of models (each TP variant and its matched
fairseq transformer, per ``--size``), building one the fairseq way (``parse_args_and_arch``, the task's
``build_model``), the random batches, the generator and the optimizer of a timed step."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


ROOT = os.path.dirname(HERE)

# the sizes the CPU tables of docs/results.md train (recipes/summarization/_models.sh SIZE=small)


_SMALL = ("--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128 "
          "--encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 --encoder-attention-heads 4 "
          "--decoder-attention-heads 4")

# size -> list of (TP model, matched transformer): an arch name, optionally followed by fairseq-train flags


PAIRS = {
    "paper": [("tp_transformer_math", "transformer_tp_math"), ("tp_transformer_d", "transformer_tp_d")],
    "small": [("tp_transformer_math_small", "transformer_tp_math_small"),
              (f"tp_transformer_d {_SMALL} --num-roles 25 --role-dim 32", f"transformer_tp_d {_SMALL}")],
    "tiny": [("tp_transformer_tiny", "transformer_tp_tiny"), ("tp_transformer_d_tiny", "transformer_tp_tiny")],
    "lm-paper": [("tp_transformer_lm", "transformer_lm_tp"), ("tp_transformer_d_lm", "transformer_lm_tp")],
    "lm-small": [("tp_transformer_lm_small", "transformer_lm_tp_small"),
                 ("tp_transformer_d_lm_small", "transformer_lm_tp_small")],
    "lm-tiny": [("tp_transformer_lm_tiny", "transformer_lm_tp_tiny"),
                ("tp_transformer_d_lm_tiny", "transformer_lm_tp_tiny")],
}

# per-size defaults for the step counts (the paper-size CPU run takes ~6-7 minutes on 2 cores)


DEFAULTS = {
    "paper": dict(warmup=2, steps=6, gen_batches=3, gen_warmup=1),
    "small": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "tiny": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "lm-paper": dict(warmup=2, steps=6, gen_batches=3, gen_warmup=1),
    "lm-small": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "lm-tiny": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
}


def is_language_model(arch):
    """Whether ``arch`` (a name, optionally with flags) is one of the language-model presets."""
    return arch.split()[0].startswith(("transformer_lm", "tp_transformer_lm", "tp_transformer_d_lm"))


# ``--before-after``: a model string ending in this token is built and stepped as before issue 35's
# changes (the discrete binding's eager torch ops, ``--role-kernel eager``; fairseq's per-parameter Adam
# loop), in the same process as the current code


BEFORE = "@before"


def short(arch):
    """A table label: the arch name, with ``+flags`` when fairseq-train flags follow it."""
    name, *flags = arch.split()
    before = BEFORE in flags
    flags = [f for f in flags if f != BEFORE]
    return name + (" +flags" if flags else "") + (" (before)" if before else "")


def models_for(size):
    """Unique archs to measure, baselines first, in a fixed order."""
    order = []
    for tp, base in PAIRS[size]:
        for arch in (base, tp):
            if arch not in order:
                order.append(arch)
    return sorted(order, key=lambda a: (not a.startswith("transformer"), order.index(a)))


def make_generator(model, d, cfg, lm):
    """fairseq's SequenceGenerator as the benchmark runs it: beam search of exactly ``gen_len`` tokens,
    or for a language model sampling of ``gen_len`` tokens after the ``prompt_len``-token prompt."""
    from fairseq import search
    from fairseq.sequence_generator import SequenceGenerator

    L = cfg["gen_len"]
    if lm:
        P = cfg["prompt_len"]
        return SequenceGenerator([model], d, beam_size=1, max_len_a=0, max_len_b=P + L, min_len=P + L,
                                 max_len=P + L + 2, search_strategy=search.Sampling(d))
    return SequenceGenerator([model], d, beam_size=cfg["beam"], max_len_a=0, max_len_b=L, min_len=L, max_len=L + 2)


def generate_once(generator, model, sample, cfg, lm):
    """One generate() call; checks that every hypothesis has the expected length."""
    L = cfg["gen_len"]
    if lm:
        hyps = generator.generate([model], sample, prefix_tokens=sample["net_input"]["src_tokens"])
        expected = cfg["prompt_len"] + L + 1
    else:
        hyps = generator.generate([model], sample)
        expected = L + 1
    lens = {len(h[0]["tokens"]) for h in hyps}
    assert lens == {expected}, f"expected every hypothesis to have {expected} tokens with EOS, got lengths {lens}"


def make_optimizer(kind, model, dtype, before=False):
    """Adam on ``model``'s parameters, lr 1e-4, betas (0.9, 0.98), the way the training runs it.

    ``fairseq-adam``: what ``fairseq-train --optimizer adam --adam-betas '(0.9, 0.98)'`` builds
    (``FairseqAdam``: with the plugin loaded, fairseq's Adam with the multi-tensor step on CUDA
    parameters, ``fairseq_fixes.fix_per_parameter_adam``; fairseq's fused Adam where its CUDA
    extension is installed); with ``before``, fairseq's own per-parameter loop as without the fix;
    ``torch-adam``: ``torch.optim.Adam`` (its default picks the multi-tensor step on CUDA)."""
    import torch

    eps = 1e-8 if dtype == "fp32" else 1e-4  # fp16/bf16 parameters: keep eps representable
    if kind == "torch-adam":
        return torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=eps)
    from fairseq.optim.adam import Adam, FairseqAdam, FairseqAdamConfig

    optimizer = FairseqAdam(FairseqAdamConfig(lr=[1e-4], adam_betas="(0.9, 0.98)", adam_eps=eps, tpu=False),
                            list(model.parameters()))
    if before and isinstance(optimizer._optimizer, Adam):
        optimizer._optimizer.__class__ = Adam  # fairseq's loop
    return optimizer


def build(arch, vocab=1000, seed=1, device="cpu", dtype="fp32"):
    """Build ``--arch arch`` the way fairseq-train does (registered preset applied, dropout
    included) for a translation task on a joined dummy dictionary of ``vocab`` symbols; ``arch``
    may carry fairseq-train flags after the name (``"tp_transformer_d --encoder-layers 3 ..."``).

    Returns ``(model, task, dictionary, criterion, info)`` with fairseq's
    ``label_smoothed_cross_entropy`` (eps 0.1) and ``info = {params, dropout}``."""
    import torch

    import fairseq_tpr

    fairseq_tpr.register()  # the archs, as fairseq-train --user-dir fairseq_tpr
    from fairseq import options
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask

    torch.manual_seed(seed)
    d = Dictionary()
    for i in range(vocab - len(d)):
        d.add_symbol(f"w{i}")
    d.pad_to_multiple_(8)
    parser = options.get_training_parser()
    name, *flags = arch.split()
    if BEFORE in flags:
        flags = [f for f in flags if f != BEFORE] + (["--role-kernel", "eager"] if name.startswith("tp_transformer_d")
                                                     else [])
    if is_language_model(arch):
        from fairseq.criterions.cross_entropy import CrossEntropyCriterion
        from fairseq.tasks.language_modeling import LanguageModelingTask

        argv = ["dummy-data", "--task", "language_modeling", "--arch", name, "--seed", str(seed),
                "--tokens-per-sample", "1024", *flags]
        args = options.parse_args_and_arch(parser, argv)
        task = LanguageModelingTask(args, d, d)
    else:
        argv = ["dummy-data", "--task", "translation", "--arch", name, "--seed", str(seed),
                "--max-source-positions", "1024", "--max-target-positions", "1024", *flags]
        args = options.parse_args_and_arch(parser, argv)
        task = TranslationTask(args, d, d)
    model = task.build_model(args).to(torch.device(device))
    if dtype != "fp32":
        model = model.to({"fp16": torch.float16, "bf16": torch.bfloat16}[dtype])
    if is_language_model(arch):
        criterion = CrossEntropyCriterion(task, sentence_avg=False)
    else:
        criterion = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    info = {"params": sum(p.numel() for p in model.parameters()), "dropout": getattr(args, "dropout", None)}
    return model, task, d, criterion, info


def _random_tokens(d, g, bsz, n):
    """``bsz x n`` random non-special symbols ending in EOS (as LanguagePairDataset appends it)."""
    import torch

    t = torch.randint(d.nspecial, len(d), (bsz, n), generator=g)
    t[:, -1] = d.eos()
    return t


def make_train_batches(d, bsz, src_len, tgt_len, n, seed, device, lm=False):
    """``n`` training samples of one fixed shape, no padding (teacher forcing: prev = EOS + target[:-1];
    a language model (``lm``): blocks of ``tgt_len`` tokens, each predicting the next)."""
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    batches = []
    for _ in range(n):
        if lm:
            block = torch.randint(d.nspecial, len(d), (bsz, tgt_len + 1), generator=g)
            batches.append({"net_input": {"src_tokens": block[:, :-1].contiguous().to(device),
                                          "src_lengths": torch.full((bsz,), tgt_len, device=device)},
                            "target": block[:, 1:].contiguous().to(device), "ntokens": bsz * tgt_len, "nsentences": bsz})
            continue
        src, tgt = _random_tokens(d, g, bsz, src_len), _random_tokens(d, g, bsz, tgt_len)
        prev = torch.cat([torch.full((bsz, 1), d.eos()), tgt[:, :-1]], dim=1)
        batches.append({
            "net_input": {"src_tokens": src.to(device), "src_lengths": torch.full((bsz,), src_len, device=device),
                          "prev_output_tokens": prev.to(device)},
            "target": tgt.to(device), "ntokens": bsz * tgt_len, "nsentences": bsz,
        })
    return batches


def make_generate_batches(d, bsz, src_len, n, seed, device, lm=False):
    """``n`` generate() samples of ``bsz`` random source sentences of ``src_len`` tokens (a language
    model: prompts of ``src_len`` symbols, no EOS)."""
    import torch

    g = torch.Generator().manual_seed(seed + 2)
    if lm:
        return [{"net_input": {"src_tokens": torch.randint(d.nspecial, len(d), (bsz, src_len), generator=g).to(device),
                               "src_lengths": torch.full((bsz,), src_len, dtype=torch.long, device=device)}}
                for _ in range(n)]
    return [{"net_input": {"src_tokens": _random_tokens(d, g, bsz, src_len).to(device),
                           "src_lengths": torch.full((bsz,), src_len, dtype=torch.long, device=device)}}
            for _ in range(n)]
