"""``from_pretrained`` of the plugin's model classes: fairseq's hub loader (``fairseq.hub_utils``,
the same loading as fairseq-generate) and the hub interface the loaded model's class names in its
``hub_interface`` attribute (fairseq's ``GeneratorHubInterface``, which encodes one line of text,
unless the class names its own: STTR's beside ``sttr.py``, the captioners' beside
``captioning_base.py``, the Synthesizer's beside ``discourse_synthesizer.py``). No central switch:
a model class says which interface fits it. :func:`fairseq_tpr.hub.from_pretrained` is :func:`load`.
"""
from fairseq import hub_utils
from fairseq.hub_utils import GeneratorHubInterface


def interface_of(model) -> type:
    """The hub interface class of a loaded model: its class's ``hub_interface``."""
    return getattr(type(model), "hub_interface", GeneratorHubInterface)


def load(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".", **kwargs):
    """Load ``model_name_or_path/checkpoint_file`` (``os.pathsep``-separated files: an ensemble) with
    the dictionaries of ``data_name_or_path`` (relative to the model directory when it starts with
    ``.``), and wrap it in the interface its model class names. ``kwargs`` override the checkpoint's
    settings as fairseq's ``from_pretrained`` does (e.g. ``bpe="sentencepiece"``,
    ``sentencepiece_model=...``, ``tokenizer="moses"``)."""
    loaded = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
    models = loaded["models"]
    kinds = {interface_of(m) for m in models}
    if len(kinds) > 1:
        raise ValueError(f"from_pretrained: the checkpoints {checkpoint_file!r} hold models of different kinds")
    return kinds.pop()(loaded["args"], loaded["task"], models)


def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
    """A model class's ``from_pretrained`` (fairseq's arguments): :func:`load`, which returns the
    interface the loaded model's class names."""
    return load(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)


plugin_from_pretrained = classmethod(from_pretrained)
