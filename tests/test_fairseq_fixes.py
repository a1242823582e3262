"""fairseq fixes (fairseq_tpr/fairseq_fixes/): Python n-gram blocking (CPU path of --no-repeat-ngram-size) sees
the generated tokens; float64 softmax; --bf16 on a GPU without torch_xla, and half precision on the CPU."""
import pytest
import torch
from fairseq.ngram_repeat_block import NGramRepeatBlock

import fairseq_tpr  # noqa: F401  (registered, fixes applied, by conftest.py)

PAD, BOS = 1, 2


def test_repeated_bigram_is_blocked_in_a_padded_buffer():
    blocker = NGramRepeatBlock(2, use_extension=False)
    # buffer of fairseq's SequenceGenerator: BOS, generated 5 6 5 (step 3), then padding
    tokens = torch.tensor([[BOS, 5, 6, 5, PAD, PAD, PAD], [BOS, 7, 8, 9, PAD, PAD, PAD]])
    lprobs = torch.zeros(2, 12)
    out = blocker(tokens, lprobs, bsz=1, beam_size=2, step=3)
    # row 0 ends in "5": "5 6" was generated before, so 6 is banned; row 1 has no repeat
    assert torch.isinf(out[0, 6]) and out[0, 6] < 0
    assert torch.isfinite(out[0, [i for i in range(12) if i != 6]]).all()
    assert torch.isfinite(out[1]).all()


def test_trigram_blocking_ignores_the_padding():
    blocker = NGramRepeatBlock(3, use_extension=False)
    # "the the" followed by "the" would repeat the trigram "the the the" only after it occurred
    tokens = torch.tensor([[BOS, 4, 4, 4, 4, PAD, PAD, PAD]])
    out = blocker(tokens, torch.zeros(1, 6), bsz=1, beam_size=1, step=4)
    assert torch.isinf(out[0, 4])
    # before the trigram has occurred once, nothing is banned (padding never matches)
    tokens = torch.tensor([[BOS, 4, 4, PAD, PAD, PAD, PAD, PAD]])
    out = blocker(tokens, torch.zeros(1, 6), bsz=1, beam_size=1, step=2)
    assert torch.isfinite(out).all()


def test_fairseq_softmax_keeps_float64_and_leaves_other_dtypes_alone():
    from fairseq import utils

    x = torch.randn(3, 7, dtype=torch.float64) * 5
    for name in ("softmax", "log_softmax"):
        fixed = getattr(utils, name)
        ref = getattr(torch, name)(x, dim=-1)  # float64 all the way
        assert fixed(x, dim=-1).dtype == torch.float64
        assert (fixed(x, dim=-1) - ref).abs().max() < 1e-15
        # fairseq's own function rounds to float32: the difference the fix removes
        unfixed = fixed.fairseq_tpr_original(x, dim=-1)
        assert unfixed.dtype == torch.float32 and (unfixed.double() - ref).abs().max() > 1e-9
        # fp32 / bf16 inputs: exactly fairseq's result (fp32 accumulation)
        for dtype in (torch.float32, torch.bfloat16):
            torch.testing.assert_close(fixed(x.to(dtype), dim=-1), fixed.fairseq_tpr_original(x.to(dtype), dim=-1), rtol=0, atol=0)


def _train_cfg(*flags):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = ["/dev/null", "--task", "translation", "--arch", "tp_transformer_d_tiny", *flags]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))


def test_bf16_on_a_gpu_without_torch_xla_trains_on_the_gpu(monkeypatch):
    """fairseq's options turn on --tpu with --bf16; without torch_xla the run is meant for the GPU."""
    import importlib.util

    from fairseq.distributed import utils as distributed_utils

    cfg = _train_cfg("--bf16")
    assert cfg.common.tpu, "fairseq no longer implies --tpu with --bf16: check_half_precision_devices (fix_call_main) can go"
    assert importlib.util.find_spec("torch_xla") is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    seen = []
    distributed_utils.call_main(cfg, lambda c, **kw: seen.append((c.common.tpu, c.common.bf16)))
    assert seen == [(False, True)]


@pytest.mark.parametrize("flags", [("--cpu", "--fp16"), ("--cpu", "--bf16"), ("--cpu", "--memory-efficient-fp16"),
                                   ("--memory-efficient-bf16",)])
def test_half_precision_on_the_cpu_names_the_flag(flags, monkeypatch):
    from fairseq.distributed import utils as distributed_utils

    from fairseq_tpr.errors import ConfigError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = _train_cfg(*flags)
    with pytest.raises(ConfigError, match=f"^{flags[-1]} trains on a CUDA GPU .* drop {flags[-1]} to train in float32"):
        distributed_utils.call_main(cfg, lambda c, **kw: pytest.fail("trained on the CPU in half precision"))


def test_every_fix_is_installed_once_and_keeps_fairseqs_original():
    """fairseq_fixes.patching.patch: after apply_all() twice, each replaced object is marked, keeps the
    object it replaced (fairseq's own, itself unmarked: nothing is wrapped twice)."""
    import inspect

    from fairseq import checkpoint_utils, utils
    from fairseq.data import LanguagePairDataset, data_utils, token_block_dataset
    from fairseq.distributed import utils as distributed_utils
    from fairseq.models import distributed_fairseq_model
    from fairseq.optim.adam import FairseqAdam
    from fairseq.optim.fairseq_optimizer import FairseqOptimizer
    from fairseq.optim.fp16_optimizer import _FP16OptimizerMixin
    from fairseq.tasks import FairseqTask
    from fairseq.tasks.language_modeling import LanguageModelingTask
    from fairseq.trainer import Trainer
    from fairseq_cli import train as train_cli

    from fairseq_tpr import fairseq_fixes

    fairseq_fixes.apply_all()
    fairseq_fixes.apply_all()
    targets = [(utils, "softmax"), (utils, "log_softmax"), (data_utils, "batch_by_size"),
               (checkpoint_utils, "torch_persistent_save"), (checkpoint_utils, "PathManager"),
               (checkpoint_utils, "load_checkpoint_to_cpu"), (checkpoint_utils, "load_model_ensemble_and_task"),
               (Trainer, "load_checkpoint"), (Trainer, "get_train_iterator"), (train_cli, "train"),
               (NGramRepeatBlock, "_no_repeat_ngram"), (distributed_utils, "_infer_torch_distributed_launch_init"),
               (distributed_utils, "call_main"), (distributed_fairseq_model, "DistributedDataParallel"),
               (FairseqAdam, "__init__"), (LanguageModelingTask, "setup_dictionary"),
               (LanguageModelingTask, "eval_lm_dataloader"), (LanguagePairDataset, "__init__"),
               (FairseqTask, "filter_indices_by_size"), (token_block_dataset, "best_fitting_int_dtype"),
               (utils, "clip_grad_norm_"), (FairseqOptimizer, "multiply_grads"),
               (_FP16OptimizerMixin, "_sync_fp16_grads_to_fp32"), (_FP16OptimizerMixin, "_sync_fp32_params_to_fp16"),
               (_FP16OptimizerMixin, "zero_grad")]
    assert len(targets) >= len(fairseq_fixes.FIXES)
    for owner, name in targets:
        raw = inspect.getattr_static(owner, name)
        fixed = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        assert getattr(fixed, "fairseq_tpr_fixed", False), (owner, name)
        original = fixed.fairseq_tpr_original
        assert original is not None and not getattr(original, "fairseq_tpr_fixed", False), (owner, name)


# --------------------------------------------------------------------------- deprecated calls (deprecations.py)
def _argv_sets(data):
    """(parser, argv) of a training, a generation and a language-model command."""
    from fairseq import options

    return [(options.get_training_parser, [data, "--arch", "tp_transformer_d_tiny", "--optimizer", "adam", "--lr",
                                           "1e-3", "--max-tokens", "2000", "--criterion",
                                           "label_smoothed_cross_entropy_with_roles", "--label-smoothing", "0.1"]),
            (options.get_generation_parser, [data, "--path", "x.pt", "--beam", "3", "--max-len-b", "9"]),
            (lambda: options.get_training_parser(default_task="language_modeling"),
             [data, "--task", "language_modeling", "--arch", "tp_transformer_lm_tiny", "--optimizer", "adam",
              "--tokens-per-sample", "16", "--sample-break-mode", "eos"])]


def test_fairseqs_config_is_composed_as_before_without_deprecated_hydra_calls(tmp_path, monkeypatch):
    """convert_namespace_to_omegaconf with the fixed hydra calls: the config of fairseq's own calls (every
    value, the struct flag) and no warning; fairseq's own calls warn."""
    import warnings

    from fairseq import options
    from fairseq.dataclass import utils
    from hydra import version
    from omegaconf import OmegaConf

    for parser, argv in _argv_sets(str(tmp_path)):
        args = options.parse_args_and_arch(parser(), argv)
        with warnings.catch_warnings(record=True) as ours_warned:
            warnings.simplefilter("always")
            ours = utils.convert_namespace_to_omegaconf(args)
        with monkeypatch.context() as m:  # fairseq's own calls, under the version base they assume (1.1)
            version.setbase("1.1")
            m.setattr(utils, "initialize", utils.initialize.fairseq_tpr_original)
            m.setattr(utils, "compose", utils.compose.fairseq_tpr_original)
            with warnings.catch_warnings(record=True) as theirs_warned:
                warnings.simplefilter("always")
                theirs = utils.convert_namespace_to_omegaconf(args)
        assert OmegaConf.to_container(ours) == OmegaConf.to_container(theirs)
        assert OmegaConf.is_struct(ours) == OmegaConf.is_struct(theirs)
        assert ours_warned == [] and len(theirs_warned) >= 4, [str(w.message) for w in ours_warned]


WARNING_LINE = r"(?m)^\S+:\d+: (\w+Warning): ?(.*)$"
PIN_MEMORY = "'pin_memory' argument is set as true but no accelerator is found"
MASKS = "Support for mismatched key_padding_mask and attn_mask is deprecated"


def test_a_plugin_runs_first_screen_has_only_the_warnings_the_docs_name(tmp_path, run_cli):
    """fairseq-train and fairseq-generate with the plugin print none of the deprecation warnings of
    fairseq's calls that deprecations.py fixes (hydra's and torch.cuda.amp's); what they print is exactly
    what docs/fairseq_fixes.md names: torch's about fairseq's mismatched attention masks (training) and,
    without an accelerator, about its pinned memory."""
    import re
    from pathlib import Path

    from _inprocess import USER_DIR, binarize_reversal

    data = binarize_reversal(tmp_path / "rev", 40, n_valid=8)
    train = run_cli("fairseq-train", data, "--user-dir", USER_DIR, "--arch", "tp_transformer_d_tiny", "--optimizer",
                    "adam", "--lr", "1e-3", "--max-tokens", "400", "--max-update", "2", "--save-dir", tmp_path / "ck",
                    "--no-epoch-checkpoints", "--cpu", "--num-workers", "0")
    assert train.returncode == 0, train.stderr[-2000:]
    generate = run_cli("fairseq-generate", data, "--user-dir", USER_DIR, "--path", tmp_path / "ck" / "checkpoint_last.pt",
                       "--gen-subset", "valid", "--beam", "2", "--cpu", "--num-workers", "0")
    assert generate.returncode == 0, generate.stderr[-2000:]
    pinned = [PIN_MEMORY] if not torch.cuda.is_available() else []
    for proc, expected in ((train, pinned + [MASKS]), (generate, pinned)):
        found = sorted(message for _, message in re.findall(WARNING_LINE, proc.stderr))
        assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, sorted(expected))), found
    docs = (Path(__file__).resolve().parents[1] / "docs" / "fairseq_fixes.md").read_text(encoding="utf-8")
    assert PIN_MEMORY in docs and MASKS in docs
