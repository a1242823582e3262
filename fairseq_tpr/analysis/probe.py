"""The probe of Jiang et al. 2021 (Sec. 6, after Tenney et al. 2019's edge probing) on a frozen model.

Labels
------
A label file holds one line per example of the split, in the order of the text file that
was binarized (sample id 0 on line 1). Two formats:

* ``token``: one label per token of the probed side, whitespace separated, without the
  ``</s>`` fairseq appends (a label ``-`` means "no label here"). Example for a
  character-level line ``1 2 + x``::

      D D O L

* ``span``: whitespace-separated items ``START:END=LABEL`` (one span, token indices,
  END exclusive) or ``S1:E1,S2:E2=LABEL`` (two spans, e.g. a dependency or an SRL
  argument with its predicate); all items of a file have the same number of spans, an
  empty line has none::

      0:2=NUM 3:4=VAR
      0:2,3:4=ARG

Encoder labels align with the source tokens. Decoder labels align with the target tokens
``y_1 .. y_n``: decoder position t reads ``</s>, y_1 .. y_(t-1)`` and is probed for the
token it is about to produce, y_t (Jiang et al.'s decoder probing).

Probe
-----
Per layer, on the chosen representation ``X`` (``T x d``, all heads concatenated):

0. standardisation of every input dimension with the training set's mean and deviation
   (so that roles, fillers and layer outputs of different scales are probed alike);
1. span convolution: ``P = Conv1d(X)`` with kernel ``2c + 1`` (``--conv-context c``; c = 0
   is a per-token projection). On the decoder the convolution is causal (it sees positions
   t - 2c .. t), so it cannot read the next input token, which *is* the label;
2. self-attentive span pooling: ``s = sum_{i in span} softmax_i(w . P_i) P_i``; with two
   spans their pooled vectors are concatenated;
3. a 2-layer MLP: ``Linear -> tanh -> LayerNorm -> dropout -> Linear`` to the labels,
   trained with cross-entropy (Adam) while the model stays frozen.

Scores: micro-F1 over all targets (equal to accuracy, since each target has one label) and
macro-F1 (mean over the labels of the evaluation set), with baselines that a representation
must beat to show it holds more than they do: the majority label, and for token labels the label
read off the input token alone (:func:`by_input_token`: each input symbol predicts its commonest
label in the training split; on the decoder the input at position t is the previous token) and
off the position alone (:func:`by_position`: the commonest training label at position t).
"""
import collections
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ConfigError, InputError

Span = Tuple[int, int]


@dataclass
class Example:
    """Targets of one example: ``spans[j]`` is a tuple of (start, end) spans, ``labels[j]`` its label."""

    spans: List[Tuple[Span, ...]] = field(default_factory=list)
    labels: List[str] = field(default_factory=list)


# --------------------------------------------------------------------------- label files
def read_label_lines(path: str) -> List[str]:
    """The lines of a label file (split on ``\\n`` only, a final newline dropped), or an
    :class:`InputError` naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise InputError(f"cannot read label file {path}: {e}")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return lines


def read_labels(path: str, fmt: str, lengths: Sequence[int], tokens_of: Optional[Callable[[int], List[str]]] = None,
                what: str = "tokens") -> List[Example]:
    """Parse a label file against the token counts of the split (``lengths[i]``: tokens of
    example i without ``</s>``; ``tokens_of(i)`` its symbols, shown in messages). Raises
    :class:`InputError` naming file, line and counts."""
    if fmt not in ("token", "span"):
        raise ConfigError(f"--label-format must be token or span (got {fmt!r})")
    lines = read_label_lines(path)
    if len(lines) != len(lengths):
        raise InputError(
            f"{path} has {len(lines)} lines but the split has {len(lengths)} examples: the label file needs one line "
            "per example of the binarized split, in the order of the text file that was binarized")
    out, n_spans = [], None
    for i, (line, n) in enumerate(zip(lines, lengths)):
        ex = Example()
        items = line.split()
        if fmt == "token":
            if len(items) != n:
                toks = tokens_of(i) if tokens_of is not None else None
                shown = "" if toks is None else f": {' '.join(toks[:40])}{' ...' if len(toks) > 40 else ''}"
                raise InputError(
                    f"{path} line {i + 1}: {len(items)} labels, but example {i} has {n} {what} without </s>{shown}; "
                    "token labels need exactly one label per token (use '-' for tokens without a label)")
            for t, lab in enumerate(items):
                if lab != "-":
                    ex.spans.append(((t, t + 1),))
                    ex.labels.append(lab)
        else:
            for item in items:
                spans, lab = _parse_span_item(item, path, i)
                for s, e in spans:
                    if not 0 <= s < e <= n:
                        raise InputError(
                            f"{path} line {i + 1}: span {s}:{e} in {item!r} is outside the {n} {what} of example {i} "
                            "(spans are START:END token indices, END exclusive, without </s>)")
                if n_spans is None:
                    n_spans = len(spans)
                elif len(spans) != n_spans:
                    raise InputError(f"{path} line {i + 1}: {item!r} has {len(spans)} spans but earlier items have "
                                     f"{n_spans}; all items of a file need the same number of spans")
                ex.spans.append(spans)
                ex.labels.append(lab)
        out.append(ex)
    if not any(ex.labels for ex in out):
        raise InputError(f"{path} holds no labels")
    return out


def _parse_span_item(item: str, path: str, i: int):
    if "=" not in item:
        raise InputError(f"{path} line {i + 1}: {item!r} is not START:END=LABEL or S1:E1,S2:E2=LABEL")
    spans_s, lab = item.split("=", 1)
    spans = []
    for part in spans_s.split(","):
        try:
            s, e = part.split(":")
            spans.append((int(s), int(e)))
        except ValueError:
            raise InputError(f"{path} line {i + 1}: {item!r} is not START:END=LABEL or S1:E1,S2:E2=LABEL")
    if len(spans) > 2 or not lab:
        raise InputError(f"{path} line {i + 1}: {item!r}: one or two spans and a non-empty label are allowed")
    return tuple(spans), lab


# --------------------------------------------------------------------------- the probe
class SpanProbe(nn.Module):
    """Span convolution + self-attentive span pooling + 2-layer MLP (see module docstring)."""

    def __init__(self, d_in: int, n_labels: int, n_spans: int = 1, proj: int = 256, hidden: int = 256,
                 context: int = 0, causal: bool = False, dropout: float = 0.2):
        super().__init__()
        self.context, self.causal, self.n_spans = context, causal, n_spans
        self.register_buffer("mean", torch.zeros(d_in))
        self.register_buffer("std", torch.ones(d_in))
        self.conv = nn.Conv1d(d_in, proj, kernel_size=2 * context + 1)
        self.score = nn.Linear(proj, 1)
        self.mlp = nn.Sequential(nn.Linear(n_spans * proj, hidden), nn.Tanh(), nn.LayerNorm(hidden),
                                 nn.Dropout(dropout), nn.Linear(hidden, n_labels))

    def project(self, x: Tensor) -> Tensor:
        """``B x T x d`` -> ``B x T x proj``."""
        x = (x - self.mean) / self.std  # standardised with training-set statistics
        c = self.context
        pad = (2 * c, 0) if self.causal else (c, c)
        return self.conv(F.pad(x.transpose(1, 2), pad)).transpose(1, 2)

    def forward(self, x: Tensor, groups: Tensor, positions: Tensor, n_targets: int) -> Tensor:
        """x: ``B x T x d`` (standardised). Span membership as pairs: ``positions[m]`` (an index
        into the flattened ``B*T`` positions) belongs to span group ``groups[m]`` = target n x
        spans + s. Returns logits ``n_targets x labels``."""
        P = self.project(x).reshape(-1, self.conv.out_channels)  # B*T x proj
        G = n_targets * self.n_spans
        w = self.score(P).squeeze(-1)[positions]  # M: w . P_i of each member
        top = torch.full((G,), float("-inf")).scatter_reduce(0, groups, w, "amax", include_self=True)
        e = torch.exp(w - top[groups])
        att = e / torch.zeros(G).index_add(0, groups, e)[groups]  # softmax within each span
        pooled = torch.zeros(G, P.size(1)).index_add(0, groups, att.unsqueeze(1) * P[positions])  # G x proj
        return self.mlp(pooled.view(n_targets, -1))


def _span_index(T: int, spans: List[Tuple[int, Tuple[Span, ...]]]) -> Tuple[Tensor, Tensor]:
    """(groups, positions) of every span position, from (example index in batch, spans) pairs."""
    n_spans = len(spans[0][1])
    groups, positions = [], []
    for n, (b, sp) in enumerate(spans):
        for s, (start, end) in enumerate(sp):
            groups += [n * n_spans + s] * (end - start)
            positions += range(b * T + start, b * T + end)
    return torch.tensor(groups, dtype=torch.long), torch.tensor(positions, dtype=torch.long)


def _batches(reps: List[np.ndarray], examples: List[Example], idx: Sequence[int], label_ids: Dict[str, int],
             batch_size: int):
    for start in range(0, len(idx), batch_size):
        chunk = [i for i in idx[start:start + batch_size] if examples[i].labels]
        if not chunk:
            continue
        T = max(len(reps[i]) for i in chunk)
        d = reps[chunk[0]].shape[-1]
        x = torch.zeros(len(chunk), T, d)
        spans, y = [], []
        for b, i in enumerate(chunk):
            x[b, :len(reps[i])] = torch.from_numpy(np.asarray(reps[i], dtype=np.float32))
            for sp, lab in zip(examples[i].spans, examples[i].labels):
                spans.append((b, sp))
                y.append(label_ids.get(lab, -1))
        groups, positions = _span_index(T, spans)
        yield x, groups, positions, torch.tensor(y)


def train_probe(reps: List[np.ndarray], examples: List[Example], epochs: int = 10, lr: float = 1e-3,
                batch_size: int = 32, seed: int = 0, **probe_kw) -> Tuple[SpanProbe, Dict[str, int]]:
    """Train a :class:`SpanProbe` on per-example representations ``reps[i]`` (``T_i x d``)."""
    labels = sorted({lab for ex in examples for lab in ex.labels})
    label_ids = {lab: j for j, lab in enumerate(labels)}
    n_spans = next(len(ex.spans[0]) for ex in examples if ex.spans)
    torch.manual_seed(seed)
    probe = SpanProbe(reps[0].shape[-1], len(labels), n_spans=n_spans, **probe_kw)
    flat = np.concatenate([np.asarray(r, dtype=np.float64) for r in reps])
    probe.mean.copy_(torch.from_numpy(flat.mean(0)).float())
    probe.std.copy_(torch.from_numpy(flat.std(0) + 1e-6).float())
    opt = torch.optim.Adam(probe.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    probe.train()
    for _ in range(epochs):
        order = rng.permutation(len(reps))
        for x, groups, positions, y in _batches(reps, examples, order, label_ids, batch_size):
            loss = F.cross_entropy(probe(x, groups, positions, len(y)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    probe.eval()
    return probe, label_ids


@torch.no_grad()
def predict(probe: SpanProbe, label_ids: Dict[str, int], reps: List[np.ndarray], examples: List[Example],
            batch_size: int = 64) -> Tuple[List[str], List[str]]:
    """(gold, predicted) labels of every target, in order."""
    names = {j: lab for lab, j in label_ids.items()}
    gold = [lab for ex in examples for lab in ex.labels]
    pred: List[str] = []
    for x, groups, positions, y in _batches(reps, examples, range(len(reps)), label_ids, batch_size):
        pred += [names[int(j)] for j in probe(x, groups, positions, len(y)).argmax(-1)]
    return gold, pred


def input_symbols(tokens: Sequence[str], side: str) -> List[str]:
    """The symbol each position reads: the token itself on the encoder; on the decoder the token
    before it (``</s>``, fairseq's start of decoding, at position 0)."""
    return list(tokens) if side == "encoder" else ["</s>"] + list(tokens[:-1])


BASELINES = {"by_input_token": "input token alone", "by_position": "position alone"}  # JSON key: name


def by_input_token(train: Sequence[Tuple[List[str], Example]], evaluate: Sequence[Tuple[List[str], Example]],
                   side: str) -> Dict[str, float]:
    """The scores (:func:`f1_scores`) of predicting every token-format target from its input symbol
    alone: the commonest label of that symbol at the training targets, the training split's commonest
    label for a symbol never seen there. ``train``/``evaluate``: (tokens without ``</s>``, labels)
    per example. The baseline of a context-free reading of the input, which the probe of a
    representation must beat to show it holds more."""
    return _by_key(train, evaluate, lambda tokens: input_symbols(tokens, side))


def by_position(train: Sequence[Tuple[List[str], Example]], evaluate: Sequence[Tuple[List[str], Example]]
                ) -> Dict[str, float]:
    """As :func:`by_input_token`, keyed by the position t of each target instead of its symbol: the
    commonest training label at position t. What a representation that holds only where a token
    stands (the positional encoding) can tell; in short templated inputs that is a lot."""
    return _by_key(train, evaluate, lambda tokens: range(len(tokens)))


def _by_key(train, evaluate, keys) -> Dict[str, float]:
    """Each token-format target predicted by the commonest training label of its key, ``keys(tokens)[t]``
    for the target at position t; the training split's commonest label for a key never seen there."""
    def pairs(data):
        for tokens, ex in data:
            key = keys(tokens)
            for sp, lab in zip(ex.spans, ex.labels):
                yield key[sp[0][0]], lab

    counts: Dict[object, collections.Counter] = collections.defaultdict(collections.Counter)
    for key, lab in pairs(train):
        counts[key][lab] += 1
    overall = collections.Counter(lab for _, ex in train for lab in ex.labels)
    fallback = overall.most_common(1)[0][0]
    gold, pred = [], []
    for key, lab in pairs(evaluate):
        gold.append(lab)
        pred.append(counts[key].most_common(1)[0][0] if key in counts else fallback)
    return f1_scores(gold, pred)


def f1_scores(gold: Sequence[str], pred: Sequence[str]) -> Dict[str, float]:
    """micro-F1 (= accuracy for one label per target), macro-F1 over the gold labels, and the
    micro-F1 of always predicting the most frequent gold label."""
    gold, pred = list(gold), list(pred)
    if not gold:
        return {"micro_f1": float("nan"), "macro_f1": float("nan"), "majority": float("nan"), "targets": 0}
    micro = sum(g == p for g, p in zip(gold, pred)) / len(gold)
    f1s = []
    for lab in sorted(set(gold)):
        tp = sum(g == lab and p == lab for g, p in zip(gold, pred))
        fp = sum(g != lab and p == lab for g, p in zip(gold, pred))
        fn = sum(g == lab and p != lab for g, p in zip(gold, pred))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    counts = {lab: gold.count(lab) for lab in set(gold)}
    return {"micro_f1": micro, "macro_f1": float(np.mean(f1s)), "majority": max(counts.values()) / len(gold),
            "targets": len(gold)}
