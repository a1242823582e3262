"""``from_pretrained`` of the plugin's model classes whose input is not one line of text (STTR,
ATPL, NIC, the discourse Synthesizer): fairseq's default wraps every model in a
``GeneratorHubInterface`` that encodes text; these return the interface of
:mod:`fairseq_tpr.hub` that fits the loaded model."""


def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
    """Load a checkpoint (fairseq's ``from_pretrained`` arguments) and return its hub interface:
    ``summarize``/``translate`` for STTR, ``caption`` for ATPL and NIC, ``score_units``/``extract``/
    ``summarize`` for the discourse Synthesizer (see :mod:`fairseq_tpr.hub`)."""
    from ..hub import from_pretrained as load

    return load(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)


plugin_from_pretrained = classmethod(from_pretrained)
