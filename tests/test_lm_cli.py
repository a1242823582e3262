"""The TP language models in fairseq's tools, on a tiny language-modelling directory: fairseq-train
(in this process; the role one-hot rate in its log), fairseq-validate and fairseq-eval-lm (their
losses agree with the training log's last validation), fairseq-interactive (beam search, and
sampling), the hub (``sample`` equal to fairseq-interactive's beam, ``score`` equal to the model's
own log-probabilities), a resumed run equal to the straight one, and the bad inputs of the task as
one ``error:`` line each. fairseq-hydra-train: ``tests/test_hydra_hub.py`` (every LM preset built from
the shipped configs equals fairseq-train's; one real run per LM config below).
"""
import random
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from fairseq import options

from _inprocess import USER_DIR, binarize_lm, binarize_reversal, preprocess_in_process, train_argv
from _inprocess import train as train_in_process
from fairseq_tpr import hub

ARCHS = ["tp_transformer_lm_tiny", "tp_transformer_d_lm_tiny", "transformer_lm_tp_tiny"]
WORDS = [f"w{i}" for i in range(16)]
TOKENS = 16  # --tokens-per-sample


def _sentence(rng):
    """A word and its successor, repeated: a little structure for the model to pick up."""
    start = rng.randrange(len(WORDS))
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(rng.randint(3, 9)))


@pytest.fixture(scope="module")
def lm_data(tmp_path_factory):
    rng = random.Random(5)
    splits = {split: [_sentence(rng) for _ in range(n)] for split, n in (("train", 300), ("valid", 30), ("test", 30))}
    return binarize_lm(tmp_path_factory.mktemp("lm"), splits)


def lm_train_argv(data, save_dir, arch, max_update, *extra):
    save_dir.mkdir(parents=True, exist_ok=True)  # for --log-file
    return [str(data), "--user-dir", str(USER_DIR), "--task", "language_modeling", "--arch", arch,
            "--tokens-per-sample", str(TOKENS), "--sample-break-mode", "none", "--criterion", "cross_entropy_with_roles",
            "--optimizer", "adam", "--lr", "3e-3", "--max-update", str(max_update), "--max-tokens", "128",
            "--required-batch-size-multiple", "1",
            "--save-dir", str(save_dir), "--no-epoch-checkpoints", "--cpu", "--seed", "1", "--num-workers", "0",
            "--log-format", "simple", "--log-interval", "1", "--no-progress-bar",
            "--log-file", str(save_dir / "train.log"), *map(str, extra)]


@pytest.fixture(scope="module")
def trained(lm_data, tmp_path_factory):
    """arch -> checkpoint directory of 12 updates of fairseq-train (in this process), with its log as
    training wrote it in ``training.log`` (fairseq-validate appends to the checkpoint's ``--log-file``)."""
    out = {}
    for arch in ARCHS:
        save = tmp_path_factory.mktemp(arch)
        train_in_process(lm_train_argv(lm_data, save, arch, 12))
        shutil.copy(save / "train.log", save / "training.log")
        out[arch] = save
    return out


def _last_valid_loss(log):
    return float(re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log)[-1])


@pytest.mark.parametrize("arch", ARCHS)
def test_fairseq_train_saves_and_logs_role_onehot_for_the_role_dictionary(arch, trained):
    log = (trained[arch] / "training.log").read_text()
    assert (trained[arch] / "checkpoint_best.pt").is_file() and "num_updates 12" in log
    valid = [line for line in log.splitlines() if "valid on 'valid'" in line]
    assert valid and all(("role_onehot" in line) == (arch == "tp_transformer_d_lm_tiny") for line in valid)
    saved = torch.load(trained[arch] / "checkpoint_last.pt", weights_only=False)["cfg"]["model"]
    assert saved.arch == arch and saved.max_target_positions == TOKENS


def _validate_and_eval_lm(run_cli, lm_data, ckpt):
    """fairseq-validate and fairseq-eval-lm on valid, side by side."""
    with ThreadPoolExecutor(2) as pool:
        validate = pool.submit(run_cli, "fairseq-validate", lm_data, "--user-dir", USER_DIR, "--task",
                               "language_modeling", "--path", ckpt, "--tokens-per-sample", TOKENS, "--max-tokens", 128,
                               "--cpu", "--valid-subset", "valid", "--criterion", "cross_entropy_with_roles")
        eval_lm = pool.submit(run_cli, "fairseq-eval-lm", lm_data, "--user-dir", USER_DIR, "--path", ckpt,
                              "--gen-subset", "valid", "--tokens-per-sample", TOKENS, "--max-tokens", 128, "--cpu")
        return validate.result(), eval_lm.result()


@pytest.mark.parametrize("arch", ARCHS)
def test_fairseq_validate_and_eval_lm_agree_with_training(arch, trained, lm_data, run_cli):
    """fairseq-validate's loss on valid is the training log's last validation (same blocks, base 2), and
    fairseq-eval-lm's base-2 loss over the same blocks is that loss too. Both at fairseq's default
    ``--required-batch-size-multiple`` (8): the last batch, which fairseq alone dropped, is validated
    (``fairseq_fixes/batches.py``), so every block of valid counts in both."""
    validate, eval_lm = _validate_and_eval_lm(run_cli, lm_data, trained[arch] / "checkpoint_last.pt")
    assert validate.returncode == 0, validate.stderr[-3000:]
    assert eval_lm.returncode == 0, eval_lm.stderr[-3000:]
    trained_loss = _last_valid_loss((trained[arch] / "training.log").read_text())
    validated = _last_valid_loss(validate.stdout + validate.stderr)
    base2, ppl = map(float, re.search(r"Loss \(base 2\): ([\d.]+), Perplexity: ([\d.]+)",
                                      eval_lm.stdout + eval_lm.stderr).groups())
    assert validated == pytest.approx(trained_loss, abs=1e-3)
    assert base2 == pytest.approx(validated, abs=2e-3) and ppl == pytest.approx(2 ** base2, rel=1e-3)
    # fairseq-eval-lm scored every token of the split once: each word of valid.txt and each line's </s>
    lines = (lm_data.parent / "raw" / "valid.txt").read_text().splitlines()
    tokens = sum(len(line.split()) + 1 for line in lines)
    evaluated = int(re.search(r"Evaluated ([\d,]+) tokens", eval_lm.stdout + eval_lm.stderr).group(1).replace(",", ""))
    assert evaluated == tokens
    if arch == "tp_transformer_d_lm_tiny":
        assert "role_onehot" in validate.stdout + validate.stderr


def _interactive(run_cli, lm_data, ckpt, lines, *flags):
    proc = run_cli("fairseq-interactive", lm_data, "--user-dir", USER_DIR, "--task", "language_modeling", "--path",
                   ckpt, "--tokens-per-sample", TOKENS, "--max-len-b", 6, "--cpu", *flags,
                   input="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr[-3000:]
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    return [hyps[str(i)] for i in range(len(lines))]


@pytest.mark.parametrize("arch", ARCHS)
def test_interactive_beam_and_sampling_and_the_hub(arch, trained, lm_data, run_cli, tmp_path):
    prompts = ["w3 w4", "w10 w11 w12"]
    ckpt = trained[arch] / "checkpoint_last.pt"
    with ThreadPoolExecutor(2) as pool:
        beam = pool.submit(_interactive, run_cli, lm_data, ckpt, prompts, "--beam", 4)
        sampled = pool.submit(_interactive, run_cli, lm_data, ckpt, prompts, "--beam", 1, "--sampling",
                              "--sampling-topk", 5, "--seed", 7)
        beam, sampled = beam.result(), sampled.result()
    for prompt, hyp, sample in zip(prompts, beam, sampled):  # the prompt is continued
        assert hyp.startswith(prompt) and len(hyp.split()) > len(prompt.split())
        assert sample.startswith(prompt) and set(sample.split()) <= set(WORDS)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(ckpt, model_dir / "model.pt")
    lm = hub.from_pretrained(str(model_dir), "model.pt", str(lm_data), max_len_b=6)
    lm.eval()
    assert lm.sample(prompts, beam=4) == beam  # hub = fairseq-interactive
    greedy = lm.sample(prompts, beam=1)
    assert lm.sample(prompts, beam=1, sampling=True, sampling_topk=1) == greedy
    # score: the model's own log-probabilities of each token after </s> and the tokens before it (the
    # language-modelling task scores a sentence without its closing </s>)
    sentence = "w5 w6 w7 w2"
    scored = lm.score(sentence)
    tokens = lm.encode(sentence)[:-1]  # w5 w6 w7 w2
    inputs = torch.cat([tokens.new_tensor([lm.task.dictionary.eos()]), tokens[:-1]]).unsqueeze(0)
    with torch.no_grad():
        lprobs = lm.models[0].get_normalized_probs(lm.models[0](inputs), log_probs=True)[0]
    expected = lprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(scored["positional_scores"], expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_sampling_and_generation_at_fairseqs_default_task_arguments(arch, trained, lm_data, run_cli, tmp_path):
    """Trained with --tokens-per-sample 16, sampled without it (the task's default, 1024), as fairseq's
    own transformer_lm is: fairseq-interactive --sampling continues each prompt, and fairseq-generate
    generates for a split that is one block within the model's 16 positions; generation is clipped to
    the positions."""
    ckpt = trained[arch] / "checkpoint_last.pt"
    short = tmp_path / "short"
    (tmp_path / "short.txt").write_text("w3 w4 w5\nw9 w10\n")
    preprocess_in_process(options.get_preprocessing_parser().parse_args([
        "--only-source", "--srcdict", str(lm_data / "dict.txt"), "--testpref", str(tmp_path / "short.txt"),
        "--destdir", str(short), "--workers", "1"]))
    prompts = ["w3 w4", "w10 w11 w12"]
    with ThreadPoolExecutor(2) as pool:
        interactive = pool.submit(run_cli, "fairseq-interactive", lm_data, "--user-dir", USER_DIR, "--task",
                                  "language_modeling", "--path", ckpt, "--cpu", "--beam", 1, "--sampling",
                                  "--sampling-topk", 5, "--seed", 7, input="".join(p + "\n" for p in prompts))
        generate = pool.submit(run_cli, "fairseq-generate", short, "--user-dir", USER_DIR, "--task",
                               "language_modeling", "--path", ckpt, "--cpu", "--gen-subset", "test", "--beam", 2)
        interactive, generate = interactive.result(), generate.result()
    assert interactive.returncode == 0, interactive.stderr[-3000:]
    sampled = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", interactive.stdout, flags=re.M))
    for i, prompt in enumerate(prompts):
        assert sampled[str(i)].startswith(prompt) and set(sampled[str(i)].split()) <= set(WORDS)
        assert len(sampled[str(i)].split()) < TOKENS  # clipped to the positions (with </s>)
    assert generate.returncode == 0, generate.stderr[-3000:]
    hyps = re.findall(r"^H-0\t\S+\t(.*)$", generate.stdout, flags=re.M)
    assert len(hyps) == 1 and hyps[0] and set(hyps[0].split()) <= set(WORDS)


def test_training_on_blocks_beyond_the_positions_is_one_line(lm_data, tmp_path):
    """fairseq-train with --tokens-per-sample 32 on a model of 16 positions reads blocks it cannot
    place: one line naming the files and the --tokens-per-sample that fits (it was the model build's
    check; the build no longer knows which command reads)."""
    from fairseq_tpr.errors import InputError

    argv = lm_train_argv(lm_data, tmp_path, "tp_transformer_d_lm_tiny", 1, "--max-target-positions", TOKENS)
    argv[argv.index("--tokens-per-sample") + 1] = str(2 * TOKENS)
    with pytest.raises(InputError, match=rf"of {lm_data}/valid\.bin are longer than the model's positions "
                                         rf"\(max_positions {TOKENS}; .*--tokens-per-sample {TOKENS} or less$"):
        train_in_process(argv)


# ----------------------------------------------------------------------------- resume
@pytest.mark.parametrize("arch", ["tp_transformer_d_lm_tiny",
                                  pytest.param("tp_transformer_lm_tiny", marks=pytest.mark.slow)])
def test_a_resumed_run_ends_where_the_straight_run_ends(arch, lm_data, tmp_path):
    """12 updates straight, and 6 then 12 from the first run's checkpoint_last.pt (dropout on): the
    final parameters are the same floats."""
    extra = ("--dropout", "0.1", "--save-interval-updates", "6")
    train_in_process(lm_train_argv(lm_data, tmp_path / "straight", arch, 12, *extra))
    train_in_process(lm_train_argv(lm_data, tmp_path / "resumed", arch, 6, *extra))
    train_in_process(lm_train_argv(lm_data, tmp_path / "resumed", arch, 12, *extra))
    a = torch.load(tmp_path / "straight" / "checkpoint_last.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "resumed" / "checkpoint_last.pt", weights_only=False)["model"]
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


# ----------------------------------------------------------------------------- bad inputs
def _one_error_line(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def test_a_data_directory_without_a_dictionary(tmp_path, run_cli):
    empty = tmp_path / "data"
    empty.mkdir()
    (empty / "dict.src.txt").write_text("w1 1\n")
    proc = run_cli("fairseq-train", empty, "--user-dir", USER_DIR, "--task", "language_modeling", "--arch",
                   "tp_transformer_lm_tiny", "--cpu", "--max-update", 1, "--max-tokens", 100)
    line = _one_error_line(proc)
    assert f"{empty / 'dict.txt'} is missing" in line and "dict.src.txt" in line and "--only-source" in line


def test_eval_lm_with_tokens_per_sample_above_the_positions_or_an_encoder_decoder_checkpoint(
        trained, lm_data, run_cli, tmp_path):
    ckpt = trained["tp_transformer_lm_tiny"] / "checkpoint_last.pt"
    reversal = binarize_reversal(tmp_path / "reversal", 20)
    train_in_process(train_argv(reversal, tmp_path / "encdec", "tp_transformer_tiny",
                                "label_smoothed_cross_entropy_with_roles", 1, "--max-tokens", 100))
    with ThreadPoolExecutor(2) as pool:
        long = pool.submit(run_cli, "fairseq-eval-lm", lm_data, "--user-dir", USER_DIR, "--path", ckpt,
                           "--tokens-per-sample", 2 * TOKENS, "--cpu")
        encdec = pool.submit(run_cli, "fairseq-eval-lm", lm_data, "--user-dir", USER_DIR, "--path",
                             tmp_path / "encdec" / "checkpoint_last.pt", "--tokens-per-sample", TOKENS, "--cpu")
        long, encdec = long.result(), encdec.result()
    line = _one_error_line(long)
    assert f"--tokens-per-sample {2 * TOKENS} is above the positions" in line and f"{TOKENS} or less" in line
    line = _one_error_line(encdec)
    assert "--arch tp_transformer_tiny is an encoder-decoder model" in line and "tp_transformer_lm" in line


# ----------------------------------------------------------------------------- role analysis
@pytest.mark.parametrize("arch", ["tp_transformer_d_lm_tiny", "tp_transformer_lm_tiny"])
def test_roles_dump_of_a_language_model_reads_its_blocks(arch, trained, lm_data, tmp_path, capsys):
    """fairseq-tpr-roles dump of a language model: decoder sites only, one example per block of the
    split, ``src`` the tokens each position reads and ``tgt`` those it predicts (the next ones)."""
    from fairseq_tpr.analysis.dump import Dump
    from fairseq_tpr.cli import roles as roles_cli

    out = tmp_path / "roles.npz"
    roles_cli.main(["dump", str(lm_data), "--path", str(trained[arch] / "checkpoint_last.pt"), "--split", "valid",
                    "--max-examples", "6", "--out", str(out), "--cpu"])
    dump = Dump.load(str(out))
    assert dump.meta["language_model"] and len(dump) == 6
    assert all(key.startswith("decoder.") for key in dump.keys())
    for read, predicted in zip(dump.src, dump.tgt):  # the block's tokens, and each one's successor
        assert len(read) == len(predicted) == TOKENS and (read[1:] == predicted[:-1]).all()
    assert dump.tokens("decoder", 0) == [dump.src_vocab[t] for t in dump.src[0]]
    # its explorer: one row of text (what each position reads), decoder sites only
    from _explorer import read_page

    roles_cli.main(["html", str(out), "--out", str(tmp_path / "roles.html"), "--k", "3"])
    meta, arrays = read_page(tmp_path / "roles.html")
    assert meta["language_model"] and list(meta["sides"]) == ["decoder"]
    assert [site["key"] for site in meta["sites"]] == dump.keys()  # decoder sites only (asserted above)
    assert [meta["symbols"][i] for i in arrays["tokens/decoder"][:TOKENS]] == dump.tokens("decoder", 0)
    assert [meta["symbols"][i] for i in arrays["predicts/decoder"][:TOKENS]] == dump.tokens("decoder", 0, inputs=False)
    if arch == "tp_transformer_d_lm_tiny":
        roles_cli.main(["stats", str(out)])
        assert "| decoder.1.self | 0 |" in capsys.readouterr().out
    else:
        assert "decoder.embed" in dump.keys()  # Eq. 2's roles
        roles_cli.main(["kmeans", str(out), "--side", "decoder", "--layer", "embed", "--k", "3"])
        assert "| 2 | " in capsys.readouterr().out  # the third of the k clusters


def test_roles_dump_of_a_language_model_line_by_line_aligns_with_line_labels(trained, lm_data, tmp_path, capsys):
    """``--lines``: one example per line of the split, as the POS labels of ``pos_labels --side lm`` come
    (one label per piece of the line, aligned with the pieces each position predicts)."""
    from fairseq_tpr.analysis.dump import Dump
    from fairseq_tpr.analysis.pos_labels import load_pieces
    from fairseq_tpr.analysis.cluster import read_token_labels
    from fairseq_tpr.cli import roles as roles_cli

    out = tmp_path / "lines.npz"
    roles_cli.main(["dump", str(lm_data), "--path", str(trained["tp_transformer_d_lm_tiny"] / "checkpoint_last.pt"),
                    "--split", "valid", "--max-examples", "5", "--lines", "--out", str(out), "--cpu"])
    dump = Dump.load(str(out))
    _, pieces = load_pieces(str(lm_data), "valid", "lm", None)
    eos = dump.tgt_vocab.index("</s>")
    for i, (read, predicted) in enumerate(zip(dump.src, dump.tgt)):
        assert [dump.tgt_vocab[t] for t in predicted[:-1]] == pieces[i] and predicted[-1] == eos
        assert read[0] == eos and (read[1:] == predicted[:-1]).all()  # </s>, x_1 .. x_(n-1)
    labels = tmp_path / "valid.lab"  # one label per piece: its length, as a stand-in for a POS tag
    labels.write_text("".join(" ".join(str(len(p)) for p in line) + "\n" for line in pieces))
    aligned = read_token_labels(str(labels), dump, "decoder")
    assert [len(a) for a in aligned] == [len(t) for t in dump.tgt]
    roles_cli.main(["purity", str(out), "--labels", str(labels), "--side", "decoder", "--k", "3", "--component", "role",
                    "--json", str(tmp_path / "purity.json")])
    assert "purity" in capsys.readouterr().out
    # the explorer of a language model takes labels of its decoder: each head's purity is purity's
    import json

    from _explorer import read_page

    roles_cli.main(["html", str(out), "--out", str(tmp_path / "lines.html"), "--labels", str(labels), "--k", "3"])
    meta, _ = read_page(tmp_path / "lines.html")
    last = next(site for site in meta["sites"][::-1] if site["attention"] == "self")
    rows = json.loads((tmp_path / "purity.json").read_text())["rows"]
    assert [last["per_head"][row["head"]]["purity"] for row in rows] == [row["purity"][0] for row in rows]
