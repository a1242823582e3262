"""Helpers for the ``--arch`` presets: they only fill defaults, so that a flag given on the
command line (or a key of a Hydra config) always wins, and then call the family's base preset."""


def set_defaults(args, **defaults) -> None:
    """``args.key = value`` for every ``key=value`` that ``args`` does not hold yet."""
    for key, value in defaults.items():
        setattr(args, key, getattr(args, key, value))


def default_sizes(args, embed_dim: int, ffn_dim: int, layers: int, heads: int) -> None:
    """The same sizes for encoder and decoder, unless given on the command line."""
    for side in ("encoder", "decoder"):
        set_defaults(args, **{f"{side}_embed_dim": embed_dim, f"{side}_ffn_embed_dim": ffn_dim,
                              f"{side}_layers": layers, f"{side}_attention_heads": heads})


def pre_ln(args) -> None:
    """Pre-LN cells in encoder and decoder (Schlag et al. Eq. 1; the T5 cells of Jiang et al.)."""
    set_defaults(args, encoder_normalize_before=True, decoder_normalize_before=True)
