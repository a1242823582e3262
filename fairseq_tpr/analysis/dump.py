"""Run a frozen checkpoint over binarized data and keep what :mod:`.capture` records.

A :class:`Dump` holds, for ``N`` examples of one split, the source tokens, the target
tokens the decoder predicted at each position (the reference under teacher forcing, or
the model's own best hypothesis with ``generate=True``) and, per site key and component,
one ``T_i x H x d`` array per example (padding removed). Encoder arrays align with the
source tokens (their final ``</s>`` included), decoder arrays with the target tokens:
decoder position ``t`` reads ``</s>, y_1 .. y_(t-1)`` and predicts ``y_t``.

It is saved as one ``.npz`` file (numpy, no pickled objects: ``np.load(path)`` with the
default ``allow_pickle=False`` reads it): ``meta`` (a JSON string), ``src``/``tgt`` (all
examples' tokens concatenated, int32) with ``src_offsets``/``tgt_offsets`` (``N + 1``),
``ids`` (sample ids in the split), ``src_vocab``/``tgt_vocab`` (the dictionaries' symbols)
and ``"<key>/<component>"`` arrays concatenated over examples along the token axis
(``attn`` flattened per example, since its key length varies).

A language model (``--task language_modeling``: ``tp_transformer_lm``, ``tp_transformer_d_lm``,
``transformer_lm_tp``) has only decoder sites; its dump holds the tokens each position reads as
``src`` and the tokens it predicts as ``tgt`` (``meta["language_model"]``), one example per block of
the split (``--tokens-per-sample`` tokens across line ends, as the model was trained), or with
``fairseq-tpr-roles dump --lines`` one per line of the split (the task's ``--sample-break-mode eos``:
position t reads ``</s>, x_1 .. x_(t-1)`` and predicts ``x_t``, positions counted from the line's
start, labels one per piece of the line as for a decoder side).
"""
import json
import os
from typing import Dict, Iterable, List, Optional

import numpy as np
import torch

from ..errors import ConfigError, InputError
from ..choices import CAPTURE_COMPONENTS
from .capture import Capture, frozen, model_kind



# --------------------------------------------------------------------------- loading
def load_checkpoint(path: str, data: str, cpu: bool = True, overrides: Optional[Dict] = None):
    """(model in eval mode, task, model args) from a fairseq checkpoint, reading data from ``data``;
    ``overrides`` change more of the saved options (as fairseq's ``--model-overrides``)."""
    from fairseq import checkpoint_utils

    import fairseq_tpr

    fairseq_tpr.register()  # the archs and the checkpoint's types

    if not os.path.isfile(path):
        raise InputError(f"checkpoint {path} does not exist (pass --path PATH/checkpoint_best.pt)")
    if not os.path.isdir(data):
        raise InputError(f"data directory {data} does not exist (pass the data-bin made by fairseq-preprocess)")
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [path], arg_overrides={"data": data, **(overrides or {})})
    except FileNotFoundError as e:
        raise ConfigError(f"{path} does not fit the data in {data}: {e}. Pass the data-bin the model was trained "
                          "with (its dictionaries and language pair).")
    except (ValueError, RuntimeError) as e:
        raise ConfigError(f"cannot load {path} with the dictionaries of {data}:\n{e}")
    model = models[0]
    if not cpu and torch.cuda.is_available():
        model = model.cuda()
    model.eval()
    return model, task, cfg.model


def arch_of(args) -> str:
    return getattr(args, "arch", None) or getattr(args, "_name", "?")


def require_roles(model, path: str, arch: str, what: str = "role dumps"):
    kind = model_kind(model)
    if kind == "plain":
        raise ConfigError(
            f"{path} holds a model without roles (--arch {arch}): it has no role, filler or TPR vectors for {what}. "
            "Use a tp_transformer* or tp_transformer_d* checkpoint, or for this model ask only for "
            "--components attn,out (roles dump) / --representation layer (fairseq-tpr-probe)."
        )
    return kind


def load_split(task, split: str, data: str):
    try:
        task.load_dataset(split, combine=False, epoch=1)
    except FileNotFoundError as e:
        present = sorted({f.split(".")[0] for f in os.listdir(data) if f.endswith(".bin")})
        raise InputError(f"no split {split!r} in {data} ({e}); splits there: {', '.join(present) or 'none'}")
    return task.dataset(split)


# --------------------------------------------------------------------------- the dump
class Dump:
    """Per-example token arrays plus ``arrays[key][component]``: list of ``T_i x H x d`` arrays."""

    def __init__(self, meta: Dict, src: List[np.ndarray], tgt: List[np.ndarray], ids: List[int],
                 src_vocab: List[str], tgt_vocab: List[str], arrays: Dict[str, Dict[str, List[np.ndarray]]]):
        self.meta, self.src, self.tgt, self.ids = meta, src, tgt, ids
        self.src_vocab, self.tgt_vocab, self.arrays = src_vocab, tgt_vocab, arrays

    def __len__(self):
        return len(self.src)

    # ----- names and selection
    def keys(self) -> List[str]:
        return list(self.arrays)

    def layers(self, side: str) -> List[int]:
        parts = [k.split(".") for k in self.arrays if k.startswith(side + ".")]
        return sorted({int(p[1]) for p in parts if p[1].isdigit()})

    def site(self, side: str, layer, attention: str = "self") -> str:
        """Key of ``side`` layer ``layer`` (int, negative counts from the end, or ``"embed"``)
        ``attention`` (self/cross/out), with a clear message when out of range."""
        if side not in ("encoder", "decoder"):
            raise ConfigError(f"--side must be encoder or decoder (got {side!r})")
        if str(layer) == "embed":
            key = f"{side}.embed"
            if key not in self.arrays:
                raise ConfigError(f"this dump has no {side} embedding roles (only tp_transformer binds them, Eq. 2); "
                                  f"sites: {', '.join(self.keys())}")
            return key
        layers = self.layers(side)
        if not layers:
            raise ConfigError(f"this dump has no {side} layers; sites: {', '.join(self.keys()) or 'none'}")
        n = len(layers)
        try:
            i = int(layer)
        except ValueError:
            raise ConfigError(f"--layer must be an integer or 'embed' (got {layer!r})")
        if not -n <= i < n:
            raise ConfigError(
                f"--layer {i} is out of range: the {side} has {n} layers (0..{n - 1}, or -1 for the last)")
        i = layers[i]
        key = f"{side}.{i}.{attention}"
        if key not in self.arrays:
            there = sorted({k.split(".")[2] for k in self.arrays if k.startswith(f"{side}.{i}.")})
            raise ConfigError(f"{side} layer {i} has no {attention!r} site in this dump (it has: {', '.join(there)})")
        return key

    def component(self, key: str, comp: str) -> List[np.ndarray]:
        if key not in self.arrays:
            raise ConfigError(f"no site {key!r} in this dump; sites: {', '.join(self.keys())}")
        if comp not in self.arrays[key]:
            have = ", ".join(self.arrays[key]) or "nothing"
            hint = (" Role distributions exist only for tp_transformer_d (discrete roles); for continuous roles use "
                    "kmeans." if comp == "role_attn" else "")
            hint += " Dump again with --components ...,attn to keep attention maps." if comp == "attn" else ""
            raise ConfigError(f"site {key} holds no {comp!r} in this dump (it has: {have}).{hint}")
        return self.arrays[key][comp]

    def heads(self, key: str) -> int:
        comp = next(iter(self.arrays[key].values()))
        return comp[0].shape[1]

    def check_head(self, key: str, head: int) -> int:
        h = self.heads(key)
        if not -h <= head < h:
            raise ConfigError(f"--head {head} is out of range: {key} has {h} heads (0..{h - 1})")
        return head % h

    def check_example(self, example: int) -> int:
        if not 0 <= example < len(self):
            raise ConfigError(
                f"--example {example} is out of range: the dump holds {len(self)} examples (0..{len(self) - 1})")
        return example

    def heatmap(self, key: str, head: int, example: int, what: str = "attn"):
        """(matrix, row symbols, column symbols or None) of ``fairseq-tpr-roles heatmap``: the
        attention probabilities (``what="attn"``: queries x keys) or the role distributions
        (``"role_attn"``: tokens x N_r) of site ``key``, ``head`` and ``example``."""
        arrs = self.component(key, what)
        head = self.check_head(key, head)
        ex = self.check_example(example)
        side = key.split(".")[0]
        rows = self.tokens(side, ex)
        mat = arrs[ex][:, head]  # T x S (attn) or T x N_r (role_attn)
        if what != "attn":
            return mat, rows, None
        return mat, rows, self.tokens(keys_side(key), ex)

    def tokens(self, side: str, example: int, inputs: bool = True) -> List[str]:
        """Symbols at each position: the source, or for the decoder its input (``inputs``: the
        token read at that position; a language model's ``src``) or the target it predicts."""
        if side == "encoder" or (inputs and self.meta.get("language_model")):
            return [self.src_vocab[t] for t in self.src[example]]
        tgt = [self.tgt_vocab[t] for t in self.tgt[example]]
        return (["</s>"] + tgt[:-1]) if inputs else tgt

    def token_ids(self, side: str) -> List[np.ndarray]:
        return self.src if side == "encoder" else self.tgt

    # ----- files
    def save(self, path: str, dtype=np.float32) -> int:
        out = {
            "meta": np.array(json.dumps(self.meta)),
            "src": np.concatenate(self.src).astype(np.int32) if self.src else np.zeros(0, np.int32),
            "tgt": np.concatenate(self.tgt).astype(np.int32) if self.tgt else np.zeros(0, np.int32),
            "src_offsets": _offsets(self.src), "tgt_offsets": _offsets(self.tgt),
            "ids": np.asarray(self.ids, dtype=np.int64),
            "src_vocab": np.array(self.src_vocab), "tgt_vocab": np.array(self.tgt_vocab),
        }
        for key, comps in self.arrays.items():
            for comp, arrs in comps.items():
                if comp == "attn":
                    out[f"{key}/attn"] = np.concatenate([a.reshape(-1) for a in arrs]).astype(dtype)
                else:
                    out[f"{key}/{comp}"] = np.concatenate(arrs).astype(dtype)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savez(path, **out)
        return os.path.getsize(path if path.endswith(".npz") else path + ".npz")

    @classmethod
    def load(cls, path: str) -> "Dump":
        if not os.path.isfile(path):
            raise InputError(f"dump {path} does not exist (write one with `fairseq-tpr-roles dump`)")
        try:
            z = np.load(path)
            meta = json.loads(str(z["meta"]))
        except Exception as e:  # noqa: BLE001  (any unreadable file gets the same message)
            raise InputError(f"{path} is not a dump written by `fairseq-tpr-roles dump` ({e})")
        src, tgt = _split(z["src"], z["src_offsets"]), _split(z["tgt"], z["tgt_offsets"])
        arrays: Dict[str, Dict[str, List[np.ndarray]]] = {}
        for name in z.files:
            if "/" not in name:
                continue
            key, comp = name.rsplit("/", 1)
            flat = z[name].astype(np.float32)
            lengths = [len(t) for t in (src if key.startswith("encoder") else tgt)]
            if comp == "attn":
                klen = [len(s) for s in src] if keys_side(key) == "encoder" else lengths
                H = meta["heads"][key]
                parts, pos = [], 0
                for t, s in zip(lengths, klen):
                    parts.append(flat[pos:pos + t * H * s].reshape(t, H, s))
                    pos += t * H * s
            else:
                parts = _split(flat, _offsets_from(lengths))
            arrays.setdefault(key, {})[comp] = parts
        return cls(meta, src, tgt, z["ids"].tolist(), z["src_vocab"].tolist(), z["tgt_vocab"].tolist(), arrays)


def keys_side(key: str) -> str:
    """The side whose tokens the attention of site ``key`` reads as keys: the encoder's for the encoder
    and for cross-attention, the decoder's for the decoder's self-attention."""
    return "encoder" if key.startswith("encoder") or key.endswith(".cross") else "decoder"


def _offsets(seqs) -> np.ndarray:
    return _offsets_from([len(s) for s in seqs])


def _offsets_from(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _split(flat: np.ndarray, offsets: np.ndarray) -> List[np.ndarray]:
    return [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


# --------------------------------------------------------------------------- running the model
def batches(dataset, max_examples: Optional[int], batch_size: int):
    """Collated samples of the first ``max_examples`` examples of a LanguagePairDataset (split order)."""
    n = len(dataset) if max_examples is None else min(max_examples, len(dataset))
    for start in range(0, n, batch_size):
        yield dataset.collater([dataset[i] for i in range(start, min(n, start + batch_size))])


def generated_targets(model, task, sample, beam: int, max_len_a: float, max_len_b: int):
    """Replace ``sample``'s target and ``prev_output_tokens`` by the model's best hypotheses."""
    from fairseq.sequence_generator import SequenceGenerator

    tgt_dict = task.target_dictionary
    gen = SequenceGenerator([model], tgt_dict, beam_size=beam, max_len_a=max_len_a, max_len_b=max_len_b)
    hyps = gen.generate([model], sample)
    best = [h[0]["tokens"].cpu() for h in hyps]  # each ends with </s>
    B, T = len(best), max(len(h) for h in best)
    target = torch.full((B, T), tgt_dict.pad(), dtype=torch.long)
    prev = torch.full((B, T), tgt_dict.pad(), dtype=torch.long)
    for b, h in enumerate(best):
        target[b, :len(h)] = h
        prev[b, 0] = tgt_dict.eos()
        prev[b, 1:len(h)] = h[:-1]
    device = sample["net_input"]["src_tokens"].device
    sample = dict(sample)
    sample["target"] = target.to(device)
    sample["net_input"] = dict(sample["net_input"], prev_output_tokens=prev.to(device))
    return sample


def run_capture(model, task, dataset, max_examples: Optional[int] = None, components: Iterable[str] = CAPTURE_COMPONENTS,
                keys: Optional[Iterable[str]] = None, generate: bool = False, beam: int = 1,
                max_len_a: float = 0.0, max_len_b: int = 200, batch_size: int = 32,
                meta: Optional[Dict] = None) -> Dump:
    """Capture ``components`` at every site (or at ``keys``) for the first ``max_examples`` examples."""
    from fairseq.models import FairseqLanguageModel

    components = tuple(components)
    src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
    language_model = isinstance(model, FairseqLanguageModel)
    if language_model and generate:
        raise ConfigError("--generate decodes a source into a target: a language model's dump runs on the split's "
                          "own text (drop --generate)")
    src_l, tgt_l, ids = [], [], []
    arrays: Dict[str, Dict[str, List[np.ndarray]]] = {}
    heads: Dict[str, int] = {}
    max_diff = 0.0
    device = next(model.parameters()).device
    with frozen(model):
        for sample in batches(dataset, max_examples, batch_size):
            sample = _to(sample, device)
            if generate:
                sample = generated_targets(model, task, sample, beam, max_len_a, max_len_b)
            net = sample["net_input"]
            with Capture(model, want=components, keys=keys) as cap:
                if language_model:
                    model(net["src_tokens"])
                else:  # every input of the batch (STTR's templates too)
                    model(**net)
            max_diff = max(max_diff, cap.max_diff)
            src_mask = net["src_tokens"].ne(src_dict.pad()).cpu()  # B x S (left padded; a language model's right)
            tgt_mask = sample["target"].ne(tgt_dict.pad()).cpu()  # B x T (right padded)
            for b in range(src_mask.size(0)):
                ids.append(int(sample["id"][b]))
                src_l.append(net["src_tokens"][b].cpu()[src_mask[b]].numpy())
                tgt_l.append(sample["target"][b].cpu()[tgt_mask[b]].numpy())
                for key, comps in cap.data.items():
                    mask = src_mask[b] if key.startswith("encoder") else tgt_mask[b]
                    for comp, value in comps.items():
                        v = value[b][mask]  # T_i x H x ...
                        if comp == "attn":
                            kmask = src_mask[b] if keys_side(key) == "encoder" else tgt_mask[b]
                            v = v[..., kmask]
                        heads[key] = v.shape[1]
                        arrays.setdefault(key, {}).setdefault(comp, []).append(v.numpy())
    order = np.argsort(ids, kind="stable")  # collate sorts by length: restore split order
    src_l, tgt_l = [src_l[i] for i in order], [tgt_l[i] for i in order]
    for comps in arrays.values():
        for comp in comps:
            comps[comp] = [comps[comp][i] for i in order]
    meta = dict(meta or {})
    meta.update(kind=model_kind(model), mode="generated" if generate else "teacher-forcing", heads=heads,
                max_recompute_diff=max_diff, n=len(ids), language_model=language_model)
    return Dump(meta, src_l, tgt_l, sorted(ids), list(src_dict.symbols), list(tgt_dict.symbols), arrays)


def _to(sample, device):
    from fairseq import utils

    return utils.move_to_cuda(sample, device=device) if device.type == "cuda" else sample
