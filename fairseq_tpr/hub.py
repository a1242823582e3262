"""Python hub interfaces: ``from_pretrained`` for every model family of the plugin.

:func:`from_pretrained` loads a checkpoint with fairseq's hub loader (``fairseq.hub_utils``: the
same loading as fairseq-generate, ``arg_overrides`` from the keyword arguments) and wraps it in
the interface that its model class names (``hub_interface``; :mod:`fairseq_tpr.models.hub_entry`);
every model class's ``from_pretrained`` returns the same. Each interface lives beside its model:

==========================================  ======================================================
model (``--arch``)                           interface and its methods
==========================================  ======================================================
``tp_transformer*``, ``tp_transformer_d*``,   fairseq's ``GeneratorHubInterface``:
``transformer_tp_*``, ``atpl_autoencoder*``   ``translate(sentence)`` (as fairseq-interactive)
``sttr*``                                     :class:`TemplateSummarizerHubInterface` (``models/sttr_hub.py``):
                                              ``summarize(document, template)``,
                                              ``translate("document<TAB>template")``
``atpl*``, ``nic*``                           :class:`CaptionerHubInterface` (``models/captioning_hub.py``):
                                              ``caption(features)``
``discourse_synthesizer*``                    :class:`ExtractiveHubInterface`
                                              (``models/discourse_synthesizer_hub.py``): ``score_units``,
                                              ``extract``, ``summarize``
==========================================  ======================================================

Each method builds its batch the way the matching command line tool does (fairseq-interactive,
fairseq-generate, fairseq-tpr-extract), so both give the same output for the same input. Loading
registers the plugin (:func:`fairseq_tpr.register`) first.
"""
from fairseq.hub_utils import GeneratorHubInterface

from .models.captioning_hub import CaptionerHubInterface
from .models.discourse_synthesizer_hub import ExtractiveHubInterface
from .models.hub_entry import interface_of, load
from .models.sttr_hub import TemplateSummarizerHubInterface

__all__ = ["CaptionerHubInterface", "ExtractiveHubInterface", "GeneratorHubInterface", "TemplateSummarizerHubInterface",
           "from_pretrained", "interface_of"]


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
                    **kwargs):
    """Load ``model_name_or_path/checkpoint_file`` and wrap it in its model's interface (module
    docstring; :func:`fairseq_tpr.models.hub_entry.load`, whose keyword arguments override the
    checkpoint's settings as fairseq's ``from_pretrained`` does)."""
    from . import register

    register()
    return load(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
