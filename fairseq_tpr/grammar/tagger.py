"""Training and evaluation of ATPL's BiLSTM POS tagger (Huang et al., Section 5, Eq. 8-10) on
unbinding vectors or words: the library of ``fairseq-tpr-pos-tagger``.

The tagger itself is :class:`~fairseq_tpr.grammar.tagger_model.BiLSTMPosTagger` (a torch module with
the paper's equations); this module holds everything around it:

* :func:`load_data`: the tag files (CoNLL-U or word/TAG) and ``fairseq-tpr-unbinding`` dumps of
  each split, checked against each other, as :class:`Split` tensors; the word vocabulary and tag
  set come from the training split (or from a checkpoint), other words map to ``<unk>``;
* :func:`train`: Adam with gradient clipping, early stopping on validation token accuracy
  (``patience`` epochs without improvement; an equal accuracy with a lower validation loss
  counts as better), the best epoch kept and saved as ``checkpoint_best.pt`` (the loop of
  :mod:`.training`, shared with the parser);
* :func:`evaluate`: per split, token accuracy and accuracy on out-of-vocabulary tokens and on
  tokens whose word had more than one tag in training (ambiguous), with their counts;
  :func:`markdown` prints them;
* :func:`save_checkpoint` / :func:`load_checkpoint`: a plain dict of tensors and lists (format
  ``fairseq_tpr.pos_tagger/1``) that torch's default ``weights_only`` loading reads.

Shapes are batch-first (``B x T``), as in the tagger.
"""
from collections import Counter, defaultdict
from pathlib import Path

import torch

from ..checkpoint_io import atomic_write
from ..corpora.pos import read_tagged
from ..errors import CheckpointError, ConfigError, InputError
from .tagger_model import BiLSTMPosTagger, tagging_loss
from .training import Validation, optimizer_step, percent, results_markdown, train_early_stopping
from .unbinding_dump import check_alignment, load_unbinding
from ..choices import GRAMMAR_SPLITS

CKPT_FORMAT = "fairseq_tpr.pos_tagger/1"
PAD, UNK = "<pad>", "<unk>"
SPLITS = GRAMMAR_SPLITS
MODEL_KEYS = ("features", "scorer", "context", "hidden", "rank", "word_dim", "dropout", "word_dropout")


def uses_unbinding(cfg) -> bool:
    """Whether a tagger with model config ``cfg`` reads unbinding vectors ``u_t``."""
    return cfg["features"] in ("unbinding", "both")


# ----------------------------------------------------------------------------- data


class Split:
    """One split's sentences as tensors: word ids, tag ids (-100 for a tag unseen in training), u_t."""

    def __init__(self, name, sentences, dump, word_index, tag_index, known_words, ambiguous):
        self.name = name
        self.sentences = sentences
        unk = word_index[UNK]
        self.words = [torch.tensor([word_index.get(w, unk) for w in s.words]) for s in sentences]
        self.tags = [torch.tensor([tag_index.get(t, -100) for t in s.tags]) for s in sentences]
        self.oov = [torch.tensor([w not in known_words for w in s.words]) for s in sentences]
        self.amb = [torch.tensor([w in ambiguous for w in s.words]) for s in sentences]
        self.u = [torch.from_numpy(dump.sentence(i)) for i in range(len(sentences))] if dump is not None else None
        self.unseen_tags = sum(int((t == -100).sum()) for t in self.tags)

    def __len__(self):
        return len(self.sentences)

    def batches(self, batch_size, shuffle=False, rng=None):
        order = list(range(len(self)))
        if shuffle:
            rng.shuffle(order)
        for k in range(0, len(order), batch_size):
            idx = order[k: k + batch_size]
            lengths = torch.tensor([len(self.words[i]) for i in idx])
            T = int(lengths.max())
            words = torch.zeros(len(idx), T, dtype=torch.long)  # PAD is index 0
            tags = torch.full((len(idx), T), -100, dtype=torch.long)
            oov = torch.zeros(len(idx), T, dtype=torch.bool)
            amb = torch.zeros(len(idx), T, dtype=torch.bool)
            u = None if self.u is None else torch.zeros(len(idx), T, self.u[idx[0]].size(-1))
            for b, i in enumerate(idx):
                n = len(self.words[i])
                words[b, :n], tags[b, :n], oov[b, :n], amb[b, :n] = self.words[i], self.tags[i], self.oov[i], self.amb[i]
                if u is not None:
                    u[b, :n] = self.u[i]
            yield words, u, lengths, tags, oov, amb


def read_split(tag_path, u_path, need_u, tag_format="auto", conllu_column="upos"):
    """``(sentences, unbinding dump or None)`` of one split, the dump checked against the tag file."""
    sentences = read_tagged(tag_path, tag_format, conllu_column)
    dump = None
    if need_u:
        dump = load_unbinding(u_path)
        check_alignment(sentences, dump, tag_path)
    return sentences, dump


def build_vocab(sentences):
    """``(words, tags, ambiguous words)`` of the training sentences; words start with PAD, UNK."""
    words = [PAD, UNK] + sorted({w for s in sentences for w in s.words})
    tags = sorted({t for s in sentences for t in s.tags})
    tag_sets = defaultdict(set)
    for s in sentences:
        for w, t in zip(s.words, s.tags):
            tag_sets[w].add(t)
    ambiguous = sorted(w for w, ts in tag_sets.items() if len(ts) > 1)
    return words, tags, ambiguous


def load_data(tag_files, u_files, cfg, ckpt=None, tag_format="auto", conllu_column="upos"):
    """``(splits, words, tags, ambiguous)`` for the splits of ``tag_files`` (split -> tag file;
    ``u_files``: split -> unbinding dump). The vocabulary is the checkpoint's when ``ckpt`` is given,
    else the training split's; a new tagger's ``cfg["u_dim"]`` is set from the dumps. Raises
    :class:`InputError` on inputs that do not fit each other."""
    need_u = uses_unbinding(cfg)
    data = {s: read_split(tag_files[s], u_files.get(s), need_u, tag_format, conllu_column) for s in tag_files}
    dims = {s: d.dim for s, (_, d) in data.items() if d is not None}
    if len(set(dims.values())) > 1:
        raise InputError(f"the unbinding dumps disagree on d_u: {dims}")
    if ckpt is not None:
        if need_u and dims and next(iter(dims.values())) != cfg["u_dim"]:
            raise ConfigError(f"the checkpoint was trained on d_u = {cfg['u_dim']}, the dumps have {dims}")
        words, tags, ambiguous = ckpt["words"], ckpt["tags"], ckpt["ambiguous"]
    else:
        cfg["u_dim"] = next(iter(dims.values())) if dims else 0
        words, tags, ambiguous = build_vocab(data["train"][0])
    word_index = {w: i for i, w in enumerate(words)}
    tag_index = {t: i for i, t in enumerate(tags)}
    known, amb = set(words[2:]), set(ambiguous)
    splits = {s: Split(s, sents, dump, word_index, tag_index, known, amb) for s, (sents, dump) in data.items()}
    return splits, words, tags, ambiguous


def describe(splits, words, tags, ambiguous, cfg) -> str:
    """The sizes of the splits and the vocabulary, for stderr."""
    lines = []
    for s, sp in splits.items():
        ntok = sum(len(x.words) for x in sp.sentences)
        lines.append(f"{s}: {len(sp)} sentences, {ntok} tokens"
                     + (f", {sp.unseen_tags} with a tag unseen in training (counted wrong)" if sp.unseen_tags else ""))
    lines.append(f"vocabulary {len(words)} words (incl. {PAD}, {UNK}), {len(tags)} tags, {len(ambiguous)} ambiguous "
                 "words" + (f", d_u {cfg['u_dim']}" if uses_unbinding(cfg) else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- train / evaluate


def run_epoch(model, split, device, optimizer=None, batch_size=32, rng=None, clip_norm=5.0):
    """One pass; trains when ``optimizer`` is given. Returns loss and the accuracy counts."""
    train = optimizer is not None
    model.train(train)
    tot_loss, n_loss = 0.0, 0
    c = Counter()
    with torch.set_grad_enabled(train):
        for words, u, lengths, tags, oov, amb in split.batches(batch_size, shuffle=train, rng=rng):
            words, tags = words.to(device), tags.to(device)
            u = u.to(device) if (u is not None and model.needs_u) else None
            scores = model(words, u, lengths)  # B x T x P
            n_scored = int((tags != -100).sum())
            if n_scored:
                loss = tagging_loss(scores, tags)
                if train:
                    optimizer_step(model, optimizer, loss, clip_norm)
                tot_loss += loss.item() * n_scored
                n_loss += n_scored
            mask = (torch.arange(words.size(1))[None, :] < lengths[:, None]).to(device)
            correct = (scores.argmax(-1) == tags) & mask  # a tag unseen in training (-100) is never correct
            oov, amb = oov.to(device) & mask, amb.to(device) & mask
            c["tokens"] += int(mask.sum())
            c["correct"] += int(correct.sum())
            c["oov_tokens"] += int(oov.sum())
            c["oov_correct"] += int((correct & oov).sum())
            c["amb_tokens"] += int(amb.sum())
            c["amb_correct"] += int((correct & amb).sum())
    return (tot_loss / n_loss if n_loss else float("nan")), c


def summarize(name, split, loss, c):
    def acc(k, n):
        return c[k] / c[n] if c[n] else None

    return {
        "split": name, "sentences": len(split), "tokens": c["tokens"], "loss": loss,
        "accuracy": acc("correct", "tokens"),
        "oov_tokens": c["oov_tokens"], "oov_accuracy": acc("oov_correct", "oov_tokens"),
        "ambiguous_tokens": c["amb_tokens"], "ambiguous_accuracy": acc("amb_correct", "amb_tokens"),
        "tags_unseen_in_train": split.unseen_tags,
    }


def evaluate(model, splits, device, batch_size=32):
    """One :func:`summarize` row per split, in train/valid/test order."""
    rows = []
    for s in SPLITS:
        if s in splits:
            loss, c = run_epoch(model, splits[s], device, batch_size=batch_size)
            rows.append(summarize(s, splits[s], loss, c))
    return rows


def markdown(rows, title):
    columns = ["split", "sentences", "tokens", "accuracy (%)", "OOV tokens", "OOV acc. (%)", "ambiguous tokens",
               "ambiguous acc. (%)"]
    return results_markdown(title, columns, [
        [r["split"], r["sentences"], r["tokens"], percent(r["accuracy"]), r["oov_tokens"], percent(r["oov_accuracy"]),
         r["ambiguous_tokens"], percent(r["ambiguous_accuracy"])] for r in rows])


def title(cfg) -> str:
    return f"POS tagger, features={cfg['features']}, scorer={cfg['scorer']}, context={cfg.get('context', 'blstm')}"


def save_checkpoint(path, model, cfg, words, tags, ambiguous, epoch, valid_acc):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"format": CKPT_FORMAT, "config": cfg, "words": words, "tags": tags, "ambiguous": ambiguous,
             "epoch": epoch, "valid_accuracy": valid_acc,
             "model": {k: v.detach().cpu() for k, v in model.state_dict().items()}}
    atomic_write(path, lambda f: torch.save(state, f))  # tmp file, fsync, rename


def load_checkpoint(path):
    if not Path(path).is_file():
        raise InputError(f"{path}: no such checkpoint")
    ckpt = torch.load(path, map_location="cpu")  # weights_only (torch's default): plain containers and tensors
    if not isinstance(ckpt, dict) or ckpt.get("format") != CKPT_FORMAT:
        raise CheckpointError(f"{path} is not a fairseq-tpr-pos-tagger checkpoint (format {CKPT_FORMAT})")
    return ckpt


def build_model(cfg, n_words, n_tags):
    return BiLSTMPosTagger(n_words, n_tags, u_dim=cfg["u_dim"], features=cfg["features"], scorer=cfg["scorer"],
                           context=cfg.get("context", "blstm"),
                           hidden=cfg["hidden"], rank=cfg["rank"], word_dim=cfg["word_dim"],
                           dropout=cfg["dropout"], word_dropout=cfg["word_dropout"], pad_idx=0, unk_idx=1)


def train(cfg, model, splits, device, words, tags, ambiguous, *, seed=1, max_epochs=30, patience=5,
          batch_size=32, lr=1e-3, clip_norm=5.0, save_dir=None, progress=True, run_key=None):
    """Train ``model`` on ``splits["train"]`` with early stopping on the validation token accuracy
    (:func:`~.training.train_early_stopping`); returns the model with the best epoch's weights and
    that epoch. With ``save_dir``, ``SAVE_DIR/checkpoint_last.pt`` makes the run resumable
    (``run_key``: what must match to resume, e.g. the data files)."""

    def train_epoch(optimizer, rng):
        return run_epoch(model, splits["train"], device, optimizer, batch_size, rng, clip_norm)[0], ""

    def validate():
        loss, c = run_epoch(model, splits["valid"], device, batch_size=batch_size)
        return Validation(c["correct"] / max(1, c["tokens"]), loss)

    def save_best(epoch, valid_acc):
        save_checkpoint(Path(save_dir) / "checkpoint_best.pt", model, cfg, words, tags, ambiguous, epoch, valid_acc)

    model, best_epoch, _ = train_early_stopping(
        model, train_epoch, validate, save_best if save_dir else None, seed=seed, max_epochs=max_epochs,
        patience=patience, lr=lr, progress=progress, score_name="valid accuracy", score_key="valid_acc",
        score_unit="%", last_path=Path(save_dir) / "checkpoint_last.pt" if save_dir else None,
        run_key=dict(run_key or {}, config=cfg, batch_size=batch_size, clip_norm=clip_norm))
    return model, best_epoch
