"""What the continuous-role models (Schlag et al. 2019) share, one home for ``tp_transformer*`` and
``tp_transformer_lm*``: their options, the presets' defaults, the checks, and the two build steps of the
authors' code.

* :func:`add_continuous_role_args`: ``--no-embedding-roles``, ``--position-table``, ``--ffn-init``;
* :func:`set_continuous_defaults`: the presets' defaults (:data:`CONTINUOUS_DEFAULTS`: Eq. 2's
  embedding roles on, fairseq's position table, torch's feed-forward init);
* :func:`check_continuous_options`: the values, a ConfigError naming the flag;
* :func:`apply_authors_options`: after fairseq's build, ``--position-table interleaved`` (the authors'
  sin/cos table, :func:`interleaved_positions`) and ``--ffn-init xavier`` (:func:`xavier_feed_forward`);
* :class:`ContinuousRoleModel`: the mixin that gives a model class all of the above and Eq. 2's
  binding in the embedding slot.
"""
from fairseq.modules import SinusoidalPositionalEmbedding
from torch import nn

from ..errors import ConfigError
from ..modules import EmbeddingRoleBinding
from ..modules.positions import POSITION_TABLES, InterleavedSinusoidalPositionalEmbedding
from .presets import set_defaults

FFN_INITS = ("torch", "xavier")
CONTINUOUS_DEFAULTS = dict(no_embedding_roles=False, position_table="fairseq", ffn_init="torch")


def add_continuous_role_args(parser) -> None:
    """``--no-embedding-roles``, ``--position-table``, ``--ffn-init``."""
    parser.add_argument("--no-embedding-roles", action="store_true",
                        help="drop the embedding-level role binding of Eq. 2 (z0 = e * r)")
    parser.add_argument("--position-table", choices=POSITION_TABLES,
                        help="sinusoidal positions: fairseq (default; sines then cosines, as the matched "
                             "transformer) or interleaved (sin/cos alternating, 10000^(-2i/d), as the authors' code)")
    parser.add_argument("--ffn-init", choices=FFN_INITS,
                        help="feed-forward weights: torch (default; nn.Linear's, as fairseq's transformer) or "
                             "xavier (Xavier uniform, as the paper and the authors' code)")


def set_continuous_defaults(args) -> None:
    """:data:`CONTINUOUS_DEFAULTS` where the options do not hold a value."""
    set_defaults(args, **CONTINUOUS_DEFAULTS)


def check_continuous_options(args, sides) -> None:
    """``--ffn-init`` and ``--position-table`` known; ``interleaved`` needs sinusoidal positions and an
    even embedding size on every side of ``sides``."""
    if args.ffn_init not in FFN_INITS:
        raise ConfigError(f"--ffn-init must be one of {', '.join(FFN_INITS)} (got {args.ffn_init!r})")
    table = args.position_table
    if table not in POSITION_TABLES:
        raise ConfigError(f"--position-table must be one of {', '.join(POSITION_TABLES)} (got {table!r})")
    if table != "interleaved":
        return
    for side in sides:
        if getattr(args, f"{side}_learned_pos", False) or getattr(args, "no_token_positional_embeddings", False):
            raise ConfigError(f"--position-table interleaved is a sinusoidal table: drop --{side}-learned-pos "
                              "and --no-token-positional-embeddings, or the --position-table flag.")
        if getattr(args, f"{side}_embed_dim") % 2:
            raise ConfigError(f"--position-table interleaved needs an even --{side}-embed-dim "
                              f"(got {getattr(args, f'{side}_embed_dim')}).")


def apply_authors_options(args, model: nn.Module, sides) -> None:
    """After fairseq's build: the interleaved table on every encoder/decoder of ``sides`` with
    ``--position-table interleaved``, Xavier feed-forward weights with ``--ffn-init xavier``."""
    if args.position_table == "interleaved":
        for side in sides:
            side.embed_positions = interleaved_positions(side.embed_positions)
    if args.ffn_init == "xavier":
        xavier_feed_forward(model)


def interleaved_positions(table: SinusoidalPositionalEmbedding) -> InterleavedSinusoidalPositionalEmbedding:
    """The interleaved table in place of fairseq's, for the same size and padding index."""
    return InterleavedSinusoidalPositionalEmbedding(table.embedding_dim, table.padding_idx,
                                                    init_size=table.weights.size(0))


def xavier_feed_forward(model: nn.Module) -> None:
    """Xavier uniform weights for every cell's ``fc1``/``fc2`` (biases keep torch's init), as the
    authors' ``PositionwiseFeedforward.reset_parameters``."""
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] in ("fc1", "fc2") and isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)


class ContinuousRoleModel:
    """Mixin for a continuous-role model class (before the fairseq-side base, which names its
    ``sides``: ``("encoder", "decoder")`` or ``("decoder",)``): the options, their checks on every side,
    Eq. 2's :class:`~fairseq_tpr.modules.EmbeddingRoleBinding` in the embedding slot unless
    ``--no-embedding-roles``, and the authors' build steps after fairseq's build."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        add_continuous_role_args(parser)

    @classmethod
    def check_options(cls, args, task):
        super().check_options(args, task)
        check_continuous_options(args, cls.sides)

    @classmethod
    def embedding_binding(cls, args):
        return None if args.no_embedding_roles else EmbeddingRoleBinding

    @classmethod
    def build_checked_model(cls, args, task):
        model = super().build_checked_model(args, task)
        apply_authors_options(args, model, [getattr(model, side) for side in cls.sides])
        return model
