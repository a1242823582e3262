"""How a model with discrete role dictionaries returns their role distributions.

Every :class:`~fairseq_tpr.modules.DiscreteRoleBinding` publishes its distributions
(``T x B x H x N_r``, fp32 or wider) to the listeners of :mod:`fairseq_tpr.modules.taps`;
:meth:`ReturnsRoleAttention.role_attention` listens for the duration of one forward pass and
collects them by module name, for the model to put in ``extra["role_attn"]``. Nothing is kept
on the modules or the model between calls. :meth:`ReturnsRoleAttention.role_bindings` lists the
bindings, for the model to hand them their dictionaries normalised together
(:func:`~fairseq_tpr.modules.role_dictionary.normalized_together`).
"""
from contextlib import contextmanager
from typing import Dict, Iterable, Iterator

from torch import Tensor, nn

from ..modules import taps
from ..modules.role_dictionary import DiscreteRoleBinding


class ReturnsRoleAttention:
    """Mixin for an ``nn.Module`` model whose role bindings' distributions it returns::

        with self.role_attention() as role_attn:
            x, extra = ...  # the forward pass
        extra["role_attn"] = role_attn  # binding name -> T x B x H x N_r
    """

    @contextmanager
    def role_attention(self: nn.Module) -> Iterator[Dict[str, Tensor]]:
        """Yields a dict that fills, during the ``with`` block, with binding name (e.g.
        ``encoder.layers.0.self_attn_roles``) -> role distributions ``T x B x H x N_r``."""
        names = self._role_binding_index()
        rebuilt = False
        role_attn: Dict[str, Tensor] = {}

        def keep(module, values):
            nonlocal names, rebuilt
            name = names.get(module)
            if name is None and not rebuilt:  # a binding added since the index was built?
                names, rebuilt = self._index_role_bindings(), True
                name = names.get(module)
            if name is not None:  # a binding of this model (not of another one run inside the block)
                role_attn[name] = values["role_attn"]

        with taps.listen(keep, DiscreteRoleBinding, keys=("role_attn",)):
            yield role_attn

    def role_bindings(self: nn.Module) -> Iterable[DiscreteRoleBinding]:
        """The model's role bindings (the index :meth:`role_attention` keeps), e.g. for
        :func:`~fairseq_tpr.modules.role_dictionary.normalized_together`."""
        return self._role_binding_index().keys()

    def _role_binding_index(self: nn.Module) -> Dict[nn.Module, str]:
        names = self.__dict__.get("_role_binding_names")
        return self._index_role_bindings() if names is None else names

    def _index_role_bindings(self: nn.Module) -> Dict[nn.Module, str]:
        """binding -> its name in this model, built once (not a walk over the modules on every
        forward) and rebuilt when an unknown binding of this model publishes."""
        names = {m: n for n, m in self.named_modules() if isinstance(m, DiscreteRoleBinding)}
        self.__dict__["_role_binding_names"] = names
        return names
