"""STTR's Table IV similarity over a split (Sun, Wang, Li, Eq. 26): the library of
``fairseq-tpr-template-similarity`` (whose docstring has the definitions and the printed table).

For every sentence ``b`` of the split (teacher forcing on the reference, no decoding)::

    sim_ts(b) = (cosine(mean H_ts(b), mean E_t(b)) + 1) / 2      Eq. 26, mapped to [0, 1]
    sim_s(b)  = (cosine(mean H_s(b),  mean E_t(b)) + 1) / 2      the same without the template

:func:`read_checkpoint_cfg` and :func:`check_split` check every input before a model is built;
:func:`sentence_similarities` computes both values per sentence with the criterion's own
:func:`~fairseq_tpr.criterions.label_smoothed_cross_entropy_with_template_mse.representation_similarity`;
:func:`summarize` and :func:`format_markdown` give the table; :func:`run` does all of it for
several checkpoints.
"""
import math
import os
import sys
from typing import Dict, List, Optional

import torch

from ..criterions.label_smoothed_cross_entropy_with_template_mse import representation_similarity, shift_target
from ..errors import CheckpointError, ConfigError, InputError
from ..models.sttr import STTRModel
from ..tasks.template_summarization import TEMPLATE_LANG, template_prefix
from .dump import arch_of
from ..choices import SIMILARITY_BATCH_SIZE

TASK = "template_summarization"
DEFAULT_BATCH_SIZE = SIMILARITY_BATCH_SIZE


# ---------------------------------------------------------------------------------------------
# checking the inputs (before any model is built)


def _cfg_of(state, path):
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    if state.get("args") is not None:
        return convert_namespace_to_omegaconf(state["args"])
    if state.get("cfg") is not None:
        return state["cfg"]
    raise CheckpointError(f"{path} has neither 'cfg' nor 'args': it is not a checkpoint written by fairseq-train.")


def _get(cfg, key, default=None):
    try:
        value = getattr(cfg, key, default)
    except Exception:  # omegaconf: a missing key in struct mode
        return default
    return default if value is None else value


def read_checkpoint_cfg(path: str, data_bin: str):
    """The checkpoint's saved config (fairseq's ``load_checkpoint_to_cpu`` with ``data`` replaced),
    checked: an ``--arch sttr*`` model with ``--template-mode attention`` and the template task."""
    from fairseq import checkpoint_utils
    from fairseq.models import ARCH_MODEL_REGISTRY

    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path, arg_overrides={"data": data_bin})
    except Exception as e:  # noqa: BLE001  (torch.load / unpickling: any failure means "not a checkpoint")
        raise CheckpointError(f"cannot read {path} as a fairseq checkpoint ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}); pass a checkpoint_*.pt of fairseq-train.")
    cfg = _cfg_of(state, path)
    del state
    arch = arch_of(cfg.model)
    model_cls = ARCH_MODEL_REGISTRY.get(arch)
    if model_cls is None or not issubclass(model_cls, STTRModel):
        what = model_cls.__name__ if model_cls is not None else "a model of an unregistered arch"
        raise ConfigError(
            f"{path} holds {what} (--arch {arch}), not STTR: Table IV's similarity needs the template-aware "
            f"document H_ts of an --arch sttr* model (--task {TASK}, --template-mode attention).")
    mode = _get(cfg.model, "template_mode", "attention")
    if mode != "attention":
        raise ConfigError(
            f"{path} is --arch {arch} with --template-mode {mode}, which has no template-aware document H_ts "
            f"({'templates are ignored' if mode == 'none' else 'the decoder reads [H_s; H_t] side by side'}): "
            "Table IV compares H_ts (Eq. 20) with the target, so pass a --template-mode attention checkpoint.")
    task_name = _get(cfg.task, "_name")
    if task_name != TASK:
        raise ConfigError(f"{path} was trained with --task {task_name}, not {TASK}: STTR needs the templates "
                          f"that {TASK} loads; retrain with --task {TASK}.")
    return cfg


def check_split(data_bin: str, split: str, cfg, path: str):
    """The binarized source, target and template files of ``split`` are in DATA_BIN."""
    from fairseq.data import data_utils, indexed_dataset

    src, tgt = _get(cfg.task, "source_lang"), _get(cfg.task, "target_lang")
    if not src or not tgt:
        src, tgt = data_utils.infer_language_pair(data_bin)
    impl = _get(cfg.task, "dataset_impl")
    for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
        prefix = os.path.join(data_bin, f"{split}.{pair}.")
        if indexed_dataset.dataset_exists(prefix + src, impl=impl) and indexed_dataset.dataset_exists(prefix + tgt,
                                                                                                     impl=impl):
            break
    else:
        present = sorted({f.split(".")[0] for f in os.listdir(data_bin) if f.endswith(".idx")})
        raise InputError(
            f"no split {split!r} in {data_bin}: {data_bin}/{split}.{src}-{tgt}.{{{src},{tgt}}}.bin/.idx are missing "
            f"(splits there: {', '.join(present) or 'none'}); pass --gen-subset with one of them or binarize "
            f"{split} with fairseq-preprocess.")
    if template_prefix(data_bin, split, src, tgt, impl) is None:
        raise InputError(
            f"no templates for split {split!r} in {data_bin}: {split}.{src}-{tgt}.{TEMPLATE_LANG}.bin/.idx is missing; "
            f"write {split}.template (one per source line, fairseq-tpr-retrieve-templates) and binarize it with "
            f"`bash preprocess/templates.sh RAW_DIR {data_bin} {src} {tgt} {split}`.")


# ---------------------------------------------------------------------------------------------
# computing


def load_model(path: str, data_bin: str, device):
    """``(model in eval mode on device, cfg, task)`` of a checkpoint, the data directory replaced by ``data_bin``."""
    from fairseq import checkpoint_utils, tasks

    state = checkpoint_utils.load_checkpoint_to_cpu(path, arg_overrides={"data": data_bin})
    cfg = _cfg_of(state, path)
    try:
        task = tasks.setup_task(cfg.task, from_checkpoint=True)
    except FileNotFoundError as e:
        raise ConfigError(f"{data_bin} does not fit {path}: {e} (pass the data-bin the model was trained with).")
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], task=task, state=state)
    model = models[0].to(device)
    model.eval()
    return model, cfg, task


def sentence_similarities(model, task, split: str, batch_size: Optional[int], max_tokens: Optional[int], device,
                          progress: bool = True, desc: str = "",
                          target_kind: str = "decoder-input") -> Dict[int, List[float]]:
    """``{sentence id: [sim_ts, sim_s]}`` over every sentence of ``split`` (module docstring);
    ``target_kind``: which ``E_t`` (the criterion's ``--template-mse-target``)."""
    from fairseq import utils
    from tqdm import tqdm

    dataset = task.dataset(split)
    itr = task.get_batch_iterator(
        dataset=dataset, max_tokens=max_tokens, max_sentences=batch_size,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
        ignore_invalid_inputs=False, required_batch_size_multiple=1, seed=1, num_workers=0,
    ).next_epoch_itr(shuffle=False)
    pad = task.target_dictionary.pad()
    kept: Dict[str, torch.Tensor] = {}

    def keep_source(_module, _inputs, out):  # H_s^N, the input of the template-aware attention
        kept["h_s"], kept["mask"] = out["encoder_out"][0], out["encoder_padding_mask"][0]  # S x B x C, B x S

    handle = model.encoder.source_encoder.register_forward_hook(keep_source)
    sims: Dict[int, List[float]] = {}
    try:
        with torch.no_grad():
            for sample in tqdm(itr, desc=desc or f"similarity on {split}", unit="batch", disable=not progress,
                               file=sys.stderr):
                if not sample:
                    continue
                sample = utils.move_to_cuda(sample, device=device) if device.type == "cuda" else sample
                _, extra = model(**sample["net_input"])  # teacher forcing on the reference
                h_ts, ts_mask = extra["template_aware"][0], extra["template_aware_padding_mask"][0]  # S x B x C, B x S
                e_t, t_mask = shift_target(target_kind, model, extra, sample, pad)  # T x B x C, B x T
                sim_ts = representation_similarity(h_ts, ts_mask, e_t, t_mask)
                sim_s = representation_similarity(kept["h_s"], kept["mask"], e_t, t_mask)
                for i, a, b in zip(sample["id"].tolist(), sim_ts.tolist(), sim_s.tolist()):
                    sims[int(i)] = [a, b]
    finally:
        handle.remove()
    if len(sims) != len(dataset):
        raise ConfigError(f"{len(sims)} of the {len(dataset)} sentences of {split!r} were scored; check "
                          "--max-tokens against the longest source/template/target.")
    return sims


def target_kind(cfg) -> str:
    """The ``E_t`` of the checkpoint's criterion (``--template-mse-target``; its default,
    ``decoder-input``, for a checkpoint trained with another criterion)."""
    return str(_get(getattr(cfg, "criterion", None), "template_mse_target", "decoder-input"))


def _mean_std(values: List[float]):
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / n)


def default_label(cfg) -> str:
    crit = _get(cfg.criterion, "_name")
    if crit != "label_smoothed_cross_entropy_with_template_mse":
        return f"STTR ({crit or 'no'} criterion)"
    lam = float(_get(cfg.criterion, "template_mse_lambda", 1.0))
    return "STTR w/o loss" if lam == 0 else ("+MSE loss" if lam == 1 else f"+MSE loss (lambda {lam:g})")


def summarize(path: str, label: str, cfg, sims: Dict[int, List[float]]) -> Dict:
    ids = sorted(sims)
    ts_mean, ts_std = _mean_std([sims[i][0] for i in ids])
    s_mean, s_std = _mean_std([sims[i][1] for i in ids])
    crit = _get(cfg.criterion, "_name")
    lam = _get(cfg.criterion, "template_mse_lambda") if crit == "label_smoothed_cross_entropy_with_template_mse" else None
    return {"label": label, "path": path, "arch": arch_of(cfg.model), "tpr": _get(cfg.model, "tpr", "none"),
            "template_mse_lambda": None if lam is None else float(lam), "n": len(ids),
            "sim_ts": {"mean": ts_mean, "std": ts_std}, "sim_s": {"mean": s_mean, "std": s_std},
            "sentences": [[i, *sims[i]] for i in ids]}


def format_markdown(rows: List[Dict], data_bin: str, split: str) -> str:
    lines = [
        f"Table IV similarity (Sun, Wang, Li, Eq. 26) on split `{split}` of `{data_bin}`: per sentence, "
        "(cosine(mean H, mean E_t) + 1) / 2 with E_t the reference summary's token embeddings; mean (std) over "
        "sentences in percent. H_ts: template-aware document (Eq. 20); H_s: source encoder output without the "
        "template.",
        "",
        "| model | checkpoint | lambda | Sim(%) H_ts | std | Sim(%) H_s (no template) | std | sentences |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lam = "-" if r["template_mse_lambda"] is None else f"{r['template_mse_lambda']:g}"
        lines.append(f"| {r['label']} | `{r['path']}` | {lam} | {100 * r['sim_ts']['mean']:.2f}% | "
                     f"{100 * r['sim_ts']['std']:.2f} | {100 * r['sim_s']['mean']:.2f}% | "
                     f"{100 * r['sim_s']['std']:.2f} | {r['n']} |")
    return "\n".join(lines) + "\n"


def run(data: str, paths: List[str], labels: Optional[List[str]] = None, split: str = "test",
        batch_size: Optional[int] = None, max_tokens: Optional[int] = None, cpu: bool = False,
        progress: bool = True) -> List[Dict]:
    """One :func:`summarize` row per checkpoint of ``paths`` on ``split`` of the data-bin ``data``
    (every input checked before any model runs); ``labels`` name the rows (default: from the
    checkpoint's lambda, :func:`default_label`)."""
    if labels and len(labels) != len(paths):
        raise ConfigError(f"{len(labels)} --label for {len(paths)} --path: give one label per checkpoint "
                          "or none.")
    for n, flag in ((batch_size, "--batch-size"), (max_tokens, "--max-tokens")):
        if n is not None and n < 1:
            raise ConfigError(f"{flag} must be at least 1 (got {n}).")
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise InputError(f"checkpoint {missing[0]} does not exist (pass --path RUN/checkpoint_best.pt of an "
                         "--arch sttr* model).")
    if not os.path.isdir(data):
        raise InputError(f"data directory {data} does not exist (pass the data-bin the model was trained "
                         "with, templates binarized by preprocess/templates.sh).")
    cfgs = [read_checkpoint_cfg(p, data) for p in paths]  # every input checked before any model runs
    for path, cfg in zip(paths, cfgs):
        check_split(data, split, cfg, path)
    batch_size = batch_size if (batch_size or max_tokens) else DEFAULT_BATCH_SIZE
    device = torch.device("cuda" if torch.cuda.is_available() and not cpu else "cpu")
    rows = []
    for k, path in enumerate(paths):
        model, cfg, task = load_model(path, data, device)
        task.load_dataset(split, combine=False, epoch=1)
        sims = sentence_similarities(model, task, split, batch_size, max_tokens, device,
                                     progress=progress, desc=f"[{k + 1}/{len(paths)}] {path}",
                                     target_kind=target_kind(cfg))
        rows.append(summarize(path, labels[k] if labels else default_label(cfg), cfg, sims))
        del model
    return rows
