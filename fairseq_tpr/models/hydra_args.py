"""One way in for every model of the plugin: ``build_model`` gets an argparse Namespace.

fairseq-train hands a legacy model's ``build_model`` the argparse Namespace of every flag, after
the ``--arch`` preset filled in its defaults. fairseq-hydra-train, and loading a checkpoint it
wrote (fairseq-generate, ``from_pretrained``), hand it the ``model`` DictConfig instead: the keys
of the YAML and the ``model.*`` overrides, plus what the preset added. The plugin's models read
their options as attributes of a namespace, and fairseq's ``TransformerConfig.from_namespace``
copies every key that is not a TransformerConfig field with ``vars(args)``, which on a DictConfig
returns OmegaConf's internals. So under Hydra the plugin options were dropped
(``no_embedding_roles: true`` built the preset) or missing (``AttributeError: invalid argument
num_roles``, ``args.tpr``).

:func:`accepts_hydra_config` wraps a model class's ``build_model``: a DictConfig is turned into a
Namespace (:func:`namespace_from_config`) with the arch preset run on it again (presets only
fill keys that are not set, so the user's keys win), the model is built from that Namespace, and
the keys the build added or changed are written back into the DictConfig. The DictConfig is
what the trainer saves in the checkpoint, so a Hydra checkpoint then holds the same model
options as one of fairseq-train (whose Namespace the build changes in place).
"""
import functools
from argparse import Namespace

from fairseq.models import ARCH_CONFIG_REGISTRY
from omegaconf import OmegaConf, open_dict

# options of the task that fairseq-train's flat Namespace gives the model as well; under Hydra
# they live in ``task`` only (e.g. ``task.max_source_positions`` sizes learned positions; a language model
# takes its positions from ``task.tokens_per_sample``)
TASK_KEYS = ("max_source_positions", "max_target_positions", "left_pad_source", "left_pad_target", "tokens_per_sample")

_PLAIN = (str, int, float, bool, type(None))
_UNSET = object()


def namespace_from_config(cfg, task=None) -> Namespace:
    """The argparse Namespace fairseq-train would give ``build_model`` for the model DictConfig
    ``cfg``: its keys, ``arch`` (from ``_name``), the task options of :data:`TASK_KEYS` it does
    not set itself, and the defaults of the arch preset for every key still unset."""
    args = Namespace(**OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    if getattr(args, "arch", None) is None:
        args.arch = getattr(args, "_name", None)
    task_cfg = getattr(task, "cfg", None) or getattr(task, "args", None)
    for key in TASK_KEYS:
        if getattr(args, key, None) is None and task_cfg is not None:
            value = getattr(task_cfg, key, None)
            if value is not None:
                setattr(args, key, value)
    preset = ARCH_CONFIG_REGISTRY.get(args.arch)
    if preset is not None:
        preset(args)
    return args


def _storable(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def write_back(cfg, args: Namespace) -> None:
    """Copy the plain values of ``args`` that ``cfg`` lacks or holds differently into ``cfg``."""
    if OmegaConf.is_readonly(cfg):
        return
    with open_dict(cfg):
        for key, value in vars(args).items():
            if not _storable(value):
                continue
            value = list(value) if isinstance(value, tuple) else value
            current = cfg.get(key, _UNSET)
            if OmegaConf.is_config(current):
                current = OmegaConf.to_container(current, resolve=True)
            if current is _UNSET or current != value:
                cfg[key] = value


def accepts_hydra_config(build_model):
    """Decorator for a model class's ``build_model(cls, args, task)`` (under ``@classmethod``):
    a DictConfig model config is built as fairseq-train's Namespace would be (module docstring);
    a Namespace passes through unchanged."""

    @functools.wraps(build_model)
    def build(cls, cfg, task):
        if not OmegaConf.is_config(cfg):
            return build_model(cls, cfg, task)
        args = namespace_from_config(cfg, task)
        model = build_model(cls, args, task)
        write_back(cfg, args)
        return model

    return build
