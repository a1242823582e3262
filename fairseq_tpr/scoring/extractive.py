"""Extractive summaries from trained ``discourse_synthesizer`` checkpoints, and the slides'
results table over several of them: the library of ``fairseq-tpr-extract`` and
``fairseq-tpr-extractive-table`` (and of the hub's ``extract``).

:func:`unit_scores` scores every unit of every document (batches formed here, so no document is
dropped), :func:`select` picks the top ``k`` units or the best units within a word budget, in
document order; :func:`select_limited` is the authors' selection (``k`` units or ``max_words`` words,
whichever comes first, each unit bringing the units it needs). :func:`score_entries` does that for checkpoints and the ``lead``/``oracle``
baselines and scores the summaries; :func:`group_runs` merges the seeds of one model (mean and
sample standard deviation), :func:`fmt` and :func:`markdown_table` print the rows.
"""
import json
import re
from pathlib import Path

import torch

from ..errors import ConfigError, InputError
from ..models.discourse_synthesizer_hub import select_units as select  # noqa: F401  (used by cli/extract)

# the authors' summary limits (Wendy-Xiao/ext_summ_disco_tree_attn, main.py and test.py, whose default
# dataset is CNN/DM): -word_length_limit 80, -unit_length_limit 6 EDUs (test.py) / 3 sentences (main.py)
AUTHORS_MAX_WORDS = 80
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_words(text):
    """Words and punctuation marks of a unit (``\\w+`` runs and single other characters), close to the
    tokenized text whose tokens the authors count."""
    return len(_TOKEN.findall(text))


def select_limited(scores, units, k=None, max_words=None, requires=None):
    """The authors' selection (``run.py``'s ``predict``): units in score order; each brings the units
    it needs (``requires``: ``[[i, j], ...]``, unit i needs unit j, followed transitively), those not
    chosen yet join the summary; units and words (:func:`count_words`) are counted, and the
    selection stops as soon as there are ``k`` units or ``max_words`` words. The unit that reaches a
    limit is kept (so a summary can pass ``max_words`` by part of a unit, and ``k`` by the units a
    unit brings). Returns the indices in document order."""
    if k is None and max_words is None:
        raise ConfigError("select_limited needs k or max_words")
    need = {}
    for i, j in requires or []:
        need.setdefault(int(i), []).append(int(j))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    chosen, seen, words = [], set(), 0
    for i in order:
        todo, closure = [i], []
        while todo:  # breadth first, as the authors' select_edus_with_dependent
            u = todo.pop(0)
            if u in closure:
                continue
            closure.append(u)
            todo.extend(need.get(u, []))
        for u in closure:
            if u not in seen:
                seen.add(u)
                chosen.append(u)
                words += count_words(units[u])
        if (k is not None and len(chosen) >= k) or (max_words is not None and words >= max_words):
            break
    return sorted(chosen)


def read_requires(data, split, n_docs):
    """``DATA/SPLIT.requires.jsonl`` (written by ``preprocess/extractive.py``): per document the
    ``[i, j]`` pairs (0-based) of units that need other units."""
    path = Path(data) / f"{split}.requires.jsonl"
    if not path.is_file():
        raise InputError(f"{path} is missing: --with-dependencies needs what each unit needs, which "
                         f"preprocess/extractive.py writes when the units' sentences are known (--unit edu "
                         f"--units-from-trees with preprocess/rst_parse trees) or P.jsonl gives \"requires\"")
    from ..data.textio import read_lines

    rows = [json.loads(line) for line in read_lines(path)]
    if len(rows) != n_docs:
        raise InputError(f"{path} has {len(rows)} lines but split {split!r} has {n_docs} documents: rebuild the split")
    return rows


def choose(scores, texts, k=None, words=None, max_words=None, requires=None):
    """One document's selection: :func:`select_limited` with ``max_words`` or ``requires`` (``requires``
    may be ``[]``), else :func:`select` (the top ``k``, or the ``words`` budget)."""
    if max_words is not None or requires is not None:
        return select_limited(scores, texts, k=k, max_words=max_words, requires=requires)
    return select(scores, texts, k=k, words=words)


def load(path, data):
    """``(model in eval mode, task)`` of a checkpoint, reading the data directory ``data``."""
    from fairseq import checkpoint_utils

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": data})
    model = models[0].eval()
    return model, task


@torch.no_grad()
def unit_scores(model, dataset, batch_size=32):
    """Logits of every unit of every document, ``[np.array per document]`` in dataset order."""
    out = [None] * len(dataset)
    for start in range(0, len(dataset), batch_size):
        batch = dataset.collater([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        logits, _ = model(**batch["net_input"])
        for b, i in enumerate(batch["id"].tolist()):
            out[i] = logits[b, : int(batch["net_input"]["src_lengths"][b])].float().numpy()
    return out


SLIDE_NAMES = {"dense": "Dense", "random-learned": "Learned Random", "random-fixed": "Fixed Random",
               "none": "No attention", "dtree": "D-Tree", "ctree": "C-Tree", "ctree-nuc": "C-Tree w/Nuc"}


METRICS = ("rouge1", "rouge2", "rougeL", "picks_first", "oracle_precision")


def group_runs(runs, error):
    """One row per model name (first-appearance order): the runs with the same name are the seeds of
    one model; each metric becomes the mean, ``METRIC_std`` the sample standard deviation (n - 1;
    0 for one run), ``n`` the number of runs and ``runs`` the runs themselves. Runs of one name must
    have the same attention, heads and parameter counts (``error`` is called otherwise)."""
    groups = {}
    for r in runs:
        groups.setdefault(r["model"], []).append(r)
    rows = []
    for name, rs in groups.items():
        keys = {(r["attention"], r["heads"], r["params_attention"], r["params_total"]) for r in rs}
        if len(keys) > 1:
            error(f"the runs named {name!r} are different models ({sorted(map(str, keys))}): only the seeds of "
                  f"one model may share a name; give the others another NAME=")
        row = {k: rs[0][k] for k in ("model", "attention", "heads", "params_attention", "params_total")}
        row["checkpoint"] = rs[0]["checkpoint"] if len(rs) == 1 else [r["checkpoint"] for r in rs]
        for m in METRICS:
            vals = [r[m] for r in rs]
            mean = sum(vals) / len(vals)
            row[m] = mean
            row[m + "_std"] = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else 0.0
        row["n"] = len(rs)
        row["runs"] = rs
        rows.append(row)
    return rows


def fmt(row, metric, unit=""):
    """``33.19`` for one run, ``33.19 +- 0.12`` (mean +- sample std) for several."""
    v = f"{row[metric]:.2f}" if not unit else f"{row[metric]:.1f}{unit}"
    if row["n"] > 1:
        v += f" ± {row[metric + '_std']:.2f}" if not unit else f" ± {row[metric + '_std']:.1f}"
    return v


def score_entries(entries, data, split, texts, refs, scorer, rouge_l, k=None, words=None, max_words=None,
                  requires=None):
    """One row per ``(name, what)`` of ``entries``, ``what`` a checkpoint path, ``"lead"`` (the first
    units) or ``"oracle"`` (the units labelled 1 in ``SPLIT.labels.npy``): the summaries of ``split``
    chosen as :func:`select` does, scored by ``scorer`` against ``refs`` (ROUGE-1, ROUGE-2 and the
    ``rouge_l`` metric of the scorer), with the model's attention, heads and parameter counts and
    the selection statistics; with ``max_words`` or ``requires`` (one list per document) the
    selection is :func:`select_limited`. Returns ``(rows, the last ScoreResult)``."""
    import numpy as np

    data = Path(data)
    labels, index = np.load(data / f"{split}.labels.npy"), np.load(data / f"{split}.index.npy")
    oracle_sets = [set(np.nonzero(labels[u0:u0 + n])[0].tolist()) for u0, n, _, _ in index]
    runs_out, res = [], None
    for name, path in entries:
        if path in ("lead", "oracle"):
            if path == "lead":
                chosen = [choose([-i for i in range(len(t))], t, k=k, words=words, max_words=max_words,
                                 requires=requires[d] if requires else None) for d, t in enumerate(texts)]
            else:
                chosen = [sorted(o) for o in oracle_sets]
            row = {"model": name, "checkpoint": None, "attention": None, "heads": None,
                   "params_attention": None, "params_total": None}
        else:
            model, task = load(path, str(data))
            task.load_dataset(split)
            scores = unit_scores(model, task.dataset(split))
            chosen = [choose(s, t, k=k, words=words, max_words=max_words, requires=requires[d] if requires else None)
                      for d, (s, t) in enumerate(zip(scores, texts))]
            heads = model.layers[0].self_attn.num_heads
            label = name or (f"Dot Product({heads})" if model.attention_type == "dot"
                             else SLIDE_NAMES[model.attention_type])
            counts = model.parameter_counts()
            row = {"model": label, "checkpoint": path, "attention": model.attention_type, "heads": heads,
                   "params_attention": counts["attention"], "params_total": counts["total"]}
        hyps = [" ".join(t[i].strip() for i in c) for c, t in zip(chosen, texts)]
        res = scorer.score(hyps, [refs])
        n_sel = sum(len(c) for c in chosen)
        row.update({"rouge1": res.headline("ROUGE-1"), "rouge2": res.headline("ROUGE-2"),
                    "rougeL": res.headline(rouge_l),
                    # how often the selection holds unit 1, and the share of selected units the oracle also picks
                    "picks_first": 100.0 * sum(0 in c for c in chosen) / len(chosen),
                    "oracle_precision": 100.0 * sum(len(o.intersection(c)) for o, c in zip(oracle_sets, chosen))
                    / max(n_sel, 1)})
        runs_out.append(row)
    return runs_out, res


def markdown_table(rows, selection_stats=False):
    """The slides' table: one line per row of :func:`group_runs`."""
    extra = selection_stats
    lines = ["| Model | ROUGE-1 | ROUGE-2 | ROUGE-L | # Heads | # Params(attn) | # Params |"
             + (" picks unit 1 | picks an oracle unit |" if extra else ""),
             "|---|---|---|---|---|---|---|" + ("---|---|" if extra else "")]
    for r in rows:
        params = ("- | - | -" if r["heads"] is None else
                  f"{r['heads']} | {r['params_attention'] / 1e6:.2f}M | {r['params_total'] / 1e6:.2f}M")
        cells = [fmt(r, m) for m in ("rouge1", "rouge2", "rougeL")]
        name = r["model"] + (f" (n={r['n']})" if r["n"] > 1 else "")
        lines.append(f"| {name} | {' | '.join(cells)} | {params} |"
                     + (f" {fmt(r, 'picks_first', '%')} | {fmt(r, 'oracle_precision', '%')} |" if extra else ""))
    return "\n".join(lines)
