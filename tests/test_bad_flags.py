"""Every bad flag, data directory or checkpoint is one ``error:`` line (exit 2, no traceback) that
names the flag or file and the fix (issue 16).

The flag checks live in one place, ``ChecksOptions.check_options`` of each model class
(``fairseq_tpr/models/checks.py``); loading a checkpoint that does not fit the data is checked in
``fairseq_fixes.fix_checkpoint_mismatch_load`` and by the dictionary fingerprint that the plugin's
models store in their saved options. A real ``fairseq-train`` and ``fairseq-generate`` run for a
case of each; the other cases are checked in this process, where the exception must be a
``FairseqTprError`` (what the hook prints as one line).
"""
import json
import os
import re
import shutil
from argparse import Namespace

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks

from _builders import build
from _inprocess import USER_DIR, binarize_reversal, train, train_argv
from fairseq_tpr import hub
from fairseq_tpr.errors import CheckpointError, ConfigError, InputError
from fairseq_tpr.models.dictionaries import check_dictionaries, fingerprint_key

CRITERION = "label_smoothed_cross_entropy"
PLUGIN_ARCH, FAIRSEQ_ARCH = "tp_transformer_tiny", "transformer_tp_tiny"  # ours / fairseq's TransformerModel


def _one_line_error(proc):
    """The ``error:`` line of a fairseq command that failed through the plugin's hook (one line, no
    traceback, then Python's normal exit: status 1)."""
    assert proc.returncode == 1, f"rc {proc.returncode}:\n{(proc.stdout + proc.stderr)[-4000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), proc.stderr[-4000:]
    return last


# ----------------------------------------------------------------------------- in process: flags
@pytest.mark.parametrize("arch,flags", [
    ("tp_transformer_d_tiny", ["--num-roles", "0"]),
    ("sttr_tiny", ["--tpr", "discrete", "--num-roles", "0"]),
])
def test_num_roles_zero(arch, flags):
    with pytest.raises(ConfigError, match=r"--num-roles must be at least 1.*(got 0).*the paper uses 50"):
        build(arch, *flags)


@pytest.mark.parametrize("arch,flags", [
    ("tp_transformer_d_tiny", ["--role-temperature", "0"]),
    ("sttr_tiny", ["--tpr", "discrete", "--role-temperature", "-1"]),
])
def test_role_temperature_not_positive(arch, flags):
    with pytest.raises(ConfigError, match=r"--role-temperature must be positive.*1 is the paper's Eq. 5"):
        build(arch, *flags)


def test_role_scorer_unknown_under_hydra():
    """fairseq-train's --role-scorer has argparse choices; a Hydra config (model.role_scorer) reaches
    the model's check instead."""
    from fairseq_tpr.models.role_options import ROLE_DEFAULTS, check_role_options

    args = Namespace(num_roles=5, role_dim=4, **dict(ROLE_DEFAULTS, role_scorer="t5"))
    with pytest.raises(ConfigError, match=r"--role-scorer must be one of paper, authors \(got 't5'\)"):
        check_role_options(args, "tp_transformer_d", sides=())


@pytest.mark.parametrize("arch,extra", [
    ("tp_transformer_tiny", []), ("tp_transformer_d_tiny", []), ("sttr_tiny", ["--tpr", "discrete"]),
    ("sttr_tiny", []),
])
@pytest.mark.parametrize("flags,message", [
    (["--encoder-embed-dim", "100", "--encoder-attention-heads", "8"],
     "--encoder-embed-dim 100 is not divisible by --encoder-attention-heads 8"),
    (["--decoder-attention-heads", "3"], "--decoder-embed-dim 64 is not divisible by --decoder-attention-heads 3"),
])
def test_embed_dim_not_divisible_by_heads(arch, extra, flags, message):
    with pytest.raises(ConfigError, match=message + ": every head .* Choose --(en|de)coder-attention-heads dividing"):
        build(arch, *extra, *flags)


class _CaptionTask:
    """What the captioning models read from their task."""

    def __init__(self, dictionary):
        self.target_dictionary, self.source_dictionary, self.feature_dim = dictionary, None, 6
        self.cfg = Namespace(data="DATA")


@pytest.mark.parametrize("arch", ["atpl_tiny", "atpl_autoencoder_tiny"])
def test_tpr_dim_not_a_power_of_two(arch):
    from fairseq.models import ARCH_MODEL_REGISTRY

    from _builders import toy_dictionary

    match = r"--tpr-dim 12 is not a power of two: .*Hadamard.* pass --tpr-dim 8 or 16"
    if arch == "atpl_tiny":
        args = options.parse_args_and_arch(options.get_training_parser(),
                                           ["/dev/null", "--arch", arch, "--tpr-dim", "12", "--cpu"])
        with pytest.raises(ConfigError, match=match):
            ARCH_MODEL_REGISTRY[arch].build_model(args, _CaptionTask(toy_dictionary(10)))
    else:
        with pytest.raises(ConfigError, match=match):
            build(arch, "--tpr-dim", "12")


@pytest.mark.parametrize("attention", ["ctree", "dtree", "dense"])
def test_several_heads_with_a_single_head_attention(tmp_path, attention):
    (tmp_path / "meta.json").write_text(json.dumps({"unit_dim": 12, "unit": "sentence", "encoder": "test"}))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--task", "extractive_summarization", "--arch", "discourse_synthesizer_tiny",
        "--attention", attention, "--attention-heads", "8", "--criterion", "extractive_bce", "--max-units", "16"])
    task = tasks.setup_task(args)
    with pytest.raises(ConfigError, match=rf"--attention-heads 8 with --attention {attention}: only --attention dot "
                                          r"has several heads .* drop --attention-heads \(or pass --attention-heads 1\)"):
        task.build_model(args)


def test_a_task_without_dictionaries_is_named():
    class NoText:
        source_dictionary = target_dictionary = None

    args = options.parse_args_and_arch(options.get_training_parser(), ["/dev/null", "--arch", PLUGIN_ARCH, "--cpu"])
    args.task = "image_captioning"
    from fairseq.models import ARCH_MODEL_REGISTRY

    with pytest.raises(ConfigError, match="use --task translation .* not --task image_captioning"):
        ARCH_MODEL_REGISTRY[PLUGIN_ARCH].build_model(args, NoText())


# ----------------------------------------------------------------------------- template_summarization data
def _sttr_task(data, *extra):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--task", "template_summarization", "--arch", "sttr_tiny", "-s", "src", "-t", "tgt", "--cpu",
        *extra])
    return tasks.setup_task(args)


@pytest.fixture(scope="module")
def reversal(tmp_path_factory):
    """The reversal task binarized (joined dictionary, src/tgt), no templates."""
    return binarize_reversal(tmp_path_factory.mktemp("bad_flags_data"), 20, n_valid=4)


def test_sttr_data_without_dictionary_or_templates(reversal, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(reversal, data)
    (data / "dict.src.txt").unlink()
    with pytest.raises(InputError, match=rf"^{re.escape(str(data))}/dict\.src\.txt is missing .*fairseq-preprocess --joined-dictionary "
                                         r"-s src -t tgt.*preprocess/templates\.sh RAW_DIR \S+ src tgt"):
        _sttr_task(data)
    with pytest.raises(InputError, match=r"data directory \S+nowhere of --task template_summarization does not exist"):
        _sttr_task(tmp_path / "nowhere")
    task = _sttr_task(reversal)
    with pytest.raises(InputError, match=r"no templates for split 'valid': \S+/valid\.src-tgt\.template\.bin/\.idx is "
                                         r"missing: .*preprocess/templates\.sh RAW_DIR \S+ src tgt"):
        task.load_dataset("valid")
    with pytest.raises(InputError, match=r"no split 'test' in \S+: \S+/test\.src-tgt\.src\.bin/\.idx is missing"):
        task.load_dataset("test")


# ----------------------------------------------------------------------------- fairseq-train
def _sttr_train_argv(data, save_dir):
    argv = train_argv(data, save_dir, "sttr_tiny", CRITERION, 1, "--max-tokens", 200)
    argv[argv.index("translation")] = "template_summarization"
    return argv


@pytest.mark.parametrize("case", ["num-roles", "sttr-templates"])
def test_fairseq_train_prints_one_line(case, reversal, tmp_path, run_cli):
    if case == "num-roles":
        argv = train_argv(reversal, tmp_path / "ckpt", "tp_transformer_d_tiny", CRITERION, 1, "--max-tokens", 200,
                          "--num-roles", "0")
        expected = "error: --num-roles must be at least 1 (got 0)"
    else:
        argv = _sttr_train_argv(reversal, tmp_path / "ckpt")
        expected = f"error: no templates for split 'valid': {reversal}/valid.src-tgt.template.bin/.idx is missing"
    error = _one_line_error(run_cli("fairseq-train", *argv, cwd=tmp_path, timeout=180))
    assert error.startswith(expected), error
    assert not (tmp_path / "ckpt" / "checkpoint_last.pt").exists()


# ----------------------------------------------------------------------------- checkpoints
@pytest.fixture(scope="module")
def trained(reversal, tmp_path_factory):
    """One update of our tp_transformer_tiny and of fairseq's transformer_tp_tiny on the reversal
    data, plus two copies of the data directory: ``swapped`` (the dictionaries' first two symbols
    swapped: the same size, other ids) and ``bigger`` (one more symbol)."""
    root = tmp_path_factory.mktemp("bad_flags_ckpt")
    for arch in (PLUGIN_ARCH, FAIRSEQ_ARCH):
        train(train_argv(reversal, root / arch, arch, CRITERION, 1, "--max-tokens", 200))
    for name in ("swapped", "bigger"):
        shutil.copytree(reversal, root / name)
        for side in ("src", "tgt"):
            path = root / name / f"dict.{side}.txt"
            lines = path.read_text().splitlines()
            if name == "swapped":
                lines[0], lines[1] = lines[1], lines[0]
            else:
                lines.append("zzextra 1")
            path.write_text("\n".join(lines) + "\n")
    return root


def _checkpoint(trained, arch):
    return trained / arch / "checkpoint_last.pt"


def _generate_argv(data, checkpoint):
    return [data, "--user-dir", USER_DIR, "--path", checkpoint, "-s", "src", "-t", "tgt", "--gen-subset", "valid",
            "--beam", "1", "--batch-size", "4", "--cpu", "--num-workers", "0"]


def test_the_fingerprint_is_saved_with_the_checkpoint(trained, reversal):
    cfg = torch.load(_checkpoint(trained, PLUGIN_ARCH), weights_only=True)["cfg"]["model"]
    for side, lang in (("source", "src"), ("target", "tgt")):
        sha1, size, path = getattr(cfg, fingerprint_key(side))
        assert len(sha1) == 40 and size == len((reversal / f"dict.{lang}.txt").read_text().splitlines()) + 4
        assert path == os.path.abspath(reversal / f"dict.{lang}.txt")
    fairseq_cfg = torch.load(_checkpoint(trained, FAIRSEQ_ARCH), weights_only=True)["cfg"]["model"]
    assert getattr(fairseq_cfg, fingerprint_key("source"), None) is None  # fairseq's own arch: not ours to change


@pytest.mark.parametrize("case", ["same-size dictionary", "bigger dictionary", "truncated"])
def test_fairseq_generate_prints_one_line(case, trained, tmp_path, run_cli):
    if case == "same-size dictionary":  # would decode wrong words silently without the fingerprint
        checkpoint, data = _checkpoint(trained, PLUGIN_ARCH), trained / "swapped"
    elif case == "bigger dictionary":  # fairseq's arch: its size-mismatch RuntimeError, made one line
        checkpoint, data = _checkpoint(trained, FAIRSEQ_ARCH), trained / "bigger"
    else:
        checkpoint, data = tmp_path / "checkpoint_last.pt", trained / "swapped"
        checkpoint.write_bytes(_checkpoint(trained, PLUGIN_ARCH).read_bytes()[:5000])
    proc = run_cli("fairseq-generate", *_generate_argv(data, checkpoint), cwd=tmp_path, timeout=180)
    error = _one_line_error(proc)
    assert f"checkpoint {checkpoint}" in error, error
    assert "H-" not in proc.stdout
    trained_on = _data_of(trained)
    if case == "same-size dictionary":
        for lang in ("src", "tgt"):
            assert f"trained with {trained_on}/dict.{lang}.txt (24 symbols" in error, error
            assert f"given {data}/dict.{lang}.txt (24 symbols" in error, error
        assert "the same size, so the model would load and decode wrong words" in error, error
        assert f"`fairseq-preprocess --srcdict {trained_on}/dict.src.txt --tgtdict {trained_on}/dict.tgt.txt`" in error
    elif case == "bigger dictionary":
        assert "its dictionary has 24 symbols" in error, error
        assert f"the data directory's ({data}/dict.src.txt, {data}/dict.tgt.txt) have 25" in error, error
        assert f"pass the data directory the model was trained on ({trained_on}, per the checkpoint)" in error, error
    else:
        assert "is truncated" in error and "no intact checkpoint*.pt" in error, error


def _data_of(trained):
    """The data directory the checkpoints were trained on (the ``reversal`` fixture's)."""
    return os.path.abspath(torch.load(_checkpoint(trained, PLUGIN_ARCH), weights_only=True)["cfg"]["task"]["data"])


def test_load_refuses_another_dictionary_in_process(trained):
    plugin = _checkpoint(trained, PLUGIN_ARCH)
    with pytest.raises(ConfigError, match=rf"^checkpoint {re.escape(str(plugin))}: .* another size\. Pass the data directory"):
        checkpoint_utils.load_model_ensemble([str(plugin)], arg_overrides={"data": str(trained / "bigger")})
    # the hub loads through the same function
    with pytest.raises(ConfigError, match="the same size, so the model would load and decode wrong words"):
        hub.from_pretrained(str(plugin.parent), plugin.name, str(trained / "swapped"))
    # the right data loads, an ensemble too
    models, _ = checkpoint_utils.load_model_ensemble([str(plugin), str(plugin)],
                                                     arg_overrides={"data": _data_of(trained)})
    assert len(models) == 2


def test_a_checkpoint_without_fingerprint_loads_as_before(trained, tmp_path):
    state = torch.load(_checkpoint(trained, PLUGIN_ARCH), weights_only=True)
    for side in ("source", "target"):
        delattr(state["cfg"]["model"], fingerprint_key(side))
    old = tmp_path / "old.pt"
    torch.save(state, old)
    models, _ = checkpoint_utils.load_model_ensemble([str(old)], arg_overrides={"data": str(trained / "swapped")})
    assert len(models) == 1  # nothing to compare with: loads, as every checkpoint did before
    # another size without a fingerprint: the TP model's own shape check, with the checkpoint named
    with pytest.raises(ConfigError, match=rf"(?s)^checkpoint {re.escape(str(old))} \(data: \S+bigger/dict.src.txt, \S+bigger/dict.tgt.txt\): "
                                          r"The checkpoint does not fit .*embed_tokens.weight: checkpoint \(24, 64\) "
                                          r"vs model \(25, 64\)"):
        checkpoint_utils.load_model_ensemble([str(old)], arg_overrides={"data": str(trained / "bigger")})


def test_check_dictionaries_compares_symbols_in_order():
    from _builders import toy_dictionary

    _, task, args = build(PLUGIN_ARCH)
    assert getattr(args, fingerprint_key("source"))[1] == len(task.source_dictionary)
    check_dictionaries(args, task)  # its own dictionaries: fine
    other = toy_dictionary(20)
    other.symbols[-1], other.symbols[-2] = other.symbols[-2], other.symbols[-1]
    _, other_task, _ = build(PLUGIN_ARCH, src_dict=other)
    with pytest.raises(ConfigError, match="source: trained with a dictionary .* the same size"):
        check_dictionaries(args, other_task)


def test_missing_and_empty_checkpoints(trained, tmp_path):
    with pytest.raises(InputError, match=rf"checkpoint {re.escape(str(tmp_path))}/nothing\.pt does not exist \({re.escape(str(tmp_path))} holds no "
                                         r"\.pt file\)"):
        checkpoint_utils.load_model_ensemble([str(tmp_path / "nothing.pt")], arg_overrides={"data": str(trained)})
    empty = tmp_path / "checkpoint_best.pt"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match=rf"checkpoint {re.escape(str(empty))} is empty"):
        checkpoint_utils.load_model_ensemble([str(empty)])


def test_restore_file_of_another_architecture(trained, reversal, tmp_path):
    # fairseq's Trainer.load_checkpoint turns the shape error into a bare Exception (a traceback)
    argv = train_argv(reversal, tmp_path / "ckpt", FAIRSEQ_ARCH, CRITERION, 2, "--max-tokens", 200,
                      "--restore-file", _checkpoint(trained, PLUGIN_ARCH))
    with pytest.raises(ConfigError, match=rf"^checkpoint {re.escape(str(_checkpoint(trained, PLUGIN_ARCH)))} does not "
                                          r"fit .*it holds another architecture \(unexpected parameters \d+, e\.g\. "
                                          r".*build the checkpoint's architecture \(fairseq-train --restore-file / "
                                          r"--finetune-from-model: its --arch and sizes"):
        train(argv)
