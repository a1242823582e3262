"""Task ``image_captioning``, its data checks, beam search with batch sizes 1 and 8, the caption
scorer, and a tiny end-to-end run through the real console scripts (shapes corpus ->
preprocess/captions.sh -> fairseq-train -> fairseq-generate -> fairseq-tpr-caption-score, and
the ATPL autoencoder -> fairseq-tpr-unbinding)."""
import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import VENV_BIN, cli_env
from fairseq.data import Dictionary, indexed_dataset
from fairseq.sequence_generator import SequenceGenerator

from fairseq_tpr.scoring.captions import collect, read_generate_log, score
from fairseq_tpr.cli.caption_score import main as caption_score_main
from fairseq_tpr.cli.unbinding import main as unbinding_main
from fairseq_tpr.corpora.shapes import write_shapes_corpus
from fairseq_tpr.data.captioning import check_raw_split, load_features
from fairseq_tpr.errors import ConfigError, DependencyError, InputError
from fairseq_tpr.tasks.image_captioning import ImageCaptioningConfig, ImageCaptioningTask
from test_atpl import build_captioner

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "fairseq_tpr"
WORDS = "a red blue circle square is above below".split()


# --------------------------------------------------------------------- tiny data written here
def write_split(root, split, image_ids, captions, feat_dim=6, feat_rows=None, seed=0):
    """Raw + binarized files of one split; ``captions`` is a list of (image id, text)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(seed)
    n_rows = len(image_ids) if feat_rows is None else feat_rows
    np.save(root / f"{split}.feat.npy", rng.randn(n_rows, feat_dim).astype(np.float32))
    (root / f"{split}.feat.ids").write_text("".join(f"{i}\n" for i in image_ids))
    (root / f"{split}.img").write_text("".join(f"{i}\n" for i, _ in captions))
    (root / f"{split}.txt").write_text("".join(f"{c}\n" for _, c in captions))
    d = dictionary()
    d.save(str(root / "dict.txt"))
    builder = indexed_dataset.make_builder(str(root / f"{split}.bin"), impl="mmap", vocab_size=len(d))
    for _, c in captions:
        builder.add_item(d.encode_line(c, add_if_not_exist=False, append_eos=True).long())
    builder.finalize(str(root / f"{split}.idx"))


def dictionary():
    d = Dictionary()
    for w in WORDS:
        d.add_symbol(w)
    d.finalize(padding_factor=1)
    return d


def make_task(root):
    cfg = ImageCaptioningConfig(data=str(root), max_target_positions=64)
    return ImageCaptioningTask.setup_task(cfg)


def _captions(image_ids, refs=2, seed=0):
    rng = np.random.RandomState(seed)
    return [(i, " ".join(rng.choice(WORDS, rng.randint(2, 6)))) for i in image_ids for _ in range(refs)]


@pytest.fixture
def data(tmp_path):
    train_ids, test_ids = [f"tr{i}" for i in range(5)], [f"te{i}" for i in range(9)]
    write_split(tmp_path, "train", train_ids, _captions(train_ids, 3))
    write_split(tmp_path, "test", test_ids, _captions(test_ids, 2, seed=1), seed=1)
    return tmp_path


# --------------------------------------------------------------------- dataset and task
def test_train_pairs_every_reference_test_one_item_per_image(data):
    task = make_task(data)
    assert task.feature_dim == 6
    task.load_dataset("train")
    task.load_dataset("test")
    train, test = task.dataset("train"), task.dataset("test")
    assert len(train) == 15 and len(test) == 9
    feats = np.load(data / "test.feat.npy")
    lines = (data / "test.txt").read_text().splitlines()
    batch = test.collater([test[k] for k in (4, 0, 7)])
    # the image feature travels in net_input, aligned with the targets: item k is image row k with its first reference
    torch.testing.assert_close(batch["net_input"]["image_features"], torch.from_numpy(feats[[4, 0, 7]]))
    for b, k in enumerate((4, 0, 7)):
        tgt = batch["target"][b]
        assert task.dictionary.string(tgt[tgt.ne(task.dictionary.pad())]) == lines[2 * k]
        assert batch["net_input"]["prev_output_tokens"][b, 0] == task.dictionary.eos()
    rows = [train[k]["row"] for k in range(15)]
    assert rows == [r for r in range(5) for _ in range(3)]


def test_feature_rows_must_match_ids(tmp_path):
    write_split(tmp_path, "train", ["a", "b", "c"], _captions(["a", "b", "c"]), feat_rows=4)
    with pytest.raises(InputError, match=r"train.feat.npy has 4 rows but .*train.feat.ids lists 3"):
        load_features(tmp_path, "train")


def test_feature_dim_must_match_between_splits(data):
    write_split(data, "valid", ["v0", "v1"], _captions(["v0", "v1"]), feat_dim=7)
    task = make_task(data)
    with pytest.raises(InputError, match=r"valid.feat.npy has 7-d features .* 6-d"):
        task.load_dataset("valid")


def test_caption_for_unknown_image_id(data):
    caps = _captions(["v0", "v1"]) + [("ghost", "a red circle")]
    write_split(data, "valid", ["v0", "v1"], caps)
    with pytest.raises(InputError, match=r"valid.img line 5: caption for unknown image id 'ghost'"):
        make_task(data).load_dataset("valid")
    with pytest.raises(InputError, match="unknown image id 'ghost'"):
        check_raw_split(data, "valid")


def test_empty_caption(data):
    caps = [("v0", "a red circle"), ("v1", ""), ("v1", "a blue square")]
    write_split(data, "valid", ["v0", "v1"], caps)
    with pytest.raises(InputError, match=r"valid.txt line 2: empty caption"):
        check_raw_split(data, "valid")
    with pytest.raises(InputError, match=r"caption line 2 is empty"):
        make_task(data).load_dataset("valid")


def test_test_image_without_reference(data):
    write_split(data, "valid", ["v0", "v1", "v2"], _captions(["v0", "v2"]))
    with pytest.raises(InputError, match="image row 2 .* has no caption"):
        make_task(data).load_dataset("valid")


def test_model_feature_dim_must_match_data(data):
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq import options

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["/dev/null", "--task", "translation", "--arch", "nic_tiny",
                                                "--image-feature-dim", "2048"])
    with pytest.raises(ValueError, match=r"2048-d image features .* are 6-d"):
        ARCH_MODEL_REGISTRY["nic_tiny"].build_model(args, make_task(data))


# --------------------------------------------------------------------- beam search
@pytest.mark.parametrize("arch", ["atpl_tiny", "nic_tiny"])
def test_beam_search_batch_size_1_and_8_give_the_same_captions(data, arch):
    task = make_task(data)
    task.load_dataset("test")
    ds = task.dataset("test")
    model, _, args = build_captioner(arch, 6, seed=3)
    # the model must use the task's dictionary (not the fingerprint of the toy one the first build stored)
    from fairseq.models import ARCH_MODEL_REGISTRY

    from fairseq_tpr.models.dictionaries import fingerprint_key

    for side in ("source", "target"):
        vars(args).pop(fingerprint_key(side), None)

    torch.manual_seed(3)
    # float64 (the features stay float32: the decoder casts them): batch 1 and 8 agree to rounding
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task).double().eval()
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=10)

    def decode(batch_size):
        out = {}
        for start in range(0, len(ds), batch_size):
            sample = ds.collater([ds[k] for k in range(start, min(start + batch_size, len(ds)))])
            hyps = gen.generate([model], sample)
            for sid, h in zip(sample["id"].tolist(), hyps):
                out[sid] = (h[0]["tokens"].tolist(), float(h[0]["score"]))
        return out

    one, eight = decode(1), decode(8)
    assert len(one) == len(ds) == 9
    assert {k: t for k, (t, _) in one.items()} == {k: t for k, (t, _) in eight.items()}
    assert max(abs(one[k][1] - eight[k][1]) for k in one) < 1e-10
    assert len({tuple(t) for t, _ in one.values()}) > 1  # the images are decoded differently


# --------------------------------------------------------------------- scorer
def test_scorer_perfect_and_checks(tmp_path):
    refs = ["a red circle", "a red circle above a square", "a blue square", "the blue square"]
    (tmp_path / "refs.txt").write_text("\n".join(refs) + "\n")
    (tmp_path / "refs.img").write_text("x\nx\ny\ny\n")
    (tmp_path / "hyp.img").write_text("x\ny\n")
    gts, res = collect(tmp_path / "refs.txt", tmp_path / "refs.img", ["a red circle", "a blue square"],
                       tmp_path / "hyp.img")
    assert gts == {"x": refs[:2], "y": refs[2:]} and res == {"x": ["a red circle"], "y": ["a blue square"]}
    s = score(gts, res, ptb_tokenize=False, metrics=("BLEU-1", "ROUGE-L", "CIDEr"))
    assert s["BLEU-1"] == pytest.approx(1.0, abs=1e-6) and s["ROUGE-L"] == pytest.approx(1.0)
    worse = score(gts, {"x": ["a blue circle"], "y": ["a red square"]}, ptb_tokenize=False, metrics=("BLEU-1",))
    assert worse["BLEU-1"] < s["BLEU-1"]
    # a generate log that lost an image (fairseq's --required-batch-size-multiple trap) is refused
    (tmp_path / "gen.log").write_text("S-0\tx\nH-1\t-0.5\ta blue square\nD-1\t-0.5\ta blue square\n")
    with pytest.raises(InputError, match="1 hypotheses for 2 images .* --required-batch-size-multiple 1"):
        collect(tmp_path / "refs.txt", tmp_path / "refs.img", read_generate_log(tmp_path / "gen.log"),
                tmp_path / "hyp.img")
    (tmp_path / "hyp2.img").write_text("x\nz\n")
    with pytest.raises(InputError, match="image 'z' .* no reference"):
        collect(tmp_path / "refs.txt", tmp_path / "refs.img", ["a", "b"], tmp_path / "hyp2.img")
    # fairseq-tpr-caption-score leaves these to the error hook (one "error:" line, exit status 2)
    files = ["--refs", tmp_path / "refs.txt", "--ref-images", tmp_path / "refs.img", "--no-ptb-tokenize"]
    with pytest.raises(InputError, match="1 hypotheses for 2 images .* --required-batch-size-multiple 1"):
        caption_score_main([str(a) for a in ["--generate-log", tmp_path / "gen.log", "--hyp-images",
                                             tmp_path / "hyp.img", *files]])
    with pytest.raises(InputError, match=f"^{re.escape(str(tmp_path / 'nope.txt'))}: no such file$"):
        caption_score_main([str(a) for a in ["--hyps", tmp_path / "nope.txt", "--hyp-images", tmp_path / "hyp.img",
                                             *files]])


# --------------------------------------------------------------------- end to end through the CLIs
def _run(cmd, cwd):
    exe = cmd[0] if cmd[0] == "bash" else str(VENV_BIN / cmd[0])
    return subprocess.run([exe, *map(str, cmd[1:])], cwd=cwd, env=cli_env(), capture_output=True, text=True,
                          timeout=300)


def _ok(proc):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


N_TEST = 11


def binarize_autoencoder_data(raw, dest):
    """What ``fairseq-preprocess --source-lang src --target-lang tgt --joined-dictionary`` writes for
    source = target = the captions, built in-process (one CLI start less)."""
    dest.mkdir(parents=True)
    d = Dictionary()
    for line in (raw / "train.txt").read_text().splitlines():
        for w in line.split():
            d.add_symbol(w)
    d.finalize(padding_factor=8)
    for lang in ("src", "tgt"):
        d.save(str(dest / f"dict.{lang}.txt"))
        for split in ("train", "valid"):
            prefix = dest / f"{split}.src-tgt.{lang}"
            builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
            for line in (raw / f"{split}.txt").read_text().splitlines():
                builder.add_item(d.encode_line(line, add_if_not_exist=False).long())
            builder.finalize(f"{prefix}.idx")


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """Every CLI call of the end-to-end tests, two at a time (each costs seconds of imports)."""
    root = tmp_path_factory.mktemp("caption_e2e")
    raw, bin_, ae = root / "raw", root / "bin", root / "ae"
    t0 = time.time()
    write_shapes_corpus(raw, n_train=40, n_valid=6, n_test=N_TEST, refs=3, n_png=0)
    binarize_autoencoder_data(raw, ae / "bin")
    train = ["--user-dir", USER_DIR, "--optimizer", "adam", "--lr", "5e-3", "--max-tokens", "500",
             "--criterion", "cross_entropy", "--max-update", "8", "--cpu", "--seed", "1", "--num-workers", "0",
             "--required-batch-size-multiple", "1", "--no-epoch-checkpoints", "--log-format", "simple",
             "--no-progress-bar"]
    gen = ["fairseq-generate", bin_, "--user-dir", USER_DIR, "--task", "image_captioning", "--gen-subset",
           "test", "--beam", "3", "--max-len-b", "15", "--required-batch-size-multiple", "1", "--cpu",
           "--num-workers", "0", "--path", root / "atpl/checkpoint_last.pt"]
    stages = [
        {"binarize": ["bash", "-c", f"FAIRSEQ_BIN={VENV_BIN} preprocess/captions.sh {raw} {bin_}"]},
        {"atpl": ["fairseq-train", bin_, "--task", "image_captioning", "--arch", "atpl_tiny", *train,
                  "--save-dir", root / "atpl"],
         "ae_train": ["fairseq-train", ae / "bin", "--task", "translation", "--source-lang", "src",
                      "--target-lang", "tgt", "--arch", "atpl_autoencoder_tiny", *train, "--save-dir",
                      root / "ae_ckpt"]},
        {"gen8": [*gen, "--batch-size", "8"],
         "unbind": ["fairseq-tpr-unbinding", "--path", root / "ae_ckpt/checkpoint_last.pt", "--input",
                    raw / "test.txt", "--out", root / "u.npz", "--batch-size", "5"]},
        {"score": ["fairseq-tpr-caption-score", "--data", bin_, "--split", "test", "--generate-log",
                   root / "gen8.log", "--json", root / "scores.json"],
         "gen1": [*gen, "--batch-size", "1"]},
    ]
    out = {}
    with ThreadPoolExecutor(2) as pool:
        for stage in stages:
            jobs = {k: pool.submit(_run, cmd, REPO) for k, cmd in stage.items()}
            out.update({k: _ok(j.result()) for k, j in jobs.items()})
            print(f"e2e stage {list(stage)}: {time.time() - t0:.0f} s")
            if "gen8" in out:
                (root / "gen8.log").write_text(out["gen8"].stdout)
    return root, out


def _hyps(log):
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^H-(\d+)\t[^\t]*\t(.*)$", log, re.M)}


@pytest.mark.slow  # the module's end-to-end training: about 40 s
def test_e2e_generate_every_test_image_and_batch_size_invariant(e2e):
    root, out = e2e
    one, eight = _hyps(out["gen1"].stdout), _hyps(out["gen8"].stdout)
    assert sorted(one) == list(range(N_TEST))
    assert one == eight
    assert "loss" in out["atpl"].stdout


@pytest.mark.slow  # the module's end-to-end training: about 40 s
def test_e2e_caption_scores(e2e):
    root, out = e2e
    scores = json.loads((root / "scores.json").read_text())
    assert scores["images"] == N_TEST and scores["references"] == 3 * N_TEST
    for m in ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr"):
        assert 0.0 <= scores[m] <= (10.0 if m == "CIDEr" else 1.0)
        assert re.search(rf"^{m}\s+{scores[m]:.4f}$", out["score"].stdout, re.M)
    assert "SPICE not computed" in out["score"].stdout


@pytest.mark.slow  # the module's end-to-end training: about 40 s
def test_e2e_unbinding_dump(e2e):
    root, out = e2e
    raw_lines = (root / "raw/test.txt").read_text().splitlines()
    z = np.load(root / "u.npz")
    assert z["vectors"].dtype == np.float32 and z["offsets"].dtype == np.int64
    assert len(z["offsets"]) == len(raw_lines) + 1 and z["offsets"][0] == 0
    assert z["vectors"].shape == (sum(len(s.split()) for s in raw_lines), 8)  # atpl_autoencoder_tiny: d = 8
    for i in (0, len(raw_lines) - 1):
        assert z["words"][z["offsets"][i]:z["offsets"][i + 1]].tolist() == raw_lines[i].split()


@pytest.mark.slow  # the module's end-to-end training: about 40 s
def test_unbinding_refuses_a_captioning_checkpoint_and_empty_lines(e2e, tmp_path):
    root, _ = e2e
    (tmp_path / "s.txt").write_text("a red circle\n")
    with pytest.raises(ConfigError, match="not an ATPL autoencoder"):
        unbinding_main(["--path", str(root / "atpl/checkpoint_last.pt"), "--input", str(tmp_path / "s.txt"),
                        "--out", str(tmp_path / "u.npz")])
    (tmp_path / "e.txt").write_text("a red circle\n\nthe square\n")
    argv = ["--path", str(root / "ae_ckpt/checkpoint_last.pt"), "--input", str(tmp_path / "e.txt"),
            "--out", str(tmp_path / "u.npz")]
    with pytest.raises(InputError, match=r"e.txt line 2 is empty \(1 empty lines\)"):
        unbinding_main(argv)
    # the console script: the error hook's one line and exit status 2 (refused before torch is imported)
    proc = _run(["fairseq-tpr-unbinding", *argv], REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == [f"error: {tmp_path / 'e.txt'} line 2 is empty (1 empty lines); one sentence "
                                        f"per line, no blank lines"]
    assert not (tmp_path / "u.npz").exists()


# --------------------------------------------------------------------- COCO preprocessing
def test_karpathy_json_to_raw_layout(tmp_path):
    from fairseq_tpr.corpora.coco import from_karpathy

    def image(cocoid, split, *caps):
        return {"cocoid": cocoid, "split": split, "filepath": "val2014", "filename": f"{cocoid}.jpg",
                "sentences": [{"tokens": c.split(), "raw": c} for c in caps]}

    data = {"images": [image(11, "train", "A dog", "a Brown dog"), image(12, "restval", "a cat"),
                       image(13, "val", "two birds"), image(14, "test", "a red bus", "a bus", "")]}
    (tmp_path / "dataset_coco.json").write_text(json.dumps(data))
    feats = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    np.save(tmp_path / "f.npy", feats)
    (tmp_path / "f.ids").write_text("14\n99\n12\n11\n13\n")
    counts = from_karpathy(tmp_path / "dataset_coco.json", tmp_path / "f.npy", tmp_path / "f.ids", tmp_path / "raw")
    assert counts == {"train": (2, 3), "valid": (1, 1), "test": (1, 2)}
    raw = tmp_path / "raw"
    assert (raw / "train.txt").read_text().splitlines() == ["a dog", "a brown dog", "a cat"]
    assert (raw / "train.img").read_text().split() == ["11", "11", "12"]
    np.testing.assert_array_equal(np.load(raw / "train.feat.npy"), feats[[3, 2]])
    np.testing.assert_array_equal(np.load(raw / "test.feat.npy"), feats[[0]])
    for split in ("train", "valid", "test"):
        check_raw_split(raw, split)
    (tmp_path / "g.ids").write_text("14\n99\n12\n11\n15\n")  # image 13 (val) has no features
    with pytest.raises(InputError, match="1 valid images have no row .* COCO id 13"):
        from_karpathy(tmp_path / "dataset_coco.json", tmp_path / "f.npy", tmp_path / "g.ids", tmp_path / "raw2")


def test_extract_features_says_when_torchvision_is_missing(tmp_path):
    try:
        import torchvision  # noqa: F401

        pytest.skip("torchvision is installed here")
    except ImportError:
        pass
    from PIL import Image

    from fairseq_tpr.corpora import image_features as mod

    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    with pytest.raises(DependencyError, match="torchvision is not installed"):
        mod.main(["--image-dir", str(tmp_path), "--out", str(tmp_path / "f")])


# --------------------------------------------------------------------- shapes corpus
def test_shapes_corpus_layout_pos_and_scene_checker(tmp_path):
    import fairseq_tpr.corpora.shapes as sc
    from fairseq_tpr.scoring.shapes_eval import caption_is_true

    counts = write_shapes_corpus(tmp_path, n_train=12, n_valid=3, n_test=4, refs=5, n_png=0)
    assert counts == {"train": (12, 60), "valid": (3, 15), "test": (4, 20)}
    for split in ("train", "valid", "test"):
        check_raw_split(tmp_path, split)
        txt = (tmp_path / f"{split}.txt").read_text().splitlines()
        pos = (tmp_path / f"{split}.pos").read_text().splitlines()
        assert [" ".join(t.rsplit("/", 1)[0] for t in p.split()) for p in pos] == txt
        assert {t.rsplit("/", 1)[1] for p in pos for t in p.split()} <= {
            "DET", "ADJ", "NOUN", "AUX", "VERB", "ADP", "PRON", "CCONJ"}
    assert np.load(tmp_path / "train.feat.npy").shape == (12, sc.RandomFilterCNN().dim)
    # every reference is true of its own image; swapping colours, relations or sizes makes it false
    scenes = {json.loads(s)["id"]: json.loads(s) for s in (tmp_path / "train.scenes.jsonl").read_text().splitlines()}
    swap = {"above": "below", "below": "above", "left": "right", "right": "left", "small": "large", "large": "small"}
    lines = zip((tmp_path / "train.txt").read_text().splitlines(), (tmp_path / "train.img").read_text().split())
    n_false = 0
    for caption, image in lines:
        words = caption.split()
        assert caption_is_true(words, scenes[image]) == (True, True), caption
        flipped = [swap.get(w, w) for w in words]
        if flipped != words:
            assert caption_is_true(flipped, scenes[image]) == (True, False), flipped
            n_false += 1
        other = [c for c in sc.COLORS if c not in {o["color"] for o in scenes[image]["objects"]}][0]
        recoloured = [other if w == scenes[image]["objects"][0]["color"] else w for w in words]
        assert caption_is_true(recoloured, scenes[image]) == (False, False)
    assert n_false > 40  # every caption but those of the "and" template without a size word


def test_nearest_train_captions_control(tmp_path):
    from fairseq_tpr.scoring.captions import nearest_train_captions

    np.save(tmp_path / "train.feat.npy", np.array([[1, 0], [0, 1], [1, 1]], np.float32))
    (tmp_path / "train.feat.ids").write_text("c\nd\ne\n")
    (tmp_path / "train.txt").write_text("a cat\na dog\na small dog\nan elk\n")
    (tmp_path / "train.img").write_text("c\nd\nd\ne\n")
    np.save(tmp_path / "test.feat.npy", np.array([[5, 0.1], [0.1, 9], [2, 2.2]], np.float32))  # cosine, not distance
    (tmp_path / "test.feat.ids").write_text("x\ny\nz\n")
    (tmp_path / "test.txt").write_text("a cat\na dog\nan elk\n")
    (tmp_path / "test.img").write_text("x\ny\nz\n")
    assert nearest_train_captions(tmp_path, "test") == ["a cat", "a dog", "an elk"]
    caption_score_main(["--data", str(tmp_path), "--split", "test", "--nearest-train", "--no-ptb-tokenize",
                        "--metrics", "BLEU-1", "--json", str(tmp_path / "s.json")])
    assert json.loads((tmp_path / "s.json").read_text())["BLEU-1"] == pytest.approx(1.0)
    np.save(tmp_path / "test.feat.npy", np.zeros((3, 3), np.float32))
    with pytest.raises(InputError, match="2-d features but test.feat.npy 3-d"):
        nearest_train_captions(tmp_path, "test")
    with pytest.raises(SystemExit):
        caption_score_main(["--nearest-train", "--refs", "r", "--ref-images", "i", "--hyp-images", "h"])
