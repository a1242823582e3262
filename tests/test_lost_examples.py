"""Nothing dropped in silence (fairseq_fixes/: batches.py, resume.py, tasks.py), for every arch, fairseq's
own ``transformer`` included: every example of a split whose size is not a multiple of 8 is generated,
validated and trained on once per epoch at fairseq's default ``--required-batch-size-multiple`` (8); a
finished run run again takes no update; mismatched source and target files, and examples longer than
the model's positions, are one ``error:`` line; a one-token block wraps no unsigned offset around.
The language models at fairseq's default task arguments: tests/test_lm_cli.py."""
import re
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from fairseq import options, tasks
from fairseq.data import TokenBlockDataset, data_utils

from _inprocess import USER_DIR, binarize_pairs
from _inprocess import train as train_in_process
from fairseq_tpr.corpora.synthetic import write_reversal_task
from fairseq_tpr.errors import InputError

ARCH = "transformer_tiny"  # fairseq's own: the fixes are fairseq's, for every arch
N_TRAIN, N_VALID, N_TEST = 13, 12, 13  # none a multiple of 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("lost")
    write_reversal_task(root / "raw", N_TRAIN, N_VALID, N_TEST)
    return binarize_pairs(root / "raw", root / "bin", test=True)


def _train_argv(data, save_dir, max_update, *extra):
    """fairseq-train at fairseq's default --required-batch-size-multiple (no flag)."""
    return [str(data), "--user-dir", str(USER_DIR), "--task", "translation", "--source-lang", "src",
            "--target-lang", "tgt", "--arch", ARCH, "--optimizer", "adam", "--lr", "1e-3", "--max-update",
            str(max_update), "--max-tokens", "1000", "--save-dir", str(save_dir), "--no-epoch-checkpoints", "--cpu",
            "--seed", "1", "--num-workers", "0", "--log-format", "simple", "--log-interval", "1", "--no-progress-bar",
            "--log-file", str(save_dir / "train.log"), *map(str, extra)]


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    save = tmp_path_factory.mktemp("ckpt")
    train_in_process(_train_argv(data, save, 2))
    return save


# ----------------------------------------------------------------------------- the last batch
def test_batch_by_size_keeps_the_last_batch_and_the_multiples_before_it():
    """Against fairseq's own function (the fix's ``fairseq_tpr_original``): the same batches, plus the
    dropped tail as the last batch; every example once; every batch but the last a multiple of 8 or
    under it; the last within --max-tokens."""
    fixed = data_utils.batch_by_size
    rng = np.random.default_rng(0)
    dropped_somewhere = False
    for n in range(1, 60):
        sizes = rng.integers(1, 30, size=n)
        indices = np.argsort(sizes, kind="stable")
        for max_tokens, max_sentences in ((200, None), (10_000, None), (None, 11), (90, 5)):
            original = fixed.fairseq_tpr_original(indices, None, sizes[indices], max_tokens, max_sentences, 8)
            batches = fixed(indices, None, sizes[indices], max_tokens, max_sentences, 8)
            assert sorted(np.concatenate(batches).tolist()) == list(range(n))
            assert all(np.array_equal(a, b) for a, b in zip(original, batches))
            assert len(batches) - len(original) in (0, 1)
            dropped_somewhere |= len(batches) > len(original)
            assert all(len(b) % 8 == 0 or len(b) < 8 for b in batches[:-1])
            if max_tokens:
                assert all(len(b) * sizes[b].max() <= max_tokens for b in batches)
            if max_sentences:
                assert all(len(b) <= max_sentences for b in batches)
    assert dropped_somewhere  # the control: fairseq's own function drops batches on these inputs


def test_every_train_example_is_in_one_batch_of_the_epoch(data):
    """The iterator fairseq-train takes its batches from, built as the trainer builds it (default
    multiple 8, --max-tokens 1000): the 13 examples, each once; fairseq alone kept 8."""
    args = options.parse_args_and_arch(options.get_training_parser(), _train_argv(data, data, 1))
    task = tasks.setup_task(args)
    task.load_dataset("train")
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=1000, required_batch_size_multiple=8,
                                  seed=1).next_epoch_itr(shuffle=True)
    ids = [i for batch in itr for i in batch["id"].tolist()]
    assert sorted(ids) == list(range(N_TRAIN))


def test_generate_and_validate_see_every_example(data, trained, run_cli):
    ckpt = trained / "checkpoint_last.pt"
    with ThreadPoolExecutor(2) as pool:
        generate = pool.submit(run_cli, "fairseq-generate", data, "--user-dir", USER_DIR, "--path", ckpt,
                               "--gen-subset", "test", "--beam", 2, "--max-tokens", 1000, "--cpu")
        validate = pool.submit(run_cli, "fairseq-validate", data, "--user-dir", USER_DIR, "--task", "translation", "--path", ckpt,
                               "--valid-subset", "valid", "--max-tokens", 1000, "--cpu")
        generate, validate = generate.result(), validate.result()
    assert generate.returncode == 0, generate.stderr[-3000:]
    assert validate.returncode == 0, validate.stderr[-3000:]
    ids = sorted(int(i) for i in re.findall(r"^H-(\d+)\t", generate.stdout, flags=re.M))
    assert ids == list(range(N_TEST))  # fairseq alone: 8 of 13
    assert re.search(r"valid on 'valid' subset .*\| bsz 12$", validate.stdout, flags=re.M)  # one batch of all 12


def test_an_epoch_of_training_takes_every_batch(data, tmp_path):
    """--max-epoch 1 over 13 examples at --max-tokens 1000: a batch of 8 and the rest (5), 2 updates,
    13 sentences (fairseq alone: 1 update of 8)."""
    train_in_process(_train_argv(data, tmp_path, 0, "--max-epoch", 1))
    log = (tmp_path / "train.log").read_text()
    epoch = re.search(r"^epoch 001 \| loss .*", log, flags=re.M).group(0)  # the epoch's average stats
    assert "num_updates 2 " in epoch and "bsz 6.5 " in epoch, epoch
    # validation in training too: 12 sentences in a batch of 8 and one of 4
    assert re.search(r"valid on 'valid' subset .*\| bsz 6 \| num_updates 2", log)


# ----------------------------------------------------------------------------- resume a finished run
def test_a_finished_run_run_again_takes_no_update(data, tmp_path):
    train_in_process(_train_argv(data, tmp_path, 3))
    ckpt = tmp_path / "checkpoint_last.pt"
    before_bytes, before = ckpt.read_bytes(), torch.load(ckpt, weights_only=False)
    train_in_process(_train_argv(data, tmp_path, 3))
    after = torch.load(ckpt, weights_only=False)
    assert ckpt.read_bytes() == before_bytes  # not even rewritten
    assert after["optimizer_history"][-1]["num_updates"] == 3
    assert all(torch.equal(before["model"][k], after["model"][k]) for k in before["model"])
    assert "nothing to train: the restored run is at update 3, --max-update 3" in (tmp_path / "train.log").read_text()
    # the control: one more allowed update is taken
    train_in_process(_train_argv(data, tmp_path, 4))
    assert torch.load(ckpt, weights_only=False)["optimizer_history"][-1]["num_updates"] == 4


# ----------------------------------------------------------------------------- bad inputs
def test_mismatched_source_and_target_files_name_both(tmp_path):
    raw = tmp_path / "raw"
    write_reversal_task(raw, 10, 4, 1)
    lines = (raw / "train.tgt").read_text().splitlines()
    (raw / "train.tgt").write_text("\n".join(lines[:-1]) + "\n")  # 9 targets for 10 sources
    data = binarize_pairs(raw, tmp_path / "bin")
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(InputError) as e:
        train_in_process(_train_argv(data, tmp_path / "ckpt", 1))
    message = str(e.value)
    assert "\n" not in message
    assert f"{data}/train.src-tgt.src.bin has 10 examples and {data}/train.src-tgt.tgt.bin 9" in message
    assert "wc -l" in message


def test_examples_beyond_the_positions_are_one_line(data, tmp_path):
    """fairseq's "Size of sample #i is invalid" (a traceback) as one line naming the files (the dry-run
    validation on valid is the first to read)."""
    with pytest.raises(InputError, match=rf"^\d+ examples of {data}/valid\.src-tgt\.src\.bin \+ {data}/valid\.src-tgt\."
                                         r"tgt\.bin are longer than the model's positions \(max_positions \(4, 4\); "
                                         r"example #\d+ has size \(\d+, \d+\)\): skip this example with "
                                         r"--skip-invalid-size-inputs-valid-test"):
        train_in_process(_train_argv(data, tmp_path, 1, "--max-source-positions", 4, "--max-target-positions", 4))


# ----------------------------------------------------------------------------- one-token blocks
def test_a_one_token_block_wraps_no_offset_around():
    """``--sample-break-mode eos`` over a line that is its ``</s>`` alone (an empty line): no numpy
    overflow warning, and the slices fairseq wrote (``buffer[0:-1]``: nothing before the block)."""
    pad, eos = 1, 2
    items = [torch.tensor([5, 6, eos]), torch.tensor([eos]), torch.tensor([7, eos])]

    class Lines(torch.utils.data.Dataset):
        def __getitem__(self, i):
            return items[i]

        def __len__(self):
            return len(items)

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        blocks = TokenBlockDataset(Lines(), [3, 1, 2], block_size=None, pad=pad, eos=eos, break_mode="eos",
                                   include_targets=True)
        source, target, past = blocks[1]
    assert source.tolist() == [eos] and target.tolist() == [eos] and past.tolist() == [pad, eos]
    assert blocks.slice_indices.dtype.kind == "i"
