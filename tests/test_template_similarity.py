"""fairseq-tpr-template-similarity (STTR Table IV, Sun, Wang, Li Eq. 26): its per-sentence and mean
similarities equal a plain loop written here (one sentence at a time, Python means and cosine) for
a checkpoint from a real fairseq-train run and an untrained one; batch size 1 and N give the same
numbers; bad input gives a one-line error and exit code 2.

Data: a tiny binarized corpus written by the test (train/valid/test; the test split has 11 lines,
not a multiple of any batch size used)."""
import json
import math
import os
import random
import re
import sys

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.data import Dictionary, indexed_dataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer

from fairseq_tpr.analysis.template_similarity import load_model as _load, sentence_similarities
from fairseq_tpr.cli.template_similarity import main as similarity_main
from fairseq_tpr.errors import FairseqTprError, one_line

N = {"train": 48, "valid": 8, "test": 11}
VOCAB = [f"w{i}" for i in range(30)]
LANGS = ("-s", "source", "-t", "target")
CRITERION = ("--criterion", "label_smoothed_cross_entropy_with_template_mse", "--label-smoothing", "0.1")


def _write(prefix, lines, d):
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
    for line in lines:
        builder.add_item(d.encode_line(line, add_if_not_exist=False).long())
    builder.finalize(f"{prefix}.idx")


def _corpus(root):
    """Articles of 4-12 words; summary = the first three words reversed; template = the summary of
    another article (a random one here: retrieval is tested elsewhere). Returns the raw lines."""
    rng = random.Random(0)
    d = Dictionary()
    for w in VOCAB:
        d.add_symbol(w)
    d.finalize(padding_factor=1)
    d.save(str(root / "dict.source.txt"))
    d.save(str(root / "dict.target.txt"))
    raw = {}
    for split, n in N.items():
        arts = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(4, 12))) for _ in range(n)]
        sums = [" ".join(a.split()[:3][::-1]) for a in arts]
        tpls = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(2, 6))) for _ in range(n)]
        for lang, lines in (("source", arts), ("target", sums), ("template", tpls)):
            _write(root / f"{split}.source-target.{lang}", lines, d)
        raw[split] = {"source": arts, "target": sums, "template": tpls}
    return d, raw


def _save_checkpoint(data, path, arch, *flags, task="template_summarization", updates=0):
    """A model trained for ``updates`` steps by fairseq's own Trainer on the train split and saved by
    it (the code path and file format of fairseq-train)."""
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--task", task, *LANGS, "--arch", arch, "--optimizer", "adam", "--lr", "3e-3", "--cpu",
        "--seed", "3", "--batch-size", "8", "--required-batch-size-multiple", "1", "--save-dir", str(path.parent),
        "--no-save-optimizer-state", *flags])
    cfg = convert_namespace_to_omegaconf(args)
    t = tasks.setup_task(cfg.task)
    torch.manual_seed(3)
    model = t.build_model(cfg.model)
    trainer = Trainer(cfg, t, model, t.build_criterion(cfg.criterion))
    if updates:
        t.load_dataset("train")
        itr = t.get_batch_iterator(t.dataset("train"), max_sentences=8, required_batch_size_multiple=1, seed=3,
                                   num_workers=0).next_epoch_itr(shuffle=True)
        for _, sample in zip(range(updates), itr):
            assert trainer.train_step([sample]) is not None
        assert trainer.get_num_updates() == updates
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.save_checkpoint(str(path), {})
    return path


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    root = tmp_path_factory.mktemp("template_sim")
    data = root / "bin"
    data.mkdir()
    d, raw = _corpus(data)
    ckpts = {
        "trained": _save_checkpoint(data, root / "trained" / "checkpoint_last.pt", "sttr_tiny", *CRITERION,
                                    "--template-mse-lambda", "1", updates=6),
        "untrained": _save_checkpoint(data, root / "untrained" / "checkpoint_last.pt", "sttr_tiny", *CRITERION,
                                      "--template-mse-lambda", "0"),
    }
    return root, data, d, raw, ckpts


def _run(capsys, *argv):
    capsys.readouterr()  # drop what building the fixtures printed (hydra's warnings)
    try:
        rc = similarity_main([str(a) for a in argv])
    except FairseqTprError as e:  # what the plugin's excepthook prints at the top of the command, exit 2
        print(one_line(e), file=sys.stderr)
        rc = 2
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------------------- the oracle
def _mean(rows):
    """Plain mean of a list of C-vectors (lists of floats)."""
    return [sum(col) / len(rows) for col in zip(*rows)]


def _sim(u, v):
    """Eq. 26 mapped to [0, 1]: (u.v / (|u| |v|) + 1) / 2."""
    dot = sum(a * b for a, b in zip(u, v))
    return (dot / (math.sqrt(sum(a * a for a in u)) * math.sqrt(sum(b * b for b in v))) + 1) / 2


def oracle(ckpt, data, d, raw):
    """Sentence by sentence (batch of one, no padding): H_ts from the model's encoder, H_s from its
    source encoder, E_t = the decoder's input (sqrt(d) * E[prev_output_tokens] plus positions, where
    prev_output_tokens = </s> followed by the target without its last token; the criterion's default
    --template-mse-target decoder-input); means and cosine in plain Python."""
    models, _cfg, _task = checkpoint_utils.load_model_ensemble_and_task([str(ckpt)], arg_overrides={"data": str(data)})
    model = models[0].eval()
    emb = model.decoder.embed_tokens.weight
    scale = model.decoder.embed_scale
    sims = []
    with torch.no_grad():
        for src_line, tgt_line, tpl_line in zip(raw["source"], raw["target"], raw["template"]):
            src = d.encode_line(src_line, add_if_not_exist=False).long()[None]  # 1 x S, ends in </s>
            tpl = d.encode_line(tpl_line, add_if_not_exist=False).long()[None]
            tgt = d.encode_line(tgt_line, add_if_not_exist=False).long()  # ends in </s>
            prev = torch.cat([torch.tensor([d.eos()]), tgt[:-1]])[None]  # 1 x T
            enc = model.encoder(src, src_lengths=torch.tensor([src.numel()]), template_tokens=tpl,
                                template_lengths=torch.tensor([tpl.numel()]))
            h_ts = enc["template_aware"][0][:, 0].tolist()  # S x C
            h_s = model.encoder.source_encoder(src, src_lengths=torch.tensor([src.numel()]))["encoder_out"][0][:, 0]
            e_t = (scale * emb[prev[0]] + model.decoder.embed_positions(prev)[0]).tolist()  # T x C
            sims.append((_sim(_mean(h_ts), _mean(e_t)), _sim(_mean(h_s.tolist()), _mean(e_t))))
    return sims


def test_command_equals_a_plain_loop_over_sentences(fx, run_cli):
    root, data, d, raw, ckpts = fx
    out_json = root / "sim.json"
    proc = run_cli("fairseq-tpr-template-similarity", data, "--path", ckpts["trained"], "--path", ckpts["untrained"],
                   "--gen-subset", "test", "--batch-size", "4", "--cpu", "--json", out_json, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out_json.read_text())["rows"]
    assert [r["label"] for r in rows] == ["+MSE loss", "STTR w/o loss"]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 3 and "Sim(%) H_ts" in table[0]
    for row, name, line in zip(rows, ("trained", "untrained"), table[1:]):
        want = oracle(ckpts[name], data, d, raw["test"])
        assert row["n"] == N["test"] and [s[0] for s in row["sentences"]] == list(range(N["test"]))
        for (_, got_ts, got_s), (ts, s) in zip(row["sentences"], want):
            assert got_ts == pytest.approx(ts, abs=1e-5) and got_s == pytest.approx(s, abs=1e-5)
        ts_mean = sum(w[0] for w in want) / len(want)
        s_mean = sum(w[1] for w in want) / len(want)
        ts_std = math.sqrt(sum((w[0] - ts_mean) ** 2 for w in want) / len(want))
        assert row["sim_ts"]["mean"] == pytest.approx(ts_mean, abs=1e-5)
        assert row["sim_s"]["mean"] == pytest.approx(s_mean, abs=1e-5)
        assert row["sim_ts"]["std"] == pytest.approx(ts_std, abs=1e-5)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == row["label"] and cells[-1] == str(N["test"])
        assert cells[3] == f"{100 * ts_mean:.2f}%" and cells[5] == f"{100 * s_mean:.2f}%"
    # the two checkpoints differ, so a command that ignored --path would fail above; say so explicitly
    assert rows[0]["sim_ts"]["mean"] != pytest.approx(rows[1]["sim_ts"]["mean"], abs=1e-4)


def test_batch_size_1_and_n_give_the_same_numbers(fx):
    """The library behind the command, on the trained checkpoint in float64 (in float32 the
    batch composition changes rounding at 1e-7): batch size 1, 5 and a token budget agree to 1e-10."""
    _, data, _, _, ckpts = fx
    model, _, task = _load(str(ckpts["trained"]), str(data), torch.device("cpu"))
    model.double()
    task.load_dataset("test", combine=False, epoch=1)
    cpu = torch.device("cpu")
    one = sentence_similarities(model, task, "test", 1, None, cpu, progress=False)
    assert sorted(one) == list(range(N["test"]))
    for batch_size, max_tokens in ((5, None), (None, 40)):
        other = sentence_similarities(model, task, "test", batch_size, max_tokens, cpu, progress=False)
        assert sorted(other) == sorted(one)
        for i in one:
            assert max(abs(a - b) for a, b in zip(one[i], other[i])) < 1e-10, (batch_size, max_tokens, i)


def _one_line_error(rc, out, err, *needles):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "|" not in out  # no table


@pytest.mark.parametrize("arch,flags,task,needles", [
    ("tp_transformer_tiny", ("--share-all-embeddings",), "translation",
     ("--arch tp_transformer_tiny", "TPTransformerModel", "not STTR")),
    ("transformer", ("--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
                     "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32"),
     "translation", ("--arch transformer", "TransformerModel", "not STTR")),
    ("sttr_tiny", ("--template-mode", "none", *CRITERION, "--template-mse-lambda", "0"), "template_summarization",
     ("--template-mode none", "no template-aware document H_ts", "--template-mode attention")),
    ("sttr_tiny", ("--template-mode", "concat", *CRITERION, "--template-mse-lambda", "0"), "template_summarization",
     ("--template-mode concat", "no template-aware document H_ts", "[H_s; H_t]")),
])
def test_checkpoints_without_h_ts_are_refused(fx, capsys, tmp_path, arch, flags, task, needles):
    _, data, _, _, ckpts = fx
    ckpt = _save_checkpoint(data, tmp_path / "other.pt", arch, *flags, task=task)
    # also when it comes second: every checkpoint is checked before any model runs
    _one_line_error(*_run(capsys, data, "--path", ckpts["untrained"], "--path", ckpt, "--cpu", "--no-progress"),
                    str(ckpt), *needles)


def test_missing_checkpoint_split_and_templates(fx, capsys, tmp_path):
    root, data, _, _, ckpts = fx
    _one_line_error(*_run(capsys, data, "--path", root / "nope.pt", "--cpu"), "nope.pt does not exist")
    _one_line_error(*_run(capsys, data, "--path", ckpts["trained"], "--gen-subset", "test7", "--cpu"),
                    "no split 'test7'", "splits there: test, train, valid")
    no_tpl = tmp_path / "bin_no_test_templates"
    no_tpl.mkdir()
    for f in os.listdir(data):
        if not f.startswith("test.source-target.template"):
            os.symlink(data / f, no_tpl / f)
    _one_line_error(*_run(capsys, no_tpl, "--path", ckpts["trained"], "--cpu"),
                    "no templates for split 'test'", "test.source-target.template.bin/.idx is missing",
                    "preprocess/templates.sh")
    # the same data still works for a split that has its templates
    rc, out, err = _run(capsys, no_tpl, "--path", ckpts["trained"], "--gen-subset", "valid", "--cpu", "--no-progress")
    assert rc == 0, err
    assert re.search(rf"\| {N['valid']} \|$", out.strip().splitlines()[-1])


def test_not_a_checkpoint_and_label_count(fx, capsys, tmp_path):
    _, data, _, _, ckpts = fx
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    _one_line_error(*_run(capsys, data, "--path", junk, "--cpu"), "cannot read", "as a fairseq checkpoint")
    _one_line_error(*_run(capsys, data, "--path", ckpts["trained"], "--label", "a", "--label", "b", "--cpu"),
                    "2 --label for 1 --path")


def test_records_of_another_session_join_the_table(fx, capsys, tmp_path):
    """--records: the rows of an earlier --json whose label is not computed here are added (a Table IV
    assembled over sessions); a label computed here wins; --path may be left out; another split is refused."""
    _, data, _, _, ckpts = fx
    first = tmp_path / "first.json"
    rc, _, err = _run(capsys, data, "--path", ckpts["trained"], "--label", "a", "--path", ckpts["untrained"],
                      "--label", "b", "--cpu", "--json", first)
    assert rc == 0, err
    rows = json.loads(first.read_text())["rows"]
    recorded = {"data": str(data), "split": "test", "rows": [dict(rows[0], label="b", n=-1), dict(rows[1], label="c")]}
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(recorded))
    again = tmp_path / "again.json"
    rc, out, err = _run(capsys, data, "--path", ckpts["untrained"], "--label", "b", "--records", rec, "--cpu",
                        "--json", again)
    assert rc == 0, err
    merged = json.loads(again.read_text())["rows"]
    assert [r["label"] for r in merged] == ["b", "c"]
    assert merged[0]["n"] == N["test"] and merged[0]["sim_ts"] == rows[1]["sim_ts"]  # computed here, not the record
    assert merged[1] == recorded["rows"][1]
    assert [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ")][1:] == ["b", "c"]
    rc, out, _ = _run(capsys, data, "--records", rec)  # nothing computed: the records alone
    assert rc == 0 and "| b |" in out and "| c |" in out
    with pytest.raises(SystemExit):
        _run(capsys, data, "--records", rec, "--gen-subset", "valid")
    assert "holds split 'test', not --gen-subset 'valid'" in capsys.readouterr().err
