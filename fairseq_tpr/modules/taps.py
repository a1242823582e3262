"""Read-out of what a module computed inside one forward pass, for whoever listens.

The TPR modules (:class:`~fairseq_tpr.modules.TPMultiheadAttention`,
:class:`~fairseq_tpr.modules.DiscreteRoleBinding`,
:class:`~fairseq_tpr.modules.EmbeddingRoleBinding`) call :func:`publish` with the tensors the
analysis and the models need (roles, fillers, attention and role distributions); a listener
installed with :func:`listen` receives them for the duration of a ``with`` block::

    with taps.listen(lambda module, values: ..., DiscreteRoleBinding):
        model(...)

Nothing is stored on a module: the values go straight to the listeners, and with no listener
:func:`publish` returns after one empty-list check (the normal forward is not slowed down). A
listener may name the values it needs (``keys``); a module asks :func:`wanted` whether anyone needs
a given read-out before it computes one that its fast path does not have (the fused role binding
publishes ``role_attn`` alone unless a listener wants its roles or fillers).
The models return role distributions through this (:mod:`fairseq_tpr.models.role_capture`)
and :class:`fairseq_tpr.analysis.capture.Capture` reads roles and fillers from it.
"""
from contextlib import contextmanager
from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple, Type, Union

from torch import nn

Listener = Callable[[nn.Module, Dict[str, Any]], None]
ModuleTypes = Union[Type[nn.Module], Tuple[Type[nn.Module], ...]]

_listeners: List[Tuple[ModuleTypes, Listener, Optional[FrozenSet[str]]]] = []


def wanted(module: nn.Module, *keys: str) -> bool:
    """Whether a listener takes what ``module`` publishes (so it may compute extra read-outs); with
    ``keys``, whether one wants any of these values (a listener that named no keys wants all)."""
    if not _listeners:
        return False
    return any(isinstance(module, kinds) and (not keys or wants is None or not wants.isdisjoint(keys))
               for kinds, _, wants in _listeners)


def publish(module: nn.Module, **values: Any) -> None:
    """Hand ``values`` (name -> tensor, shapes documented by the publishing module) to every
    listener of ``module``'s type."""
    for kinds, listener, _ in _listeners:
        if isinstance(module, kinds):
            listener(module, values)


@contextmanager
def listen(listener: Listener, kinds: ModuleTypes = nn.Module, keys: Optional[Iterable[str]] = None) -> Iterator[None]:
    """Call ``listener(module, values)`` for every :func:`publish` of a module of type ``kinds``
    inside the ``with`` block; ``keys``: the values it reads (default: all a module publishes)."""
    entry = (kinds, listener, None if keys is None else frozenset(keys))
    _listeners.append(entry)
    try:
        yield
    finally:
        del _listeners[next(i for i, e in enumerate(_listeners) if e is entry)]
