"""fairseq's calls of deprecated APIs, made as hydra and torch now ask, with the same results: the
first screen of every fairseq command (``fairseq-train``, ``-generate``, ``-validate``, ``-interactive``,
``-eval-lm``) no longer starts with their deprecation warnings.

What stays is named in docs/fairseq_fixes.md ("Warnings fairseq still prints") with its source:
torch's about the masks fairseq's ``MultiheadAttention`` passes, and about fairseq's data loader
pinning memory on a machine without an accelerator (not a deprecation), and ``fairseq-hydra-train``'s
``@hydra.main`` without ``version_base``, which runs before any plugin loads.
"""
import torch

from .patching import patch

# fairseq's primary config (``fairseq/config/config.yaml``), stored in hydra's ConfigStore under this name
# with its schema named in its defaults list, as hydra 1.2 and later ask
PRIMARY = "fairseq_tpr_primary"


def fix_hydra_compose_calls() -> None:
    """``fairseq/dataclass/utils.py`` line 19 imports ``initialize`` and ``compose`` from
    ``hydra.experimental``, and ``convert_namespace_to_omegaconf`` (lines 397-399), which every fairseq
    command runs on its arguments, calls ``initialize(config_path="../config")`` without
    ``version_base`` and ``compose("config", overrides=..., strict=False)``. Hydra 1.3 then warns six
    times: the experimental API is no longer experimental (twice), ``version_base`` is not
    specified, ``strict`` is deprecated, ``config.yaml``'s ``# @package _group_`` header is
    deprecated, and the config is validated against the ConfigStore schema of the same name
    (``config``, fairseq's ``FairseqConfig``), which hydra 1.2 no longer does.

    The replacements make the calls hydra 1.3 asks for, with the same config as result: the content
    of ``config.yaml`` (its defaults list and its ``hydra`` node, read from fairseq's file) is stored in
    the ConfigStore as ``fairseq_tpr_primary`` with the schema ``config`` named first in its defaults
    (hydra's migration of schema matching); ``initialize`` is ``hydra.initialize(version_base="1.3")``
    on the ConfigStore, ``compose("config", ...)`` composes that node with ``hydra.compose`` and sets
    the struct flag as ``strict`` did. ``tests/test_fairseq_fixes.py`` checks that the config equals
    fairseq's own for training, generation and language-model arguments, and counts the warnings of
    a plugin run."""
    import os

    from fairseq.dataclass import utils
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    yaml = OmegaConf.load(os.path.join(os.path.dirname(utils.__file__), "..", "config", "config.yaml"))
    node = OmegaConf.to_container(yaml)
    node["defaults"] = ["config", *node["defaults"]]  # the FairseqConfig schema, then config.yaml's list
    ConfigStore.instance().store(name=PRIMARY, node=node)

    def build_initialize(original):
        def initialize(config_path=None, job_name=None, caller_stack_depth=1):
            import hydra

            # fairseq's config_path is config.yaml's folder, whose content the ConfigStore now holds
            return hydra.initialize(config_path=None, job_name=job_name, caller_stack_depth=caller_stack_depth + 1,
                                    version_base="1.3")
        return initialize

    def build_compose(original):
        def compose(config_name=None, overrides=None, strict=None, return_hydra_config=False):
            import hydra

            name = PRIMARY if config_name == "config" else config_name
            cfg = hydra.compose(config_name=name, overrides=overrides or [], return_hydra_config=return_hydra_config)
            if strict is not None:
                OmegaConf.set_struct(cfg, strict)
            return cfg
        return compose

    patch(utils, "initialize", build_initialize, keep_doc=False)
    patch(utils, "compose", build_compose, keep_doc=False)


def fix_cuda_amp_autocast() -> None:
    """``fairseq/tasks/fairseq_task.py`` line 531: ``FairseqTask.train_step`` enters
    ``torch.cuda.amp.autocast(enabled=...)``, which torch deprecates (a ``FutureWarning`` at the first
    update of every run) for ``torch.amp.autocast("cuda", enabled=...)``, the same context. The
    replacement is fairseq's ``train_step`` with that one call changed. Tasks that override
    ``train_step`` without calling it keep their own (none of this package's do)."""
    from fairseq.tasks import FairseqTask

    def build(original):
        def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
            from fairseq.optim.amp_optimizer import AMPOptimizer

            model.train()
            model.set_num_updates(update_num)
            with torch.autograd.profiler.record_function("forward"):
                with torch.amp.autocast("cuda", enabled=isinstance(optimizer, AMPOptimizer)):
                    loss, sample_size, logging_output = criterion(model, sample)
            if ignore_grad:
                loss *= 0
            with torch.autograd.profiler.record_function("backward"):
                optimizer.backward(loss)
            return loss, sample_size, logging_output
        return train_step

    patch(FairseqTask, "train_step", build)
