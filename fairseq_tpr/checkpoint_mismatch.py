"""What differs between a checkpoint and the model built to load it, said once for every way a load
meets it: the plugin's models compare the shapes themselves before torch loads
(``models/tpr_transformer_base.py``, :func:`from_shapes`), and for any arch fairseq's loaders meet torch's
``Error(s) in loading state_dict`` (``fairseq_fixes/checkpoints.py``, :func:`from_load_error`). Both give a
:class:`Mismatch`, and :func:`explain` words it: the kind of model the checkpoint holds, a dictionary of
another size (other data), the other sizes with the flag that sets each, the parameters one side lacks,
and the fix.
"""
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

# fairseq adds/drops a few bookkeeping buffers across versions: never a mismatch
_BOOKKEEPING = ("version", "_float_tensor")

# parameter-name fragment -> the flags that set its shape
SHAPE_FLAGS = (
    ("_roles.roles", "--num-roles / --role-dim"),
    ("role_scorer", "--num-roles / --*-attention-heads"),
    ("embed_tokens", "the dictionary (binarize with the checkpoint's dict.*.txt) or --*-embed-dim"),
    ("output_projection", "the dictionary or --decoder-embed-dim"),
    ("fc1", "--*-ffn-embed-dim"),
    ("fc2", "--*-ffn-embed-dim"),
)
_DICTIONARY = ("embed_tokens", "output_projection")

_SIZE_MISMATCH = re.compile(r"size mismatch for (\S+): copying a param with shape torch\.Size\(\[([\d, ]*)\]\) from "
                            r"checkpoint, the shape in current model is torch\.Size\(\[([\d, ]*)\]\)")
_KEYS = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: (.*?)\.\s*$", re.M)
LOAD_ERROR = "Error(s) in loading state_dict for"


class Mismatch(NamedTuple):
    """``resized``: ``(name, checkpoint shape, model shape)``; ``missing``: the model's parameters the
    checkpoint lacks; ``unexpected``: the checkpoint's the model lacks; the families (:func:`family`) of
    both sides where their parameter names are known."""
    resized: List[Tuple[str, Tuple[int, ...], Tuple[int, ...]]]
    missing: List[str]
    unexpected: List[str]
    checkpoint_family: Optional[str] = None
    model_family: Optional[str] = None


def family(keys) -> str:
    """Which kind of model a state dict holds, from its parameter names."""
    keys = list(keys)
    if not any(k.startswith("encoder.") for k in keys) and any(k.startswith("decoder.layers.") for k in keys):
        if any("_roles.roles" in k for k in keys):
            return "discrete-role TP-Transformer language model (tp_transformer_d_lm)"
        if any(".r_proj." in k for k in keys):
            return "continuous-role TP-Transformer language model (tp_transformer_lm)"
        return "Transformer language model (transformer_lm_tp, transformer_lm)"
    if any("_roles.roles" in k for k in keys):
        return "discrete-role TP-Transformer (tp_transformer_d)"
    if any(".r_proj." in k for k in keys):
        return "continuous-role TP-Transformer (tp_transformer)"
    if any(k.startswith("encoder.layers.") for k in keys):
        return "plain Transformer (transformer)"
    return "model of another kind"


def from_shapes(model_shapes: Dict[str, tuple], checkpoint_shapes: Dict[str, tuple]) -> Optional[Mismatch]:
    """The mismatch of two ``name -> shape`` maps, or None when they fit."""
    own = {k: tuple(v) for k, v in model_shapes.items() if not k.endswith(_BOOKKEEPING)}
    theirs = {k: tuple(v) for k, v in checkpoint_shapes.items() if not k.endswith(_BOOKKEEPING)}
    resized = [(k, theirs[k], own[k]) for k in sorted(own) if k in theirs and own[k] != theirs[k]]
    missing, unexpected = sorted(set(own) - set(theirs)), sorted(set(theirs) - set(own))
    if not (resized or missing or unexpected):
        return None
    return Mismatch(resized, missing, unexpected, family(theirs), family(own))


def from_load_error(text: str) -> Optional[Mismatch]:
    """The mismatch torch's ``load_state_dict`` error text reports, or None for another error."""
    if LOAD_ERROR not in text:
        return None
    shape = lambda s: tuple(int(n) for n in s.split(",") if n.strip())  # noqa: E731
    resized = [(name, shape(theirs), shape(ours)) for name, theirs, ours in _SIZE_MISMATCH.findall(text)]
    keys = {kind: [k for k in names.replace('"', "").split(", ") if not k.endswith(_BOOKKEEPING)]
            for kind, names in _KEYS.findall(text)}
    return Mismatch(resized, sorted(keys.get("Missing", [])), sorted(keys.get("Unexpected", [])))


def _flag(name: str) -> str:
    return next((f for frag, f in SHAPE_FLAGS if frag in name), "the model sizes (--*-embed-dim, --*-attention-heads)")


def explain(m: Mismatch, checkpoint: Optional[str] = None, data: Optional[str] = None, arch: Optional[str] = None,
            data_dictionaries: Optional[str] = None, trained_on: Tuple[Optional[str], ...] = (None, None, None),
            model: Optional[str] = None) -> str:
    """The one-paragraph message of ``m``: ``checkpoint`` (its path) and ``data`` (the data directory) name
    what was loaded where; ``model`` and ``arch`` the model that was built (its kind, default the family of
    its parameter names); ``data_dictionaries`` the data directory's
    dictionary files; ``trained_on`` ``(data directory, source dictionary, target dictionary)`` the
    checkpoint was trained with (from its saved options), for the fix of a dictionary of another size."""
    built = ", ".join(x for x in (model or m.model_family, arch and f"--arch {arch}") if x)
    head = (f"checkpoint {checkpoint}" if checkpoint else "The checkpoint") + " does not fit the model built" \
        + (f" for {data}" if data else "") + (f" ({built})" if built else "")
    parts = []
    other_kind = m.checkpoint_family is not None and m.checkpoint_family != m.model_family
    if other_kind:
        parts.append(f"it holds a {m.checkpoint_family}")
    dictionary = [r for r in m.resized if any(frag in r[0] for frag in _DICTIONARY)][:1]
    if dictionary:
        name, theirs, ours = dictionary[0]
        where = f"the data directory's ({data_dictionaries})" if data_dictionaries else "the data's"
        parts.append(f"its dictionary has {theirs[0]} symbols ({name}: checkpoint {theirs} vs model {ours}) but "
                     f"{where} have {ours[0]}: the model was trained on other data (another data directory or --task)")
    other = [r for r in m.resized if r not in dictionary and not any(frag in r[0] for frag in _DICTIONARY)]
    parts += [f"{name}: checkpoint {theirs} vs model {ours} -> check {_flag(name)}" for name, theirs, ours in other[:3]]
    if m.missing or m.unexpected:
        counts = "; ".join(f"{kind} parameters {len(names)}, e.g. {names[0]}" for kind, names in
                           (("unexpected", m.unexpected), ("missing", m.missing)) if names)
        if m.checkpoint_family is None:
            parts.append(f"it holds another architecture ({counts})")
        elif not other_kind:
            parts.append(f"{counts} -> check --encoder-layers / --decoder-layers / --tpr-in / --no-embedding-roles")
    if other_kind or other or m.missing or m.unexpected:
        parts.append("build the checkpoint's architecture (fairseq-train --restore-file / --finetune-from-model: "
                     "its --arch and sizes; fairseq-generate / -interactive take them from the checkpoint: no "
                     "--model-overrides that change them)")
    if dictionary:
        data_dir, source, target = trained_on
        parts.append("pass the data directory the model was trained on"
                     + (f" ({data_dir}, per the checkpoint)" if data_dir else "")
                     + ", or binarize the input with its dictionaries (`fairseq-preprocess --srcdict "
                     + (f"{source} --tgtdict {target}`)" if source and target
                        else "DICT --tgtdict DICT` with the training data's dict.*.txt)"))
    return head + ": " + "; ".join(parts)
