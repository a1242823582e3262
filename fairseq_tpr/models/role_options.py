"""The options of the role dictionary (Jiang et al. 2021, Eq. 4-6), one home for every arch that has one:
``tp_transformer_d*``, ``tp_transformer_d_lm*`` and ``sttr*`` with ``--tpr discrete``.

* :func:`add_role_dictionary_args`: ``--num-roles``, ``--role-dim``, ``--role-temperature``,
  ``--role-scorer``, ``--role-init``, ``--role-kernel``;
* :func:`set_role_defaults`: the presets' defaults (:data:`ROLE_DEFAULTS`). fairseq runs an arch's preset
  whenever it builds the model, from a checkpoint too, so a checkpoint written before an option
  existed gets its default, which is what it was trained with (``--role-init normal``; ``--role-kernel``
  changes no parameter); the cells read the options without fallbacks;
* :func:`check_role_options`: the values and the shapes, a ConfigError naming the flag before any
  module is built (the values through :func:`~fairseq_tpr.modules.role_dictionary.check_binding_options`,
  which the binding itself also runs: one check, two callers);
* :data:`ROLE_CELL_UNSUPPORTED`: fairseq options the role cells do not honour;
* :class:`RoleDictionaryModel`: the mixin that gives a model class the options and their checks.
"""
from ..errors import ConfigError
from ..modules.role_dictionary import KERNELS, DiscreteRoleBinding, check_binding_options
from .presets import set_defaults

# fairseq options that only fairseq's own cell forward honours (the role cells write their own)
ROLE_CELL_UNSUPPORTED = ("cross_self_attention", "scale_attn", "scale_fc", "scale_heads", "scale_resids")

# the role study options as the paper has them (Eq. 5, a N(0, 1) dictionary), the kernels where measured faster
ROLE_DEFAULTS = dict(role_temperature=1.0, role_scorer="paper", role_init="normal", role_kernel="auto")


def add_role_dictionary_args(parser, context: str = "", role_dim_default: str = "") -> None:
    """The six options of the role dictionary. ``context`` prefixes every help (e.g. ``"with --tpr
    discrete: "``); ``role_dim_default`` says the arch's default of ``--role-dim`` where a preset leaves
    it open."""
    parser.add_argument("--num-roles", type=int, metavar="N_r", help=f"{context}role embeddings per dictionary (N_r)")
    parser.add_argument("--role-dim", type=int, metavar="d_r",
                        help=f"{context}size of a role embedding (d_r); heads x d_r must equal the embedding size"
                             + (f" (default: {role_dim_default})" if role_dim_default else ""))
    parser.add_argument("--role-temperature", type=float, metavar="TAU",
                        help=f"{context}divide the role logits F W_r by TAU before the softmax of Eq. 5 "
                             "(default 1: the paper; below 1 sharper role distributions)")
    parser.add_argument("--role-scorer", choices=DiscreteRoleBinding.SCORERS,
                        help=f"{context}paper (default): W_r without bias, Xavier uniform, as Eq. 5; authors: "
                             "with a bias and torch's nn.Linear initialisation, as the authors' code")
    parser.add_argument("--role-init", choices=DiscreteRoleBinding.ROLE_INITS,
                        help=f"{context}the role dictionary's initialisation: normal (default, N(0, 1)) or xavier "
                             "(Xavier uniform with gain 1.414, as the authors' code)")
    parser.add_argument("--role-kernel", choices=KERNELS,
                        help=f"{context}auto (default): Eq. 5-6 as fused Triton kernels where a GPU run measured "
                             "them faster (modules/role_dictionary.py FUSED_MEASURED_FASTER: none yet), torch ops "
                             "elsewhere; eager: always the torch ops; triton: always the kernels on a CUDA GPU (CPU "
                             "only under TRITON_INTERPRET=1)")


def set_role_defaults(args, num_roles: int, role_dim) -> None:
    """A preset's role dictionary: ``num_roles`` roles of ``role_dim`` (None: the arch fills it in its
    check), and :data:`ROLE_DEFAULTS`; options already given win."""
    set_defaults(args, num_roles=num_roles, role_dim=role_dim, **ROLE_DEFAULTS)


def check_role_dim(args, side: str) -> None:
    """``--{side}-attention-heads`` x ``--role-dim`` must equal ``--{side}-embed-dim``; a ConfigError that
    names the flags and the fix otherwise."""
    heads, dim = getattr(args, f"{side}_attention_heads"), getattr(args, f"{side}_embed_dim")
    if heads * args.role_dim != dim:
        fix = (f"set --role-dim {dim // heads}" if dim % heads == 0
               else f"choose --{side}-attention-heads dividing {dim}")
        raise ConfigError(
            f"--role-dim {args.role_dim} x --{side}-attention-heads {heads} = {heads * args.role_dim}, but "
            f"--{side}-embed-dim is {dim}: the role vector R = [R_1..R_H] is bound elementwise to the "
            f"filler (Jiang et al. Eq. 5-6), so heads x role-dim must equal the embedding size; {fix}."
        )


def check_role_options(args, arch: str, sides, context: str = "") -> None:
    """The six options' values (``context``, e.g. ``" with --tpr discrete"``, follows the flag in the
    message), then heads x role-dim = embed-dim on every side of ``sides``."""
    check_binding_options(args.num_roles, args.role_dim, args.role_temperature, args.role_scorer, args.role_init,
                          args.role_kernel, context=context, arch=arch)
    for side in sides:
        check_role_dim(args, side)


class RoleDictionaryModel:
    """Mixin for a model class with a role dictionary in its cells (before the fairseq-side base, which
    provides ``tpr_sides(args)``: the sides whose cells bind roles): the six options, their checks, and
    the fairseq options the role cells refuse."""

    unsupported_options = ROLE_CELL_UNSUPPORTED

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        add_role_dictionary_args(parser)

    @classmethod
    def check_options(cls, args, task):
        super().check_options(args, task)
        check_role_options(args, args.arch, cls.tpr_sides(args))
