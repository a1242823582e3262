"""TorchScript and the plugin's models: every model class here runs in eager mode only.

``torch.jit.script`` calls ``__prepare_scriptable__`` on a module and on each of its submodules
before it compiles anything; the plugin's models answer with a one-line
:class:`~fairseq_tpr.errors.ConfigError` that names the arch and why, instead of the TorchScript
compiler's trace from deep inside a layer. The matched baselines that are fairseq's own classes
(``transformer_tp*``, ``transformer_tp_d*``: fairseq's ``TransformerModel`` with our presets) are
not touched and script as fairseq's transformer does. docs/architecture.md, "TorchScript", lists
which archs compile and why the others do not.
"""
from ..errors import ConfigError
from .checks import model_arch


class EagerOnly:
    """Mixin of every model class of the plugin: ``torch.jit.script(model)`` (or of a
    ``SequenceGenerator`` over it) raises a :class:`ConfigError` naming the arch and
    ``not_scriptable_because``, which each class states."""

    not_scriptable_because = "its layers use Python that TorchScript does not compile"

    def __prepare_scriptable__(self):
        raise ConfigError(
            f"--arch {self._arch_name()} ({type(self).__name__}) cannot be compiled with torch.jit.script: "
            f"{self.not_scriptable_because}. Run it in eager mode (fairseq-generate, fairseq-interactive, "
            f"fairseq_tpr.hub); docs/architecture.md, 'TorchScript', lists the archs that compile")

    def _arch_name(self) -> str:
        """The model's ``--arch`` where its options are kept, else its family's (``atpl_autoencoder*``)."""
        arch = model_arch(self)
        if arch:
            return arch
        from fairseq.models import MODEL_REGISTRY

        family = next((name for name, cls in MODEL_REGISTRY.items() if cls is type(self)), type(self).__name__)
        return f"{family}*"
