"""Training, decoding and scoring of ATPL's constituency parser (Huang et al., Sec. 6): the
library of ``fairseq-tpr-parse``. The model is :class:`~.parser_model.ATPLParser`.

* Data (:func:`read_examples`, :func:`load_data`): bracketed trees (``.mrg`` or one per line,
  :mod:`.trees`), normalised (function tags, ``-NONE-``, one-label unary chains) and taken
  below an unlabelled/TOP root, encoded per layer (:mod:`.tree_encoding`); the unbinding
  vectors of each split (a ``fairseq-tpr-unbinding`` dump of exactly the normalised trees'
  sentences, checked word by word, errors naming the tree's line). POS tags, categories and
  words come from the training split (or the checkpoint).
* Training (:func:`train`): teacher forcing: layer k's segmenter averages over the *gold*
  layer-(k-1) segments and its classifier over the gold layer-k segments, for every layer of
  every tree. Loss = mean cross-entropy over the segment decisions + mean cross-entropy over
  the segment categories (each pooled over all layers of the batch). Adam, gradient clipping,
  early stopping on the validation F1 (an equal F1 with a lower validation loss counts as
  better); the best epoch is kept and saved as ``checkpoint_best.pt`` (atomic write): the loop
  of :mod:`.training`, shared with the POS tagger.
* Decoding (:func:`decode`): greedy, layer by layer from layer 2: decide each layer-(k-1)
  segment, form the layer-k segments, classify them, until one segment covers the sentence
  (at most ``max_layers`` layers, then one root segment is forced); then the tree builder with
  ``strict_heights``. A segment that merges several segments takes the best category among
  those seen on such nodes in training (phrase labels); a one-child segment may take any.
  ``gold_segments=True`` is the paper's "parser with ground-truth z_{k,t}": the gold
  segmentation of every layer, only the categories predicted.
* Scoring: EVALB (COLLINS.prm, :mod:`.evalb`) of the decoded trees against the trees as read.

Shapes are batch-first; ``seg`` tensors hold segment numbers per sentence, -1 at padding.
"""
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F

from ..checkpoint_io import atomic_write
from ..errors import CheckpointError, ConfigError, InputError
from . import evalb
from .parser_model import ATPLParser, segment_decisions, segment_loss
from .training import Validation, optimizer_step, percent, results_markdown, train_early_stopping
from .tree_encoding import TreeEncoding, boundaries, build_tree, encode
from ..corpora.ptb_trees import Tree, add_top, normalize, read_trees, strip_top
from .unbinding_dump import UnbindingDump, load_unbinding
from ..choices import GRAMMAR_SPLITS

CKPT_FORMAT = "fairseq_tpr.parser/1"
PAD, UNK = "<pad>", "<unk>"
SPLITS = GRAMMAR_SPLITS
MODEL_KEYS = ("features", "segment_target", "layer_input", "hidden", "rank", "word_dim", "dropout", "word_dropout")


# ----------------------------------------------------------------------------- data


@dataclass
class Example:
    """One tree: ``gold`` as read (scored against), ``tree`` the normalised tree below its
    TOP (``top`` the label taken off, or None), and its encoding."""

    where: str
    gold: Tree
    tree: Tree
    top: Optional[str]
    enc: TreeEncoding

    @property
    def words(self) -> List[str]:
        return self.enc.words

    @property
    def tags(self) -> List[str]:
        return self.enc.tags


def read_examples(path) -> List[Example]:
    """The trees of ``path`` as :class:`Example` (InputError on bad trees)."""
    out = []
    for raw in read_trees(path):
        where = f"{path}:{raw.line}"
        try:
            tree, top = strip_top(normalize(raw))
        except InputError as e:
            raise InputError(f"{path}: {e}") from e
        out.append(Example(where, raw, tree, top, encode(tree)))
    return out


def examples_from_tags(path) -> List[Example]:
    """Sentences to parse from a word/TAG file (:mod:`fairseq_tpr.corpora.pos`), each as a flat
    stand-in tree ``(X (TAG word) ...)`` (its brackets are never scored)."""
    from ..corpora.pos import read_tagged

    out = []
    for sent in read_tagged(path, "wordtag"):
        tree = Tree("X", [Tree(t, word=w) for w, t in zip(sent.words, sent.tags)])
        out.append(Example(sent.where, tree, tree, None, encode(tree)))
    if not out:
        raise InputError(f"{path}: no sentences")
    return out


def check_alignment(examples: Sequence[Example], dump: UnbindingDump, tree_path) -> None:
    """InputError unless ``dump`` holds the trees' sentences, word for word, in order."""
    if len(examples) != len(dump):
        raise InputError(f"{tree_path} has {len(examples)} trees but {dump.path} has {len(dump)} sentences: dump "
                         f"the unbinding vectors of exactly these trees' sentences (fairseq-tpr-parse sentences "
                         f"--trees {tree_path} --out SENTENCES.txt, then fairseq-tpr-unbinding --input SENTENCES.txt)")
    for i, ex in enumerate(examples):
        u_words = dump.sentence_words(i)
        if u_words != ex.words:
            n = min(len(u_words), len(ex.words))
            first = next((k for k in range(n) if u_words[k] != ex.words[k]), n)
            at = (lambda s: s[first] if first < len(s) else "<end of sentence>")
            raise InputError(
                f"{ex.where}: the words of tree {i + 1} differ from sentence {i + 1} of {dump.path}, the "
                f"autoencoder's input ({len(ex.words)} vs {len(u_words)} words; first difference at word "
                f"{first + 1}: {at(ex.words)!r} vs {at(u_words)!r}). tree: {' '.join(ex.words)[:150]} | "
                f"dump: {' '.join(u_words)[:150]}")


@dataclass
class Vocab:
    pos: List[str]  # PAD, UNK, tags
    categories: List[str]
    words: List[str]  # PAD, UNK, words
    new_node_labels: List[str]  # labels of multi-child nodes in training
    n_layers: int

    def as_dict(self):
        return {"pos": self.pos, "categories": self.categories, "words": self.words,
                "new_node_labels": self.new_node_labels, "n_layers": self.n_layers}


def build_vocab(examples: Sequence[Example]) -> Vocab:
    tags = sorted({t for ex in examples for t in ex.tags})
    cats = sorted({lab for ex in examples for layer in ex.enc.labels for lab in layer})
    words = sorted({w for ex in examples for w in ex.words})
    new = sorted({n.label for ex in examples for n, _, _ in ex.tree.nodes() if len(n.children) > 1})
    n_layers = max(2, max(ex.enc.height for ex in examples))
    return Vocab([PAD, UNK] + tags, cats, [PAD, UNK] + words, new, n_layers)


class Item:
    """The tensors of one example: ids, u, gold segments of every layer, targets.

    Layers 2 .. H+1 are trained: layer H+1 (one segment, the root carried up) teaches the
    classifier to keep the root's category, which is how decoding knows that no unary node
    above the root is left to make."""

    def __init__(self, ex: Example, vocab_index, u, segment_target: str):
        pos_i, cat_i, word_i = vocab_index
        self.ex = ex
        T = len(ex.words)
        self.words = torch.tensor([word_i.get(w, 1) for w in ex.words])
        self.pos = torch.tensor([pos_i.get(t, 1) for t in ex.tags])
        self.u = u
        self.height = ex.enc.height
        self.train_height = self.height + 1
        segs = [ex.enc.segments(k) for k in range(1, self.height + 1)] + [[(0, T)]]
        self.seg = torch.full((self.train_height, T), -1, dtype=torch.long)
        for k, layer in enumerate(segs):
            for m, (s, e) in enumerate(layer):
                self.seg[k, s:e] = m
        self.seg_target, self.cat_target = {}, {}
        for k in range(2, self.train_height + 1):
            prev = segs[k - 2]
            if k > self.height:
                tgt = [0]  # one segment: no decision
            elif segment_target == "parity":
                bits = ex.enc.bits[k - 2]
                tgt = [bits[s] for s, _ in prev]
            else:
                b = boundaries(segs[k - 1], T)
                tgt = [b[s] for s, _ in prev]
            self.seg_target[k] = torch.tensor(tgt[1:], dtype=torch.long)  # the first is fixed
            labels = ex.enc.labels[k - 2] if k <= self.height else [ex.tree.label] * T
            self.cat_target[k] = torch.tensor([cat_i.get(labels[s], -100) for s, _ in segs[k - 1]], dtype=torch.long)
        self.unknown_categories = sum(int((t == -100).sum()) for t in self.cat_target.values())


class Split:
    def __init__(self, name: str, examples: List[Example], dump: Optional[UnbindingDump], vocab: Vocab,
                 segment_target: str):
        self.name, self.examples = name, examples
        index = ({t: i for i, t in enumerate(vocab.pos)}, {c: i for i, c in enumerate(vocab.categories)},
                 {w: i for i, w in enumerate(vocab.words)})
        self.items = [Item(ex, index, torch.from_numpy(dump.sentence(i).copy()) if dump is not None else None,
                           segment_target) for i, ex in enumerate(examples)]
        self.unknown_categories = sum(it.unknown_categories for it in self.items)

    def __len__(self):
        return len(self.items)

    def batches(self, batch_size: int, shuffle=False, rng=None):
        order = list(range(len(self)))
        if shuffle:
            rng.shuffle(order)
        for k in range(0, len(order), batch_size):
            yield Batch([self.items[i] for i in order[k: k + batch_size]])


class Batch:
    """``words``/``pos`` B x T (0 at padding), ``u`` B x T x d or None, ``lengths`` B, ``height``
    B (the trained layers, H+1 each), ``seg`` B x max(H+1) x T (gold layer k in row k-1; -1 at
    padding and above)."""

    def __init__(self, items: List[Item]):
        self.items = items
        B = len(items)
        T = max(len(it.words) for it in items)
        H = max(it.train_height for it in items)
        self.lengths = torch.tensor([len(it.words) for it in items])
        self.height = torch.tensor([it.train_height for it in items])
        self.words = torch.zeros(B, T, dtype=torch.long)
        self.pos = torch.zeros(B, T, dtype=torch.long)
        self.seg = torch.full((B, H, T), -1, dtype=torch.long)
        self.u = None if items[0].u is None else torch.zeros(B, T, items[0].u.size(-1))
        for b, it in enumerate(items):
            n = len(it.words)
            self.words[b, :n], self.pos[b, :n] = it.words, it.pos
            self.seg[b, : it.train_height, :n] = it.seg
            if self.u is not None:
                self.u[b, :n] = it.u

    def to(self, device):
        for name in ("words", "pos", "seg", "u"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, v.to(device))
        return self


def load_data(tree_files: Dict[str, str], u_files: Dict[str, str], cfg: dict, vocab: Optional[Vocab] = None):
    """``(splits, vocab)``; ``vocab`` from the checkpoint, else built from the training split
    (and ``cfg["u_dim"]`` set from the dumps). InputError on inputs that do not fit."""
    need_u = cfg["features"] == "unbinding"
    data = {}
    for s, path in tree_files.items():
        examples = path if isinstance(path, list) else read_examples(path)
        path = examples[0].where.rsplit(":", 1)[0] if isinstance(path, list) and examples else path
        dump = None
        if need_u:
            if not u_files.get(s):
                raise ConfigError(f"--features unbinding reads unbinding vectors: give --{s}-u (write it with "
                                  f"fairseq-tpr-unbinding), or use --features words")
            dump = load_unbinding(u_files[s])
            check_alignment(examples, dump, path)
        data[s] = (examples, dump)
    dims = {s: d.dim for s, (_, d) in data.items() if d is not None}
    if len(set(dims.values())) > 1:
        raise InputError(f"the unbinding dumps disagree on d_u: {dims}")
    if vocab is None:
        cfg["u_dim"] = next(iter(dims.values())) if dims else 0
        vocab = build_vocab(data["train"][0])
    elif need_u and dims and next(iter(dims.values())) != cfg["u_dim"]:
        raise ConfigError(f"the checkpoint was trained on d_u = {cfg['u_dim']}, the dumps have {dims}")
    splits = {s: Split(s, ex, d, vocab, cfg["segment_target"]) for s, (ex, d) in data.items()}
    return splits, vocab


def describe(splits, vocab: Vocab, cfg) -> str:
    lines = []
    for s, sp in splits.items():
        heights = [it.height for it in sp.items]
        lines.append(f"{s}: {len(sp)} trees, {sum(len(it.words) for it in sp.items)} words, height "
                     f"{min(heights)}-{max(heights)}"
                     + (f", {sp.unknown_categories} segment categories unseen in training (counted wrong)"
                        if sp.unknown_categories else ""))
    lines.append(f"{len(vocab.pos) - 2} POS tags, {len(vocab.categories)} categories, {len(vocab.words) - 2} words, "
                 f"nets for layers 2-{vocab.n_layers}, input {cfg['features']}"
                 + (f" (d_u {cfg['u_dim']})" if cfg["features"] == "unbinding" else f" (E w, {cfg['word_dim']}-d)"))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- model


def build_model(cfg: dict, vocab: Vocab) -> ATPLParser:
    return ATPLParser(len(vocab.pos), len(vocab.categories), len(vocab.words), u_dim=cfg.get("u_dim", 0),
                      features=cfg["features"], n_layers=vocab.n_layers, hidden=cfg["hidden"], rank=cfg["rank"],
                      word_dim=cfg["word_dim"], dropout=cfg["dropout"], word_dropout=cfg["word_dropout"],
                      segment_target=cfg["segment_target"], layer_input=cfg["layer_input"])


def _first_of_each(counts: torch.Tensor) -> torch.Tensor:
    """Boolean mask over N = sum(counts) segments, False at each sentence's first segment."""
    keep = torch.ones(int(counts.sum()), dtype=torch.bool, device=counts.device)
    keep[torch.cumsum(counts, 0) - counts] = False
    return keep


def batch_loss(model: ATPLParser, batch: Batch):
    """``(loss, (segment loss sum, decisions), (category loss sum, segments))`` with teacher forcing."""
    x = model.inputs(batch.words, batch.u)
    dev = x.device
    seg_sum, n_seg = x.new_zeros(()), 0
    cat_sum, n_cat = x.new_zeros(()), 0
    for k in range(2, int(batch.height.max()) + 1):
        idx = (batch.height >= k).nonzero().squeeze(1)
        items = [batch.items[i] for i in idx.tolist()]
        xs, ps, ls = x[idx.to(dev)], batch.pos[idx.to(dev)], batch.lengths[idx]
        prev, cur = batch.seg[idx.to(dev), k - 2], batch.seg[idx.to(dev), k - 1]
        logits = model.segment_logits(k, xs, ps, ls, prev)
        counts = prev.max(dim=1).values + 1
        tgt = torch.cat([it.seg_target[k] for it in items]).to(dev)
        if len(tgt):
            seg_sum = seg_sum + segment_loss(k, logits[_first_of_each(counts)], tgt)
            n_seg += len(tgt)
        cl = model.category_logits(k, xs, ps, ls, cur)
        ctgt = torch.cat([it.cat_target[k] for it in items]).to(dev)
        scored = int((ctgt != -100).sum())
        if scored:
            cat_sum = cat_sum + F.cross_entropy(cl, ctgt, ignore_index=-100, reduction="sum")
            n_cat += scored
    loss = seg_sum / max(1, n_seg) + cat_sum / max(1, n_cat)
    return loss, (float(seg_sum.detach()), n_seg), (float(cat_sum.detach()), n_cat)


# ----------------------------------------------------------------------------- decoding


def _seg_tensor(segments: List[List[tuple]], T: int, device) -> torch.Tensor:
    seg = torch.full((len(segments), T), -1, dtype=torch.long)
    for b, layer in enumerate(segments):
        for m, (s, e) in enumerate(layer):
            seg[b, s:e] = m
    return seg.to(device)


def _next_segments(prev: List[tuple], decisions: List[int], target: str) -> List[tuple]:
    """Layer-k segments from one decision per layer-(k-1) segment (the first one is fixed: bit
    0, resp. "starts"; the net's own decision for it is not read)."""
    decisions = [0] + list(decisions[1:])
    out = []
    for m, (s, e) in enumerate(prev):
        if m == 0:
            out.append([s, e])
            continue
        new = (decisions[m] != decisions[m - 1]) if target == "parity" else bool(decisions[m])
        if new:
            out.append([s, e])
        else:
            out[-1][1] = e
    return [tuple(x) for x in out]


@torch.no_grad()
def decode_batch(model: ATPLParser, batch: Batch, vocab: Vocab, max_layers: int, gold_segments=False) -> List[Tree]:
    """Greedy layer-by-layer decoding (module docstring) of one batch: the trees below TOP.

    Each sentence keeps the nodes of its current layer as ``(start, end, category, layer made)``.
    At layer k: the segmenter decides the layer-(k-1) segments of sentences that have more than
    one (a single segment needs no decision), the classifier names every layer-k segment; a
    segment equal to one below is that node carried up, unless its category differs and the
    node was made at layer k-1 (then a unary node is made, as in the encoding). A sentence is
    done at the first layer with one segment that is carried, i.e. no unary node above its root
    remains to be made; after ``max_layers`` layers one root segment is forced. With
    ``gold_segments`` the segments of layer k are the gold ones and a sentence is done at its
    gold height."""
    model.eval()
    x = model.inputs(batch.words, batch.u)
    dev = x.device
    B, T = batch.words.shape
    cats = vocab.categories
    new_mask = torch.tensor([c in set(vocab.new_node_labels) for c in cats], device=dev)
    if not bool(new_mask.any()):
        new_mask[:] = True
    lengths = batch.lengths.tolist()
    cur = [[(t, t + 1, item.ex.tags[t], 1) for t in range(n)] for n, item in zip(lengths, batch.items)]
    layers: List[List[tuple]] = [[] for _ in range(B)]
    done = [False] * B
    k = 2
    while not all(done):
        idx = [b for b in range(B) if not done[b]]
        force_root = k > max_layers and not gold_segments
        new = {}
        if gold_segments:
            new = {b: batch.items[b].ex.enc.segments(min(k, batch.items[b].height)) for b in idx}
        else:
            for b in idx:
                if force_root or len(cur[b]) == 1:
                    new[b] = [(0, lengths[b])]
            todo = [b for b in idx if b not in new]
            if todo:
                it = torch.tensor(todo)
                prev = _seg_tensor([[(s, e) for s, e, _, _ in cur[b]] for b in todo], T, dev)
                logits = model.segment_logits(k, x[it.to(dev)], batch.pos[it.to(dev)], batch.lengths[it], prev)
                dec = segment_decisions(logits).tolist()
                pos = 0
                for b in todo:
                    n = len(cur[b])
                    new[b] = _next_segments([(s, e) for s, e, _, _ in cur[b]], dec[pos: pos + n], model.segment_target)
                    pos += n
        it = torch.tensor(idx)
        logits = model.category_logits(k, x[it.to(dev)], batch.pos[it.to(dev)], batch.lengths[it],
                                       _seg_tensor([new[b] for b in idx], T, dev))
        pos = 0
        for b in idx:
            below = {(s, e): (cat, made) for s, e, cat, made in cur[b]}
            nodes = []
            for s, e in new[b]:
                lg = logits[pos]
                pos += 1
                if (s, e) in below:
                    cat, made = below[(s, e)]
                    pred = cats[int(lg.argmax())]
                    if pred != cat and made == k - 1:
                        cat, made = pred, k  # a unary node over the node made one layer down
                else:
                    cat, made = cats[int(lg.masked_fill(~new_mask, float("-inf")).argmax())], k
                nodes.append((s, e, cat, made))
            layers[b].append([(s, e, cat) for s, e, cat, _ in nodes])
            cur[b] = nodes
            if len(nodes) == 1 and (force_root or (nodes[0][3] < k if not gold_segments else k >= batch.items[b].height)):
                done[b] = True
        k += 1
    return [build_tree(item.ex.words, item.ex.tags, layers[b], strict_heights=True) for b, item in enumerate(batch.items)]


def decode(model: ATPLParser, split: Split, vocab: Vocab, device, batch_size=32, max_layers=None,
           gold_segments=False) -> List[Tree]:
    """The decoded tree of every example, with its TOP put back (as the gold had it)."""
    max_layers = max_layers or 2 * vocab.n_layers
    out = []
    for batch in split.batches(batch_size):
        trees = decode_batch(model, batch.to(device), vocab, max_layers, gold_segments)
        out += [add_top(t, it.ex.top) for t, it in zip(trees, batch.items)]
    return out


def evaluate(model, split: Split, vocab: Vocab, device, batch_size=32, max_layers=None, gold_segments=False):
    """``(predicted trees, EVALB result)`` of one split."""
    pred = decode(model, split, vocab, device, batch_size, max_layers, gold_segments)
    return pred, evalb.score_trees([ex.gold for ex in split.examples], pred)


# ----------------------------------------------------------------------------- training


def run_epoch(model, split: Split, device, optimizer=None, batch_size=32, rng=None, clip_norm=5.0):
    """One pass (trains when ``optimizer`` is given); returns the mean loss per batch part."""
    train = optimizer is not None
    model.train(train)
    c = Counter()
    with torch.set_grad_enabled(train):
        for batch in split.batches(batch_size, shuffle=train, rng=rng):
            loss, (ss, ns), (cs, nc) = batch_loss(model, batch.to(device))
            if train:
                optimizer_step(model, optimizer, loss, clip_norm)
            c["seg"] += ss
            c["n_seg"] += ns
            c["cat"] += cs
            c["n_cat"] += nc
    seg = c["seg"] / max(1, c["n_seg"])
    cat = c["cat"] / max(1, c["n_cat"])
    return seg + cat, seg, cat


def train(cfg, model, splits, vocab, device, *, seed=1, max_epochs=30, patience=5, batch_size=32, lr=1e-3,
          clip_norm=5.0, save_dir=None, progress=True, max_layers=None, run_key=None):
    """Train with early stopping on the validation F1 (:func:`~.training.train_early_stopping`);
    returns the model with the best epoch's weights, that epoch and its validation F1. With
    ``save_dir``, ``SAVE_DIR/checkpoint_last.pt`` makes the run resumable (``run_key``: what
    must match to resume, e.g. the data files)."""

    def train_epoch(optimizer, rng):
        loss, seg, cat = run_epoch(model, splits["train"], device, optimizer, batch_size, rng, clip_norm)
        return loss, f" (segments {seg:.4g}, categories {cat:.4g})"

    def validate():
        loss, _, _ = run_epoch(model, splits["valid"], device, batch_size=batch_size)
        _, res = evaluate(model, splits["valid"], vocab, device, batch_size, max_layers)
        return Validation(res.all.f1, loss, f" (P {100 * res.all.precision:.2f}, R {100 * res.all.recall:.2f})")

    def save_best(epoch, f1):
        save_checkpoint(Path(save_dir) / "checkpoint_best.pt", model, cfg, vocab, epoch, f1)

    return train_early_stopping(model, train_epoch, validate, save_best if save_dir else None, seed=seed,
                                max_epochs=max_epochs, patience=patience, lr=lr, progress=progress,
                                score_name="valid F1", score_key="valid_f1",
                                last_path=Path(save_dir) / "checkpoint_last.pt" if save_dir else None,
                                run_key=dict(run_key or {}, config=cfg, batch_size=batch_size, clip_norm=clip_norm))


# ----------------------------------------------------------------------------- checkpoints


def save_checkpoint(path, model, cfg, vocab: Vocab, epoch, valid_f1):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"format": CKPT_FORMAT, "config": cfg, "vocab": vocab.as_dict(), "epoch": epoch, "valid_f1": valid_f1,
             "model": {k: v.detach().cpu() for k, v in model.state_dict().items()}}
    atomic_write(path, lambda f: torch.save(state, f))  # tmp file, fsync, rename


def load_checkpoint(path):
    """``(checkpoint dict, Vocab)``; torch's default ``weights_only`` loading."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001  (truncated, not a zip, ...)
        from ..checkpoint_io import diagnose

        raise CheckpointError(f"{path}: cannot be read: {diagnose(path, e) or e}") from e
    if not isinstance(ckpt, dict) or ckpt.get("format") != CKPT_FORMAT:
        raise CheckpointError(f"{path} is not a fairseq-tpr-parse checkpoint (format {CKPT_FORMAT})")
    return ckpt, Vocab(**ckpt["vocab"])


# ----------------------------------------------------------------------------- results


def result_row(split: str, res: evalb.EvalbResult, gold_seg: Optional[evalb.EvalbResult] = None) -> dict:
    row = {"split": split, **res.all.as_dict(), f"len<={res.cutoff_len}": res.cutoff.as_dict()}
    if gold_seg is not None:
        row["gold_segments"] = gold_seg.all.as_dict()
    return row


def markdown(rows: List[dict], title: str) -> str:
    columns = ["split", "trees", "precision", "recall", "F1", "complete match", "F1 with gold z_k (Table 3, col. 3)"]
    return results_markdown(title, columns, [
        [r["split"], r["valid_sentences"], percent(r["precision"]), percent(r["recall"]), percent(r["f1"]),
         percent(r["complete_match"]), percent(r["gold_segments"]["f1"]) if r.get("gold_segments") else "-"]
        for r in rows])


def title(cfg) -> str:
    return (f"ATPL parser, input={cfg['features']}, segments={cfg['segment_target']}, "
            f"layer input={cfg['layer_input']}")


def _mean_sd(xs: List[float]) -> str:
    if not xs:
        return "-"
    m = 100 * statistics.mean(xs)
    return f"{m:.2f} ± {100 * statistics.stdev(xs):.2f}" if len(xs) > 1 else f"{m:.2f}"


def seed_table(rows: List[tuple], split: str = "test", title: str = "parser F1 on the shapes trees") -> str:
    """Markdown: one row per ``(name, [results.json dicts])``: F1, P, R and the gold-z F1 of
    ``split``, mean ± sample sd over the runs (seeds)."""
    lines = [f"### {title} ({split}, EVALB COLLINS.prm, mean ± sd over runs)", "",
             "| parser input | runs | F1 | precision | recall | complete match | F1 with gold z_k |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, results in rows:
        got = [next((r for r in res["splits"] if r["split"] == split), None) for res in results]
        got = [g for g in got if g is not None]
        gold = [g["gold_segments"]["f1"] for g in got if g.get("gold_segments")]
        lines.append(f"| {name} | {len(got)} | {_mean_sd([g['f1'] for g in got])} | "
                     f"{_mean_sd([g['precision'] for g in got])} | {_mean_sd([g['recall'] for g in got])} | "
                     f"{_mean_sd([g['complete_match'] for g in got if 'complete_match' in g])} | {_mean_sd(gold)} |")
    return "\n".join(lines)
