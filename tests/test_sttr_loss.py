"""STTR's loss at the authors' scale (SunJMMMM/STTR, criterions/label_smoothed_cross_entropy.py):

    loss = sum over target tokens of CE_ls + lambda * torch.nn.MSELoss()(target_mean, tp_mean)

with the MSE the mean over the B x d elements of the two mean vectors, added once per batch.
The oracle here is written from that code (with non-pad means, the one documented deviation):
a plain loop over tokens for the label-smoothed CE, ``target_mean`` from the decoder's input
(scaled embeddings of prev_output_tokens plus positions) and ``tp_mean`` from H_ts. Every
comparison runs in float64 on a batch that fairseq's own batch iterator builds from binarized data.

CE_ls has two formulas here, chosen by ``--label-smoothing-over``:

* ``other-classes`` (the default): fairseq 0.12's ``label_smoothed_nll_loss``, which the project
  calls: ``(1 - eps - eps/(V-1)) nll + eps/(V-1) sum_v -log p_v``, i.e. eps/(V-1) to every class
  but the gold one. This is *not* the authors' formula.
* ``all-classes``: the authors' fairseq 0.8.0 (``fairseq-0.8.0/fairseq/criterions/
  label_smoothed_cross_entropy.py``, lines 30-31: ``eps_i = epsilon / lprobs.size(-1)``,
  ``loss = (1. - epsilon) * nll_loss + eps_i * smooth_loss``), eps/V to every class.
"""

import pytest
import torch
from fairseq import options, tasks
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.data import Dictionary, indexed_dataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import fairseq_tpr  # noqa: F401  (registered by conftest.py)
from fairseq_tpr.corpora.templates import main as binarize_main

WORDS = [f"w{i}" for i in range(30)]
N = 12
EPS = 0.1


def _write(prefix, lines, d):
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
    for line in lines:
        builder.add_item(d.encode_line(line, add_if_not_exist=False).long())
    builder.finalize(f"{prefix}.idx")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Binarized source/target/template splits of varied lengths (so the batch has padding)."""
    root = tmp_path_factory.mktemp("sttr_loss")
    d = Dictionary()
    for w in WORDS:
        d.add_symbol(w)
    d.finalize(padding_factor=1)
    d.save(str(root / "dict.source.txt"))
    d.save(str(root / "dict.target.txt"))

    def line(i, n, shift):
        return " ".join(WORDS[(i * 7 + j * shift) % len(WORDS)] for j in range(n))

    raw = root / "raw"
    raw.mkdir()
    _write(root / "train.source-target.source", [line(i, 4 + i % 5, 3) for i in range(N)], d)
    _write(root / "train.source-target.target", [line(i, 2 + i % 4, 5) for i in range(N)], d)
    (raw / "train.template").write_text("".join(line(i, 3 + i % 3, 11) + "\n" for i in range(N)))
    assert binarize_main([str(raw), str(root), "-s", "source", "-t", "target", "--splits", "train"]) == 0
    return root


def _setup(data, *flags):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--task", "template_summarization", "--arch", "sttr_tiny",
                                                "-s", "source", "-t", "target", "--cpu", "--dropout", "0.1",
                                                "--criterion", "label_smoothed_cross_entropy_with_template_mse",
                                                "--label-smoothing", str(EPS), *flags])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    torch.manual_seed(0)
    model = task.build_model(cfg.model).double()
    criterion = task.build_criterion(cfg.criterion)
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=8, seed=1,
                                  required_batch_size_multiple=1).next_epoch_itr(shuffle=False)
    sample = next(iter(itr))
    assert sample["target"].eq(task.target_dictionary.pad()).any()  # the batch has padding
    return model, criterion, sample, task


def _authors_loss(model, sample, lam, pad, smoothing_over="other-classes"):
    """The authors' criterion (eval mode, so no dropout), as plain loops over tokens and elements,
    with fairseq 0.12's label smoothing (``other-classes``) or the authors' fairseq 0.8.0's
    (``all-classes``; module docstring)."""
    net_output = model(**sample["net_input"])
    lprobs = model.get_normalized_probs(net_output, log_probs=True)  # B x T x V
    target = sample["target"]
    V = lprobs.size(-1)
    ce = 0.0
    for b in range(target.size(0)):
        for t in range(target.size(1)):
            y = int(target[b, t])
            if y == pad:
                continue
            nll = -float(lprobs[b, t, y])
            smooth = -float(lprobs[b, t].sum())
            if smoothing_over == "all-classes":  # fairseq 0.8.0, label_smoothed_cross_entropy.py:30-31
                eps_i = EPS / V
                ce += (1 - EPS) * nll + eps_i * smooth
            else:  # fairseq 0.12's label_smoothed_nll_loss
                eps_i = EPS / (V - 1)
                ce += (1 - EPS - eps_i) * nll + eps_i * smooth
    enc = model.encoder(**{k: v for k, v in sample["net_input"].items() if k != "prev_output_tokens"})
    h_ts, s_pad = enc["template_aware"][0], enc["template_aware_padding_mask"][0]  # S x B x C, B x S
    prev = sample["net_input"]["prev_output_tokens"]
    dec = model.decoder
    x = dec.embed_scale * dec.embed_tokens(prev) + dec.embed_positions(prev)  # B x T x C, the decoder's input
    B, C = prev.size(0), h_ts.size(-1)
    squares = 0.0
    for b in range(B):
        src_keep = [i for i in range(h_ts.size(0)) if not s_pad[b, i]]
        tgt_keep = [i for i in range(prev.size(1)) if prev[b, i] != pad]
        tp_mean = [sum(float(h_ts[i, b, c]) for i in src_keep) / len(src_keep) for c in range(C)]
        target_mean = [sum(float(x[b, i, c]) for i in tgt_keep) / len(tgt_keep) for c in range(C)]
        squares += sum((a - m) ** 2 for a, m in zip(target_mean, tp_mean))
    return ce + lam * squares / (B * C), squares / (B * C)


@pytest.mark.parametrize("lam,smoothing_over", [(1.0, "other-classes"), (0.3, "other-classes"), (1.0, "all-classes")])
def test_loss_equals_the_authors_formula_on_a_real_batch(data, lam, smoothing_over):
    model, criterion, sample, task = _setup(data, "--template-mse-lambda", str(lam),
                                            "--label-smoothing-over", smoothing_over)
    model.eval()
    with torch.no_grad():
        loss, sample_size, log = criterion(model, sample)
        want, mse = _authors_loss(model, sample, lam, task.target_dictionary.pad(), smoothing_over)
    assert sample_size == sample["ntokens"]
    assert abs(float(loss) - want) <= 1e-6 * abs(want)
    # logged: the MSE per sentence (||.||^2 / d), summed over the batch's sentences
    assert abs(float(log["template_mse"]) / log["template_n"] - mse) <= 1e-6 * mse


def test_lambda_zero_is_exactly_plain_label_smoothed_ce(data):
    model, criterion, sample, task = _setup(data, "--template-mse-lambda", "0")
    model.eval()
    plain = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=EPS)
    with torch.no_grad():
        zero, n_zero, log_zero = criterion(model, sample)
        ref, n_ref, log_ref = plain(model, sample)
    assert torch.equal(zero, ref) and n_zero == n_ref and torch.equal(log_zero["nll_loss"], log_ref["nll_loss"])
    assert float(log_zero["template_mse"]) > 0  # still logged


def test_the_two_smoothing_formulas_differ_by_the_documented_term(data):
    """other-classes - all-classes = eps/(V-1) * sum over tokens of (mean_v(-log p_v) - nll)
    (docs/sttr.md); nll_loss is the same."""
    model, plain, sample, task = _setup(data)
    authors = _setup(data, "--label-smoothing-over", "all-classes")[1]
    model.eval()
    pad = task.target_dictionary.pad()
    with torch.no_grad():
        ours, _, log_ours = plain(model, sample)
        theirs, _, log_theirs = authors(model, sample)
        lprobs = model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)
    V = lprobs.size(-1)
    keep = sample["target"].ne(pad)
    nll = -lprobs.gather(-1, sample["target"].unsqueeze(-1)).squeeze(-1)[keep]
    mean_v = -lprobs.mean(-1)[keep]
    want = EPS / (V - 1) * float((mean_v - nll).sum())
    assert abs(float(ours - theirs) - want) <= 1e-9 * abs(float(ours))
    assert abs(want) > 1e-6 * abs(float(ours))  # the difference is real, not rounding
    assert torch.equal(log_ours["nll_loss"], log_theirs["nll_loss"])


def test_token_embeddings_target_uses_the_target_without_positions(data):
    model, criterion, sample, task = _setup(data, "--template-mse-target", "token-embeddings")
    model.eval()
    pad = task.target_dictionary.pad()
    with torch.no_grad():
        ce, _, _ = _setup(data, "--template-mse-lambda", "0")[1](model, sample)
        loss, _, _ = criterion(model, sample)
        enc = model.encoder(**{k: v for k, v in sample["net_input"].items() if k != "prev_output_tokens"})
        h_ts, s_pad = enc["template_aware"][0], enc["template_aware_padding_mask"][0]
        emb = model.decoder.embed_tokens.weight * model.decoder.embed_scale
        squares = 0.0
        for b in range(sample["target"].size(0)):
            keep = ~s_pad[b]
            t = [int(y) for y in sample["target"][b] if y != pad]
            squares += float(((h_ts[keep, b].mean(0) - emb[t].mean(0)) ** 2).sum())
    B, C = sample["target"].size(0), h_ts.size(-1)
    want = float(ce) + squares / (B * C)
    assert abs(float(loss) - want) <= 1e-6 * abs(want)


def test_the_shifting_gradient_reaches_h_ts_and_the_shared_embeddings(data):
    model, criterion, sample, _ = _setup(data)
    model.train()
    kept = {}

    def keep_h_ts(_module, _inputs, out):
        out[2].retain_grad()
        kept["h_ts"] = out[2]

    handle = model.encoder.fusion.register_forward_hook(keep_h_ts)
    try:
        net_output = model(**sample["net_input"])
    finally:
        handle.remove()
    mse, _ = criterion.shifting_terms(model, net_output, sample)
    mse.sum().backward()  # the shifting term alone
    assert kept["h_ts"].grad is not None and kept["h_ts"].grad.abs().sum() > 0
    shared = model.decoder.embed_tokens.weight
    assert shared is model.encoder.source_encoder.embed_tokens.weight  # one table: --share-all-embeddings
    assert shared.grad is not None and shared.grad.abs().sum() > 0


def test_unreduced_losses_carry_each_sentences_share_and_sum_to_the_total(data):
    model, criterion, sample, task = _setup(data)
    model.eval()
    pad = task.target_dictionary.pad()
    with torch.no_grad():
        total, _, _ = criterion(model, sample)
        per_token, _, _ = criterion(model, sample, reduce=False)
        ce_tokens, _, _ = _setup(data, "--template-mse-lambda", "0")[1](model, sample, reduce=False)
        mse, _ = criterion.shifting_terms(model, model(**sample["net_input"]), sample)
    assert abs(float(per_token.sum()) - float(total)) <= 1e-9 * abs(float(total))
    target = sample["target"]
    extra = (per_token - ce_tokens).view(target.shape)  # B x T: what the shifting term added
    B = target.size(0)
    for b in range(B):
        keep = target[b].ne(pad)
        assert torch.all(extra[b][~keep] == 0)
        share = extra[b][keep]
        assert torch.allclose(share, torch.full_like(share, float(mse[b]) / B / int(keep.sum())), rtol=1e-9, atol=0)
