"""Capture roles, fillers, TPRs, attention and role distributions from a frozen model.

Nothing is changed in the model and nothing is recomputed for the TPR modules: the TP
attention, the role bindings and the embedding binding publish what they computed to the
listeners of :mod:`fairseq_tpr.modules.taps`, and :class:`Capture` listens for one forward
pass. Two things come from forward hooks instead: the layer outputs, and the attention
probabilities of fairseq's own ``MultiheadAttention`` (the attention of ``tp_transformer_d``
and of plain Transformers), whose fused path returns head-averaged weights only; those are
recomputed from the module's inputs with its own weights and checked against the output it
produced (a mismatch raises a ``RuntimeError`` with its traceback, a bug to report, so a dump
can never silently disagree with the model).

Keys name one site of the network (``side.layer.kind``):

==================  ==========================================================================
``encoder.embed``   embedding role of Schlag et al. Eq. 2 (``r = W_p e + b_p``, one "head")
``encoder.2.self``  encoder layer 2 self-attention
``decoder.0.self``  decoder layer 0 self-attention
``decoder.0.cross`` decoder layer 0 encoder-decoder (cross) attention
``decoder.1.out``   output of decoder layer 1 (before the final layer norm of a pre-LN stack)
==================  ==========================================================================

STTR's encoder side is its source encoder (``sttr --tpr discrete``: the source's role bindings); its
template encoder reads the template, a token stream a dump does not keep, and is not captured.

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
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Dict, Iterable, Optional

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from ..modules import DiscreteRoleBinding, EmbeddingRoleBinding, TPMultiheadAttention, taps
from ..modules.precision import at_least_fp32
from ..choices import CAPTURE_COMPONENTS

ATOL = 1e-4  # recomputation vs module output (fp32); relative to the output scale, see _check
_ROLE_PARTS = {"role", "filler", "tpr"}


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
        # STTR's encoder: its source encoder is the encoder side (its template encoder reads a third token
        # stream, which a dump does not keep)
        part = getattr(part, "source_encoder", part)
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
        raise RuntimeError(  # a bug, not a user error: keep the traceback
            f"{name}: the recomputed attention does not reproduce the module output (max |diff| {diff:.3g}). "
            "The module's forward differs from the equations this capture assumes; this is a bug to report."
        )
    return diff


def recompute_attention(module: MultiheadAttention, query: Tensor, key: Tensor, value: Tensor,
                        key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor]):
    """Attention of one call of fairseq's own ``MultiheadAttention`` without incremental state
    (the TP attention publishes its own, see the module docstring).

    query ``T x B x C``, key/value ``S x B x C``. Returns ``probs`` (``B x H x T x S``, at least
    fp32) and the output ``T x B x C`` that the module should give.
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
    v_bar = torch.matmul(probs, at_least_fp32(v)).permute(2, 0, 1, 3).reshape(T, B, C)  # T x B x C
    return probs, module.out_proj(v_bar.to(query.dtype))


class Capture:
    """Context manager collecting what :func:`sites` compute during one forward pass.

    ``with Capture(model, want={"role", "filler", "tpr", "role_attn", "out"}) as cap: model(...)``;
    then ``cap.data[key][component]`` is a ``B x T x ...`` CPU tensor (float32, or float64 for a float64 model) and
    ``cap.max_diff`` the largest error of the recomputed attention of fairseq's own
    ``MultiheadAttention`` (0 when there is none). Only forward passes without
    incremental state are captured (run teacher forcing on generated outputs instead).
    """

    def __init__(self, model: nn.Module, want: Iterable[str] = ("role", "filler", "tpr", "role_attn", "out"),
                 keys: Optional[Iterable[str]] = None):
        self.model = model
        self.want = set(want)
        unknown = self.want - set(CAPTURE_COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; choose from {', '.join(CAPTURE_COMPONENTS)}")
        self.keys = None if keys is None else set(keys)
        self.data: Dict[str, Dict[str, Tensor]] = {}
        self.max_diff = 0.0

    def __enter__(self):
        self._stack = ExitStack()
        self._tapped: Dict[nn.Module, tuple] = {}  # module -> (site key, reader of its published values)
        for key, module in sites(self.model).items():
            site = key.replace(".roles", "")
            if self.keys is not None and site not in self.keys:
                continue
            if isinstance(module, TPMultiheadAttention):
                if self.want & (_ROLE_PARTS | {"attn"}):
                    self._tapped[module] = (site, self._tp_attention)
            elif isinstance(module, DiscreteRoleBinding):
                if self.want & (_ROLE_PARTS | {"role_attn"}):
                    self._tapped[module] = (site, self._discrete)
            elif isinstance(module, EmbeddingRoleBinding):
                if self.want & _ROLE_PARTS:
                    self._tapped[module] = (site, self._embedding)
            elif isinstance(module, MultiheadAttention):  # fairseq's own: only the attention probabilities
                if "attn" in self.want:
                    self._hook(module, partial(self._attention, key))
            elif "out" in self.want:
                self._hook(module, partial(self._layer, key))
        kinds = tuple({type(m) for m in self._tapped})
        self._stack.enter_context(taps.listen(self._published, kinds))
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False

    def _hook(self, module: nn.Module, hook):
        self._stack.callback(module.register_forward_hook(hook, with_kwargs=True).remove)

    def _put(self, key: str, comp: str, value: Tensor):
        if comp in self.want:
            self.data.setdefault(key, {})[comp] = at_least_fp32(value.detach()).cpu()

    def _published(self, module, values):
        site = self._tapped.get(module)
        if site is not None:
            key, read = site
            read(key, module, values)

    def _tp_attention(self, key, module, values):
        """Schlag Eq. 3-6, as :class:`TPMultiheadAttention` published them (``T x B x C``)."""
        if values["incremental"]:
            raise ValueError("Capture needs full (teacher-forced) forward passes, not incremental decoding")
        T, B, C = values["role"].shape
        for comp in ("role", "filler", "tpr"):
            self._put(key, comp, values[comp].transpose(0, 1).reshape(B, T, module.num_heads, -1))
        self._put(key, "attn", values["attn"].transpose(1, 2))  # B x T x H x S

    def _discrete(self, key, module, values):
        """Jiang Eq. 3-6, as :class:`DiscreteRoleBinding` published them (``T x B x ...``)."""
        T, B, C = values["filler"].shape  # F: the attention output after the residual (Eq. 3)
        H = module.num_heads
        self._put(key, "role", values["role"].transpose(0, 1))  # B x T x H x d_r  (Eq. 5)
        self._put(key, "filler", values["filler"].transpose(0, 1).reshape(B, T, H, -1))
        self._put(key, "tpr", values["tpr"].transpose(0, 1).reshape(B, T, H, -1))  # Eq. 6
        self._put(key, "role_attn", values["role_attn"].transpose(0, 1))

    def _embedding(self, key, module, values):
        """Schlag Eq. 2 as one "head" (``B x T x 1 x C``; the embedding slot is batch-first)."""
        for comp in ("role", "filler", "tpr"):
            self._put(key, comp, values[comp].unsqueeze(2))

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
            probs, out = recompute_attention(
                module, query, k_in, v_in, kwargs.get("key_padding_mask"), kwargs.get("attn_mask"))
        self.max_diff = max(self.max_diff, _check(key, out, output[0]))
        self._put(key, "attn", probs.transpose(1, 2))  # B x T x H x S

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
