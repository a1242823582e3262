"""Train and evaluate ATPL's BiLSTM POS tagger (Huang et al., Section 5, Eq. 8-10) on unbinding vectors.

    fairseq-tpr-pos-tagger --features unbinding \\
        --train-tags data/shapes/train.pos --train-u runs/atpl/u/train.npz \\
        --valid-tags data/shapes/valid.pos --valid-u runs/atpl/u/valid.npz \\
        --test-tags data/shapes/test.pos --test-u runs/atpl/u/test.npz \\
        --save-dir runs/pos/unbinding --results-json runs/pos/unbinding/results.json

    # the same tagger on word embeddings alone (no --*-u files needed)
    fairseq-tpr-pos-tagger --features words --train-tags ... --valid-tags ... --test-tags ... --save-dir runs/pos/words

    # evaluate a saved tagger
    fairseq-tpr-pos-tagger --load runs/pos/unbinding/checkpoint_best.pt --test-tags ... --test-u ...

Tag files are CoNLL-U (UPOS, or XPOS with --conllu-column xpos) or word/TAG (one sentence per
line), detected from the extension or the content. Unbinding files are ``fairseq-tpr-unbinding``
dumps (.npz with vectors, offsets, words); their words must equal the tag file's, sentence by
sentence. The word vocabulary and the tag set come from the training split; other words map to
``<unk>``. Training stops early when validation token accuracy has not improved for
``--patience`` epochs; the best epoch is kept (``checkpoint_best.pt``).

Reported per split (Markdown on stdout, JSON with --results-json): token accuracy, and accuracy
on tokens whose word is not in the training vocabulary (OOV) and on tokens whose word had more
than one tag in training (ambiguous), with their counts.
"""
import argparse
import json
import math
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional

import torch

from fairseq_tpr.checkpoint_io import atomic_write
from fairseq_tpr.data.pos_corpus import CorpusError, check_alignment, load_unbinding, read_tagged
from fairseq_tpr.modules.pos_tagger import CONTEXTS, FEATURES, SCORERS, BiLSTMPosTagger, tagging_loss

CKPT_FORMAT = "fairseq_tpr.pos_tagger/1"
PAD, UNK = "<pad>", "<unk>"
SPLITS = ("train", "valid", "test")
MODEL_KEYS = ("features", "scorer", "context", "hidden", "rank", "word_dim", "dropout", "word_dropout")


def get_parser():
    p = argparse.ArgumentParser(
        prog="fairseq-tpr-pos-tagger", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog="\n".join(__doc__.splitlines()[1:]),
    )
    for split in SPLITS:
        p.add_argument(f"--{split}-tags", help=f"{split} tag file (CoNLL-U or word/TAG)")
        p.add_argument(f"--{split}-u", help=f"{split} unbinding vectors (.npz from fairseq-tpr-unbinding)")
    p.add_argument("--tag-format", default="auto", choices=["auto", "conllu", "wordtag"])
    p.add_argument("--conllu-column", default="upos", choices=["upos", "xpos"], help="CoNLL-U tag column")
    m = p.add_argument_group("model (ignored with --load: the checkpoint's are used)")
    m.add_argument("--features", default="unbinding", choices=FEATURES,
                   help="BLSTM input: u_t (Eq. 8), a word embedding, or both concatenated")
    m.add_argument("--scorer", default="factored", choices=SCORERS,
                   help="tag scores: word-conditioned W(x_t) of Eq. 9-10, or a plain linear map (ablation)")
    m.add_argument("--context", default="blstm", choices=CONTEXTS,
                   help="the BLSTM of Eq. 8, or none: a per-token probe of the input vectors (not in the paper)")
    m.add_argument("--hidden", type=int, default=128, help="BLSTM hidden size per direction")
    m.add_argument("--rank", type=int, default=64, help="inner size of W(x) = W_a diag(W_b x) W_c")
    m.add_argument("--word-dim", type=int, default=64, help="word embedding size (features words/both)")
    m.add_argument("--dropout", type=float, default=0.2)
    m.add_argument("--word-dropout", type=float, default=0.05, help="probability of replacing a training word by <unk>")
    t = p.add_argument_group("training")
    t.add_argument("--max-epochs", type=int, default=30)
    t.add_argument("--patience", type=int, default=5, help="stop after this many epochs without a better valid accuracy (equal accuracy: a lower valid loss counts as better)")
    t.add_argument("--batch-size", type=int, default=32, help="sentences per batch")
    t.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    t.add_argument("--clip-norm", type=float, default=5.0)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    t.add_argument("--no-progress-bar", action="store_true")
    o = p.add_argument_group("output")
    o.add_argument("--save-dir", help="write checkpoint_best.pt here")
    o.add_argument("--load", help="evaluate this saved tagger (no training)")
    o.add_argument("--results-json", help="write the per-split results here")
    return p


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


def read_split(args, split, need_u):
    tag_path, u_path = getattr(args, f"{split}_tags"), getattr(args, f"{split}_u")
    sentences = read_tagged(tag_path, args.tag_format, args.conllu_column)
    dump = None
    if need_u:
        dump = load_unbinding(u_path)
        check_alignment(sentences, dump, tag_path)
    return sentences, dump


def build_vocab(sentences):
    words = [PAD, UNK] + sorted({w for s in sentences for w in s.words})
    tags = sorted({t for s in sentences for t in s.tags})
    tag_sets = defaultdict(set)
    for s in sentences:
        for w, t in zip(s.words, s.tags):
            tag_sets[w].add(t)
    ambiguous = sorted(w for w, ts in tag_sets.items() if len(ts) > 1)
    return words, tags, ambiguous


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
                    optimizer.zero_grad()
                    loss.backward()
                    if clip_norm > 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
                    optimizer.step()
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


def markdown(rows, title):
    def pct(x):
        return "-" if x is None else f"{100 * x:.2f}"

    lines = [f"### {title}", "",
             "| split | sentences | tokens | accuracy (%) | OOV tokens | OOV acc. (%) | ambiguous tokens | ambiguous acc. (%) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['split']} | {r['sentences']} | {r['tokens']} | {pct(r['accuracy'])} | {r['oov_tokens']} | "
                     f"{pct(r['oov_accuracy'])} | {r['ambiguous_tokens']} | {pct(r['ambiguous_accuracy'])} |")
    return "\n".join(lines)


def save_checkpoint(path, model, cfg, words, tags, ambiguous, epoch, valid_acc):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"format": CKPT_FORMAT, "config": cfg, "words": words, "tags": tags, "ambiguous": ambiguous,
             "epoch": epoch, "valid_accuracy": valid_acc,
             "model": {k: v.detach().cpu() for k, v in model.state_dict().items()}}
    atomic_write(path, lambda f: torch.save(state, f))  # tmp file, fsync, rename


def load_checkpoint(path):
    if not Path(path).is_file():
        raise CorpusError(f"{path}: no such checkpoint")
    ckpt = torch.load(path, map_location="cpu")  # weights_only (torch's default): plain containers and tensors
    if not isinstance(ckpt, dict) or ckpt.get("format") != CKPT_FORMAT:
        raise CorpusError(f"{path} is not a fairseq-tpr-pos-tagger checkpoint (format {CKPT_FORMAT})")
    return ckpt


def build_model(cfg, n_words, n_tags):
    return BiLSTMPosTagger(n_words, n_tags, u_dim=cfg["u_dim"], features=cfg["features"], scorer=cfg["scorer"],
                           context=cfg.get("context", "blstm"),
                           hidden=cfg["hidden"], rank=cfg["rank"], word_dim=cfg["word_dim"],
                           dropout=cfg["dropout"], word_dropout=cfg["word_dropout"], pad_idx=0, unk_idx=1)


def main(argv=None):
    parser = get_parser()
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads()))))
    given = [s for s in SPLITS if getattr(args, f"{s}_tags")]
    for s in SPLITS:
        if getattr(args, f"{s}_u") and not getattr(args, f"{s}_tags"):
            parser.error(f"--{s}-u given without --{s}-tags")
    if args.load:
        if args.train_tags:
            parser.error("--load evaluates a saved tagger; drop --train-tags (or drop --load to train a new one)")
        if not given:
            parser.error("--load needs at least one of --valid-tags/--test-tags to evaluate")
    else:
        if not args.train_tags or not args.valid_tags:
            parser.error("training needs --train-tags and --valid-tags (valid is used for early stopping)")
        if args.max_epochs < 1 or args.patience < 1 or args.batch_size < 1:
            parser.error("--max-epochs, --patience and --batch-size must be >= 1")

    try:
        if args.load:
            ckpt = load_checkpoint(args.load)
            cfg = ckpt["config"]
        else:
            ckpt = None
            cfg = {k: getattr(args, k) for k in MODEL_KEYS}
        need_u = cfg["features"] in ("unbinding", "both")
        if need_u:
            missing = [f"--{s}-u" for s in given if not getattr(args, f"{s}_u")]
            if missing:
                parser.error(f"--features {cfg['features']} reads unbinding vectors: give {' '.join(missing)} "
                             f"(write them with fairseq-tpr-unbinding), or use --features words")
        elif any(getattr(args, f"{s}_u") for s in given):
            print("note: --features words ignores the --*-u files", file=sys.stderr)
        data = {s: read_split(args, s, need_u) for s in given}
        dims = {s: d.dim for s, (_, d) in data.items() if d is not None}
        if len(set(dims.values())) > 1:
            raise CorpusError(f"the unbinding dumps disagree on d_u: {dims}")
        if ckpt is not None:
            if need_u and dims and next(iter(dims.values())) != cfg["u_dim"]:
                raise CorpusError(f"the checkpoint was trained on d_u = {cfg['u_dim']}, the dumps have {dims}")
            words, tags, ambiguous = ckpt["words"], ckpt["tags"], ckpt["ambiguous"]
        else:
            cfg["u_dim"] = next(iter(dims.values())) if dims else 0
            words, tags, ambiguous = build_vocab(data["train"][0])
    except CorpusError as e:
        sys.exit(f"error: {e}")

    word_index = {w: i for i, w in enumerate(words)}
    tag_index = {t: i for i, t in enumerate(tags)}
    known = set(words[2:])
    amb = set(ambiguous)
    splits = {s: Split(s, sents, dump, word_index, tag_index, known, amb) for s, (sents, dump) in data.items()}
    for s, sp in splits.items():
        ntok = sum(len(x.words) for x in sp.sentences)
        print(f"{s}: {len(sp)} sentences, {ntok} tokens"
              + (f", {sp.unseen_tags} with a tag unseen in training (counted wrong)" if sp.unseen_tags else ""),
              file=sys.stderr)
    print(f"vocabulary {len(words)} words (incl. {PAD}, {UNK}), {len(tags)} tags, {len(ambiguous)} ambiguous words"
          + (f", d_u {cfg['u_dim']}" if need_u else ""), file=sys.stderr)

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    device = torch.device(args.device)
    model = build_model(cfg, len(words), len(tags)).to(device)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
    else:
        model, best_epoch = train(args, cfg, model, splits, device, rng, words, tags, ambiguous)

    rows = []
    for s in SPLITS:
        if s in splits:
            loss, c = run_epoch(model, splits[s], device, batch_size=args.batch_size)
            rows.append(summarize(s, splits[s], loss, c))
    title = f"POS tagger, features={cfg['features']}, scorer={cfg['scorer']}, context={cfg.get('context', 'blstm')}"
    print(markdown(rows, title))
    if args.results_json:
        Path(args.results_json).parent.mkdir(parents=True, exist_ok=True)
        result = {"config": cfg, "checkpoint": args.load or (str(Path(args.save_dir) / "checkpoint_best.pt") if args.save_dir else None),
                  "splits": rows, "tag_files": {s: getattr(args, f"{s}_tags") for s in given},
                  "u_files": {s: getattr(args, f"{s}_u") for s in given} if need_u else {}}
        if ckpt is None:
            result["best_epoch"] = best_epoch
        Path(args.results_json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def train(args, cfg, model, splits, device, rng, words, tags, ambiguous):
    from tqdm import tqdm

    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    best_acc, best_loss, best_epoch, best_state, bad = -1.0, math.inf, 0, None, 0
    bar = tqdm(range(1, args.max_epochs + 1), desc="epochs", unit="epoch", disable=args.no_progress_bar, file=sys.stderr)
    t0 = time.time()
    for epoch in bar:
        tr_loss, _ = run_epoch(model, splits["train"], device, optimizer, args.batch_size, rng, args.clip_norm)
        va_loss, c = run_epoch(model, splits["valid"], device, batch_size=args.batch_size)
        va_acc = c["correct"] / max(1, c["tokens"])
        if not math.isfinite(tr_loss):
            sys.exit(f"error: training loss is {tr_loss} at epoch {epoch}; lower --lr")
        bar.set_postfix(train_loss=f"{tr_loss:.3f}", valid_loss=f"{va_loss:.3f}", valid_acc=f"{100 * va_acc:.2f}")
        tqdm.write(f"epoch {epoch}: train loss {tr_loss:.4g} | valid loss {va_loss:.4g} | valid accuracy "
                   f"{100 * va_acc:.2f}% | {time.time() - t0:.0f}s", file=sys.stderr)
        if va_acc > best_acc or (va_acc == best_acc and va_loss < best_loss):  # ties: the lower valid loss
            best_acc, best_loss, best_epoch, bad = va_acc, va_loss, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if args.save_dir:
                save_checkpoint(Path(args.save_dir) / "checkpoint_best.pt", model, cfg, words, tags, ambiguous, epoch, va_acc)
        else:
            bad += 1
            if bad >= args.patience:
                break
    bar.close()
    model.load_state_dict(best_state)
    print(f"best epoch {best_epoch} (valid accuracy {100 * best_acc:.2f}%), {epoch} epochs in {time.time() - t0:.0f}s",
          file=sys.stderr)
    return model, best_epoch


if __name__ == "__main__":
    main()
