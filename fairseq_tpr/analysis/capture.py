"""Capture roles, fillers, TPRs, attention and role distributions from a frozen model.

Nothing is changed in the model: forward hooks on the attention modules, the role
bindings and the layers receive each module's inputs and output; roles and fillers are
then *recomputed* from those inputs with the module's own weights, and the
recomputation is checked against the output the module actually produced (a mismatch
raises :class:`CaptureMismatch`, so a dump can never silently disagree with the model).

Keys name one site of the network (``side.layer.kind``):

==================  ==========================================================================
``encoder.embed``   embedding role of Schlag et al. Eq. 2 (``r = W_p e + b_p``, one "head")
``encoder.2.self``  encoder layer 2 self-attention
``decoder.0.self``  decoder layer 0 self-attention
``decoder.0.cross`` decoder layer 0 encoder-decoder (cross) attention
``decoder.1.out``   output of decoder layer 1 (before the final layer norm of a pre-LN stack)
==================  ==========================================================================

What each site holds, per token (``H`` heads):

* continuous roles (``tp_transformer``, Schlag Eq. 3-6): ``role`` r^h = W_r z + b_r and
  ``filler`` v_bar^h = softmax(q k^T / sqrt(d_k)) v, both ``H x d_k``; ``tpr`` = v_bar * r
  (the input of ``out_proj``);
* discrete roles (``tp_transformer_d``, Jiang Eq. 3-6): ``filler`` F (attention output
  after the residual), ``role`` R_h = softmax(F W_r^h) r_hat, ``tpr`` R * F + F, all
  ``H x d_r``, and ``role_attn`` softmax(F W_r^h) (``H x N_r``);
* every attention (also of a plain Transformer): ``attn``, the attention probabilities
  ``H x S`` over the keys (kept only when asked for: they are large);
* every layer: ``out``, the layer output (``1 x C``).

Arrays are returned per batch as ``B x T x ...`` (batch-first) tensors on the CPU.
"""
from contextlib import contextmanager
from functools import partial
from typing import Dict, Iterable, Optional

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from ..modules import DiscreteRoleBinding, EmbeddingRoleBinding, TPMultiheadAttention
from ..modules.precision import at_least_fp32

ATOL = 1e-4  # recomputation vs module output (fp32); relative to the output scale, see _check
COMPONENTS = ("role", "filler", "tpr", "role_attn", "attn", "out")


class CaptureMismatch(RuntimeError):
    """The recomputed roles/fillers do not reproduce a module's output."""


def model_kind(model: nn.Module) -> str:
    """``"continuous"`` (TP attention), ``"discrete"`` (role dictionaries) or ``"plain"``."""
    mods = list(model.modules())
    if any(isinstance(m, DiscreteRoleBinding) for m in mods):
        return "discrete"
    if any(isinstance(m, TPMultiheadAttention) for m in mods):
        return "continuous"
    return "plain"


def sites(model: nn.Module) -> Dict[str, nn.Module]:
    """Site key -> module (attention, role binding, embedding binding or layer), in network order."""
    out: Dict[str, nn.Module] = {}
    for side in ("encoder", "decoder"):
        part = getattr(model, side, None)
        if part is None:
            continue
        if isinstance(getattr(part, "layernorm_embedding", None), EmbeddingRoleBinding):
            out[f"{side}.embed"] = part.layernorm_embedding
        for i, layer in enumerate(part.layers):
            out[f"{side}.{i}.self"] = layer.self_attn
            if getattr(layer, "self_attn_roles", None) is not None:
                out[f"{side}.{i}.self.roles"] = layer.self_attn_roles
            if getattr(layer, "encoder_attn", None) is not None:
                out[f"{side}.{i}.cross"] = layer.encoder_attn
                if getattr(layer, "encoder_attn_roles", None) is not None:
                    out[f"{side}.{i}.cross.roles"] = layer.encoder_attn_roles
            out[f"{side}.{i}.out"] = layer
    return out


def _check(name: str, recomputed: Tensor, actual: Tensor) -> float:
    diff = (at_least_fp32(recomputed) - at_least_fp32(actual)).abs().max().item() if actual.numel() else 0.0
    scale = max(1.0, at_least_fp32(actual).abs().max().item()) if actual.numel() else 1.0
    if not diff <= ATOL * scale:
        raise CaptureMismatch(
            f"{name}: the recomputed roles/fillers do not reproduce the module output (max |diff| {diff:.3g}). "
            "The module's forward differs from the equations this capture assumes; this is a bug to report."
        )
    return diff


def recompute_attention(module: MultiheadAttention, query: Tensor, key: Tensor, value: Tensor,
                        key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor]):
    """Attention of one fairseq (TP-)MultiheadAttention call without incremental state.

    query ``T x B x C``, key/value ``S x B x C``. Returns ``probs`` (``B x H x T x S``),
    ``v_bar`` (``B x T x H x d_k``, the filler of Schlag Eq. 4), ``r`` (``B x T x H x d_k``
    or None for plain attention) and the output ``T x B x C`` that the module should give.
    """
    T, B, C = query.shape
    S = key.size(0)
    H, d = module.num_heads, module.head_dim

    def heads(x):  # L x B x C -> B x H x L x d
        return x.reshape(x.size(0), B, H, d).permute(1, 2, 0, 3)

    q, k, v = heads(module.q_proj(query)), heads(module.k_proj(key)), heads(module.v_proj(value))
    scores = torch.matmul(at_least_fp32(q), at_least_fp32(k).transpose(-1, -2)) * module.scaling  # B x H x T x S
    if attn_mask is not None:
        scores = scores + at_least_fp32(attn_mask).view(1, 1, T, S)
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask.view(B, 1, 1, S).to(torch.bool), float("-inf"))
    probs = F.softmax(scores, dim=-1)
    v_bar = torch.matmul(probs, at_least_fp32(v)).permute(0, 2, 1, 3)  # B x T x H x d
    r = None
    flat = v_bar.reshape(B, T, C)
    if isinstance(module, TPMultiheadAttention):
        r = at_least_fp32(module.r_proj(query)).transpose(0, 1).reshape(B, T, H, d)  # B x T x H x d   (Eq. 3)
        flat = flat * r.reshape(B, T, C)  # Eq. 6 before W_o
    out = module.out_proj(flat.to(query.dtype)).transpose(0, 1)  # T x B x C
    return probs, v_bar, r, out


class Capture:
    """Context manager collecting what :func:`sites` compute during one forward pass.

    ``with Capture(model, want={"role", "filler", "tpr", "role_attn", "out"}) as cap: model(...)``;
    then ``cap.data[key][component]`` is a ``B x T x ...`` CPU tensor (float32, or float64 for a float64 model) and
    ``cap.max_diff`` the largest recomputation error seen. Only forward passes without
    incremental state are captured (run teacher forcing on generated outputs instead).
    """

    def __init__(self, model: nn.Module, want: Iterable[str] = ("role", "filler", "tpr", "role_attn", "out"),
                 keys: Optional[Iterable[str]] = None):
        self.model = model
        self.want = set(want)
        unknown = self.want - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; choose from {', '.join(COMPONENTS)}")
        self.keys = None if keys is None else set(keys)
        self.data: Dict[str, Dict[str, Tensor]] = {}
        self.max_diff = 0.0
        self._handles = []

    def __enter__(self):
        for key, module in sites(self.model).items():
            if self.keys is not None and key.replace(".roles", "") not in self.keys:
                continue
            if isinstance(module, MultiheadAttention):
                if not self.want & {"role", "filler", "tpr", "attn"}:
                    continue
                hook = partial(self._attention, key)
            elif isinstance(module, DiscreteRoleBinding):
                if not self.want & {"role", "filler", "tpr", "role_attn"}:
                    continue
                hook = partial(self._discrete, key.replace(".roles", ""))
            elif isinstance(module, EmbeddingRoleBinding):
                if not self.want & {"role", "filler", "tpr"}:
                    continue
                hook = partial(self._embedding, key)
            else:
                if "out" not in self.want:
                    continue
                hook = partial(self._layer, key)
            self._handles.append(module.register_forward_hook(hook, with_kwargs=True))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        return False

    def _put(self, key: str, comp: str, value: Tensor):
        if comp in self.want:
            self.data.setdefault(key, {})[comp] = at_least_fp32(value.detach()).cpu()

    @staticmethod
    def _arg(args, kwargs, name, pos):
        return kwargs[name] if name in kwargs else (args[pos] if len(args) > pos else None)

    def _attention(self, key, module, args, kwargs, output):
        if kwargs.get("incremental_state") is not None:
            raise ValueError("Capture needs full (teacher-forced) forward passes, not incremental decoding")
        query = self._arg(args, kwargs, "query", 0)
        k_in = self._arg(args, kwargs, "key", 1)
        v_in = self._arg(args, kwargs, "value", 2)
        with torch.no_grad():
            probs, v_bar, r, out = recompute_attention(
                module, query, k_in, v_in, kwargs.get("key_padding_mask"), kwargs.get("attn_mask"))
        self.max_diff = max(self.max_diff, _check(key, out, output[0]))
        self._put(key, "attn", probs.transpose(1, 2))  # B x T x H x S
        if r is not None:  # continuous roles: Schlag Eq. 3-6
            self._put(key, "role", r)
            self._put(key, "filler", v_bar)
            self._put(key, "tpr", v_bar * r)

    def _discrete(self, key, module, args, kwargs, output):
        x = args[0] if args else kwargs["x"]  # F: T x B x C (attention output after the residual, Eq. 3)
        tpr, role_attn = output
        T, B, C = x.shape
        with torch.no_grad():
            roles_hat = F.normalize(at_least_fp32(module.roles), p=2.0, dim=-1)  # Eq. 4
            R = torch.matmul(at_least_fp32(role_attn), roles_hat)  # T x B x H x d_r  (Eq. 5)
            rec = at_least_fp32(x) + R.reshape(T, B, C) * at_least_fp32(x)  # Eq. 6
        self.max_diff = max(self.max_diff, _check(key, rec, tpr))
        H = module.num_heads
        self._put(key, "role", R.transpose(0, 1))
        self._put(key, "filler", x.transpose(0, 1).reshape(B, T, H, -1))
        self._put(key, "tpr", tpr.transpose(0, 1).reshape(B, T, H, -1))
        self._put(key, "role_attn", role_attn.transpose(0, 1))

    def _embedding(self, key, module, args, kwargs, output):
        e = args[0] if args else kwargs["e"]  # B x T x C (fairseq applies the slot before the transpose)
        with torch.no_grad():
            e_in = module.layer_norm(e) if module.layer_norm is not None else e
            r = module.role_proj(e_in)  # Eq. 2
            rec = e_in * r
        self.max_diff = max(self.max_diff, _check(key, rec, output))
        self._put(key, "role", r.unsqueeze(2))  # B x T x 1 x C
        self._put(key, "filler", e_in.unsqueeze(2))
        self._put(key, "tpr", output.unsqueeze(2))

    def _layer(self, key, module, args, kwargs, output):
        x = output[0] if isinstance(output, tuple) else output  # T x B x C
        self._put(key, "out", x.transpose(0, 1).unsqueeze(2))  # B x T x 1 x C


@contextmanager
def frozen(model: nn.Module):
    """Eval mode and no gradients for the duration; restores the training flag."""
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was)
