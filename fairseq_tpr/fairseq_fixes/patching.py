"""The one way a fix replaces something of fairseq's: :func:`patch`."""
import inspect


def patch(owner, name: str, build, *, keep_doc: bool = True):
    """Replace ``owner.name`` (a module's function or object, or a class's method) by
    ``build(original)``, once: a second call finds the replacement marked and does nothing.

    The replacement is marked ``fairseq_tpr_fixed = True`` and keeps ``fairseq_tpr_original``, the
    object it replaced (what a test compares against, or calls to see fairseq's own behaviour);
    with ``keep_doc`` it takes the original's docstring. A class's ``classmethod`` or
    ``staticmethod`` is unwrapped for ``build`` and the replacement wrapped the same way. Returns
    the replacement (the one installed before, on a second call)."""
    raw = inspect.getattr_static(owner, name)
    wrapper = type(raw) if isinstance(raw, (classmethod, staticmethod)) else None
    original = raw.__func__ if wrapper else raw
    if getattr(original, "fairseq_tpr_fixed", False):
        return original
    replacement = build(original)
    replacement.fairseq_tpr_fixed = True
    replacement.fairseq_tpr_original = original
    if keep_doc:
        replacement.__doc__ = original.__doc__
    setattr(owner, name, wrapper(replacement) if wrapper else replacement)
    return replacement
