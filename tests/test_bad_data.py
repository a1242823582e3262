"""Issue 16: every bad input is one ``error:`` line naming the file (and line, byte, document or
node) and the fix, no traceback; exit status 2 from this package's console scripts, 1 from fairseq's
own commands (the plugin's hook, then Python's normal exit). Per surface: image captioning (feature files,
non-UTF-8 captions), extractive summarization (missing and corrupt ``S.tree.npy``, trees missing
for some documents), and the generate-log reader of ``fairseq-tpr-math-eval`` and
``fairseq-tpr-score``. At least one case per command runs the real console script."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from fairseq_tpr.corpora import extractive as prep
from fairseq_tpr.corpora.rawio import read_lines as raw_read_lines
from fairseq_tpr.corpora.coco import from_karpathy
from fairseq_tpr.data.captioning import check_raw_split, load_features
from fairseq_tpr.data.extractive_dataset import check_trees, load_split, read_meta
from fairseq_tpr.errors import InputError
from test_captioning import _captions, make_task, write_split
from test_math_eval import write_generate_dir

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "fairseq_tpr"
BAD = b"caf\xe9"  # latin-1, not UTF-8


def error_line(proc, status=2):
    """The one ``error:`` line a command ends with (fairseq's own logging may come before it);
    ``status``: 2 for this package's console scripts, 1 for fairseq's commands."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == status, (proc.returncode, proc.stderr[-3000:])
    last = proc.stderr.strip().splitlines()[-1]
    assert "error: " in last, proc.stderr[-3000:]
    return last


# ----------------------------------------------------------------------------------- captioning
@pytest.fixture
def captions(tmp_path):
    ids = {"train": [f"tr{i}" for i in range(4)], "valid": ["v0", "v1"], "test": ["te0", "te1"]}
    for k, (split, image_ids) in enumerate(ids.items()):
        write_split(tmp_path, split, image_ids, _captions(image_ids, 2, seed=k), seed=k)
    return tmp_path


def test_fairseq_train_with_a_missing_feature_file(captions, tmp_path, run_cli):
    (captions / "valid.feat.npy").unlink()
    proc = run_cli("fairseq-train", captions, "--user-dir", USER_DIR, "--task", "image_captioning", "--arch",
                   "nic_tiny", "--criterion", "cross_entropy", "--optimizer", "adam", "--lr", "1e-3",
                   "--max-tokens", "200", "--max-update", "1", "--cpu", "--num-workers", "0",
                   "--save-dir", tmp_path / "ckpt", "--no-progress-bar", timeout=300)
    assert error_line(proc, status=1) == (f"error: {captions / 'valid.feat.npy'} is missing: a captioning split needs "
                                f"valid.feat.npy (N x D float image features) and valid.feat.ids (the image "
                                f"id of each row)")


def test_feature_files_of_the_wrong_shape_or_kind(captions):
    np.save(captions / "valid.feat.npy", np.zeros(2, dtype=np.float32))
    with pytest.raises(InputError, match=r"valid.feat.npy has shape \(2,\); expected a 2-d array N images x D"):
        load_features(captions, "valid")
    (captions / "valid.feat.npy").write_bytes(b"not an array")
    with pytest.raises(InputError, match=r"valid.feat.npy is not a readable NumPy .npy array"):
        load_features(captions, "valid")
    np.save(captions / "valid.feat.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(InputError, match=r"valid.feat.npy holds <U1 values; image features are numbers"):
        load_features(captions, "valid")
    # every split's feature size is the first split's (train: 6)
    np.save(captions / "valid.feat.npy", np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(InputError, match=r"valid.feat.npy has 5-d features but .*train.feat.npy has 6-d features"):
        make_task(captions).load_dataset("valid")
    # as many feature rows as image ids, one image id per caption
    np.save(captions / "valid.feat.npy", np.zeros((3, 6), dtype=np.float32))
    with pytest.raises(InputError, match=r"valid.feat.npy has 3 rows but .*valid.feat.ids lists 2 image ids"):
        load_features(captions, "valid")
    np.save(captions / "valid.feat.npy", np.zeros((2, 6), dtype=np.float32))
    (captions / "valid.img").write_text("v0\nv1\n")
    with pytest.raises(InputError, match=r"valid.img has 2 lines but split 'valid' has 4 captions"):
        make_task(captions).load_dataset("valid")


def test_captioning_directory_without_dictionary_features_or_binarized_split(captions):
    (captions / "test.bin").unlink()
    with pytest.raises(InputError, match=r"test.bin/.idx missing: binarize test.txt"):
        make_task(captions).load_dataset("test")
    for split in ("train", "valid", "test"):
        (captions / f"{split}.feat.npy").unlink()
    with pytest.raises(InputError, match=r"no S.feat.npy image-feature file in .*: every split S needs S.feat.npy"):
        make_task(captions)
    (captions / "dict.txt").unlink()
    with pytest.raises(InputError, match=r"dict.txt is missing: binarize the captions first"):
        make_task(captions)


def test_preprocess_captions_with_non_utf8_bytes(captions, tmp_path, run_cli):
    """``preprocess/captions.sh`` (``python -m fairseq_tpr.corpora.captions``): file, line and byte."""
    txt = captions / "valid.txt"
    lines = txt.read_bytes().split(b"\n")
    lines[2] = b"a red " + BAD
    txt.write_bytes(b"\n".join(lines))
    offset = len(lines[0]) + len(lines[1]) + 2 + len(b"a red caf")
    proc = run_cli("python", "-m", "fairseq_tpr.corpora.captions", captions, tmp_path / "bin", cwd=REPO)
    assert error_line(proc) == (f"error: {txt}: line 3, byte column 10 (byte {offset} of the file): not UTF-8 "
                                f"(bytes e9); convert the file first, e.g. iconv -f <encoding> -t utf-8")
    assert not (tmp_path / "bin").exists()  # checked before fairseq-preprocess runs
    (captions / "valid.feat.ids").write_bytes(b"v0\n" + BAD + b"\n")
    with pytest.raises(InputError, match=r"valid.feat.ids: line 2, byte column 4 \(byte 6 of the file\): not UTF-8"):
        check_raw_split(captions, "valid")


def test_karpathy_json_that_is_not_utf8_or_not_json(tmp_path):
    np.save(tmp_path / "f.npy", np.zeros((1, 4), dtype=np.float32))
    (tmp_path / "f.ids").write_text("1\n")
    (tmp_path / "k.json").write_bytes(b'{"images": [\n{"x": "' + BAD + b'"}]}')
    with pytest.raises(InputError, match=r"k.json: line 2, byte column 11 \(byte 23 of the file\): not UTF-8"):
        from_karpathy(tmp_path / "k.json", tmp_path / "f.npy", tmp_path / "f.ids", tmp_path / "raw")
    (tmp_path / "k.json").write_text("[1, 2")
    with pytest.raises(InputError, match=r"k.json: not JSON"):
        from_karpathy(tmp_path / "k.json", tmp_path / "f.npy", tmp_path / "f.ids", tmp_path / "raw")


def test_raw_reader_names_line_and_byte(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(InputError, match=r"a.txt: line 2, byte column 1 \(byte 3 of the file\): not UTF-8 "
                                         r"\(bytes ff\)"):
        raw_read_lines(tmp_path / "a.txt")


# ----------------------------------------------------------------------------------- extractive
UNITS = ["Officials said more details would follow.", "The quake struck the coast at dawn.",
         "The weather was mild.", "Thousands of homes lost power after the quake.", "A museum opened."]
REF = "A quake struck the coast at dawn and thousands of homes lost power."


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


def prep_args(tmp_path, *splits):
    return ["--destdir", str(tmp_path / "data"), "--encoder", "hash", "--hash-dim", "8", "--no-progress",
            *[a for s in splits for a in (f"--{s}pref", str(tmp_path / s))]]


@pytest.fixture(scope="module")
def extractive(tmp_path_factory):
    """A tiny extractive data directory (3-unit, 5-unit and 1-unit documents) and a checkpoint
    trained for one update on it (in this process)."""
    from _inprocess import train

    root = tmp_path_factory.mktemp("extractive_bad")
    docs = [{"units": UNITS[:3], "summary": REF}, {"units": UNITS, "summary": REF}, {"units": UNITS[:1], "summary": REF}]
    for split in ("train", "valid", "test"):
        write_jsonl(root / f"{split}.jsonl", docs)
    assert prep.main(prep_args(root, "train", "valid", "test") + ["--right-branching-trees"]) == 0
    train([str(root / "data"), "--user-dir", str(USER_DIR), "--task", "extractive_summarization", "--max-units",
           "8", "--arch", "discourse_synthesizer_tiny", "--attention", "ctree", "--criterion", "extractive_bce",
           "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "64", "--max-update", "1", "--cpu",
           "--num-workers", "0", "--required-batch-size-multiple", "1", "--save-dir", str(root / "ckpt"),
           "--no-epoch-checkpoints", "--no-progress-bar"])
    return root / "data", root / "ckpt" / "checkpoint_last.pt"


def copy_of(data, tmp_path):
    shutil.copytree(data, tmp_path / "data")
    return tmp_path / "data"


def set_node(data, split, row, values):
    tree = np.load(data / f"{split}.tree.npy")
    tree[row] = values
    np.save(data / f"{split}.tree.npy", tree)


def test_fairseq_tpr_extract_without_the_tree_file(extractive, tmp_path, run_cli):
    data = copy_of(extractive[0], tmp_path)
    (data / "test.tree.npy").unlink()
    proc = run_cli("fairseq-tpr-extract", "--data", data, "--path", extractive[1], "--split", "test",
                   "--out", tmp_path / "out.txt", timeout=300)
    assert error_line(proc) == (
        f"error: {data}: split 'test' lacks test.tree.npy: rebuild it with preprocess/extractive.py --destdir "
        f"{data} --testpref PREFIX (trees come from PREFIX.tree; a missing tree file is never replaced by a "
        f"default tree here)")
    assert not (tmp_path / "out.txt").exists()


def test_fairseq_train_with_a_corrupt_inner_node(extractive, tmp_path, run_cli):
    """Checked at the root only, the tree of the first valid document (3 units: rows (0, 3, 0),
    (0, 1, 1), (1, 3, 2), (1, 2, 1), (2, 3, 2)) with a node (2, 9) used to train silently."""
    data = copy_of(extractive[0], tmp_path)
    set_node(data, "valid", 1, (2, 9, 1))
    proc = run_cli("fairseq-train", data, "--user-dir", USER_DIR, "--task", "extractive_summarization",
                   "--max-units", "8", "--arch", "discourse_synthesizer_tiny", "--attention", "ctree",
                   "--criterion", "extractive_bce", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "64",
                   "--max-update", "1", "--cpu", "--num-workers", "0", "--save-dir", tmp_path / "ckpt",
                   "--no-progress-bar", timeout=300)
    assert error_line(proc, status=1) == (
        f"error: {data}/valid.tree.npy: document 1 (3 units), node 2 of 5 (start 2, end 9, code 1): the span "
        f"(2, 9) lies outside the document's units 0..2 (0-based start, exclusive end) (1 such document among "
        f"documents 1..3): rebuild it with preprocess/extractive.py --destdir {data} --validpref PREFIX")


@pytest.mark.parametrize("row,values,problem", [
    (2, (-1, 3, 2), r"node 3 of 5 \(start -1, end 3, code 2\): the span \(-1, 3\) lies outside the document's units 0..2"),
    (2, (1, 3, 7), r"node 3 of 5 \(start 1, end 3, code 7\): unknown nuclearity code 7"),
    (0, (0, 3, 2), r"node 1 of 5 \(start 0, end 3, code 2\): the root has nuclearity code 2, not 0"),
    (3, (1, 3, 1), r"node 4 of 5 \(start 1, end 3, code 1\): it repeats the span of its parent, node 3"),
    (4, (0, 1, 2), r"node 5 of 5 \(start 0, end 1, code 2\): it comes after node 4 \(1, 2\), which it precedes"),
    (3, (1, 2, 2), r"node 3 of 5 \(start 1, end 3, code 2\): none of its children is a nucleus"),
])
def test_every_node_is_validated_when_the_split_loads(extractive, tmp_path, row, values, problem):
    data = copy_of(extractive[0], tmp_path)
    set_node(data, "train", row, values)
    with pytest.raises(InputError, match=rf"train.tree.npy: document 1 \(3 units\), {problem}.*: rebuild it with "
                                         rf"preprocess/extractive.py --destdir .* --trainpref PREFIX"):
        load_split(data, "train")


def test_children_must_nest_inside_their_parent():
    # 4 units: root (0, 4) -> (0, 2) [(0, 1), (1, 2)], (2, 4) [(2, 3), (3, 4)]; (1, 2) -> (1, 3) crosses (0, 2)
    tree = np.array([(0, 4, 0), (0, 2, 1), (0, 1, 1), (1, 3, 2), (2, 4, 2), (2, 3, 2), (3, 4, 1)])
    index = np.array([(0, 4, 0, 7)])
    with pytest.raises(InputError, match=r"node 4 of 7 \(start 1, end 3, code 2\): it is not inside its parent, "
                                         r"node 2 \(0, 2\): children must nest inside their parent"):
        check_trees(tree, index)
    tree[3] = (1, 2, 2)
    check_trees(tree, index)
    tree[6] = (3, 4, 2)  # (2, 4) without a nucleus child
    with pytest.raises(InputError, match=r"node 5 of 7 .*: none of its children is a nucleus"):
        check_trees(tree, index)


@pytest.mark.parametrize("tree,problem", [
    ([(0, 3, 0), (0, 1, 1), (1, 3, 2)], r"node 3 of 3 \(start 1, end 3, code 2\): it has no children but spans 2 units"),
    ([(0, 3, 0), (0, 1, 1), (1, 3, 2), (1, 3, 1), (1, 2, 1), (2, 3, 2)],
     r"node 4 of 6 \(start 1, end 3, code 1\): it repeats the span of its parent, node 3"),
    ([(0, 3, 0), (0, 1, 1), (2, 3, 2)], r"node 1 of 3 \(start 0, end 3, code 0\): its children cover 2 of its 3 units"),
    ([(0, 3, 0), (0, 0, 1), (0, 3, 2)], r"node 2 of 3 \(start 0, end 0, code 1\): the span \(0, 0\) is empty"),
])
def test_leaves_gaps_and_repeated_spans(tree, problem):
    with pytest.raises(InputError, match=r"tree.npy: document 1 \(3 units\), " + problem):
        check_trees(np.array(tree), np.array([(0, 3, 0, len(tree))]))


def test_large_split_is_checked_in_chunks_with_the_same_answer():
    one = np.array([(0, 3, 0), (0, 1, 1), (1, 3, 2), (1, 2, 1), (2, 3, 2)])
    n_docs = 2000
    tree = np.tile(one, (n_docs, 1))
    index = np.stack([np.arange(n_docs) * 3, np.full(n_docs, 3), np.arange(n_docs) * 5, np.full(n_docs, 5)], 1)
    check_trees(tree, index, chunk_nodes=7)
    tree[5 * 1500 + 2] = (1, 3, 0)
    for chunk in (1, 7, 1 << 21):
        with pytest.raises(InputError, match=r"document 1501 \(3 units\), node 3 of 5 .*unknown nuclearity code 0"):
            check_trees(tree, index, chunk_nodes=chunk)


def test_split_files_that_do_not_fit(extractive, tmp_path):
    data = copy_of(extractive[0], tmp_path)
    (data / "train.index.npy").write_bytes(b"garbage")
    with pytest.raises(InputError, match=r"train.index.npy is not a readable NumPy .npy array .*--trainpref"):
        load_split(data, "train")
    np.save(data / "train.index.npy", np.array([(0, 3, 0, 5), (3, 5, 6, 9), (8, 1, 14, 1)]))
    with pytest.raises(InputError, match=r"train.index.npy does not describe train.units.npy \(9 units\)"):
        load_split(data, "train")
    shutil.copy(extractive[0] / "train.index.npy", data / "train.index.npy")
    parents = np.load(data / "train.parents.npy")
    parents[4] = 7
    np.save(data / "train.parents.npy", parents)
    with pytest.raises(InputError, match=r"train.parents.npy: document 2, unit 2 has dependency parent 7, not a unit "
                                         r"of its 5-unit document"):
        load_split(data, "train")
    (data / "meta.json").write_text("{")
    with pytest.raises(InputError, match=r"meta.json is not JSON"):
        read_meta(data)
    (data / "meta.json").unlink()
    with pytest.raises(InputError, match=r"meta.json is missing: build the directory with preprocess/extractive.py"):
        read_meta(data)


def test_preprocess_refuses_a_split_with_some_trees_missing(tmp_path):
    """A document without a tree next to documents with one was silently given a right-branching tree."""
    tree3 = "(Root (Nucleus (leaf 1)) (Satellite (span 2 3) (Nucleus (leaf 2)) (Satellite (leaf 3))))"
    write_jsonl(tmp_path / "train.jsonl", [{"units": UNITS[:3], "summary": REF, "tree": tree3},
                                           {"units": UNITS[:3], "summary": REF}])
    with pytest.raises(InputError, match=r"train.jsonl line 2: no tree, but other documents of .*train have one "
                                         r"\(1 of 2 documents without\)"):
        prep.main(prep_args(tmp_path, "train"))
    write_jsonl(tmp_path / "train.jsonl", [{"units": UNITS[:3], "summary": REF}] * 2)
    (tmp_path / "train.tree").write_text(tree3 + "\n\n")
    with pytest.raises(InputError, match=r"train.jsonl line 2 \(tree .*train.tree line 2\): no tree"):
        prep.main(prep_args(tmp_path, "train"))
    (tmp_path / "train.tree").write_bytes(tree3.encode() + b"\n(Root " + BAD + b")\n")
    with pytest.raises(InputError, match=r"train.tree: line 2, byte column 10 \(byte \d+ of the file\): not UTF-8"):
        prep.main(prep_args(tmp_path, "train"))
    # a JSON tree may be an object in the JSONL line, not only a string
    (tmp_path / "train.tree").unlink()
    as_json = {"span": [1, 3], "nuclearity": "NS", "children": [
        {"span": [1, 1]}, {"span": [2, 3], "nuclearity": "NS", "children": [{"span": [2, 2]}, {"span": [3, 3]}]}]}
    write_jsonl(tmp_path / "train.jsonl", [{"units": UNITS[:3], "summary": REF, "tree": as_json}] * 2)
    assert prep.main(prep_args(tmp_path, "train")) == 0
    assert json.loads((tmp_path / "data/meta.json").read_text())["splits"]["train"]["tree_source"] == "rst"
    load_split(tmp_path / "data", "train")


# ----------------------------------------------------------------------------------- generate logs
@pytest.fixture
def bad_log(tmp_path):
    data_bin, gen = write_generate_dir(tmp_path, shuffle=False)  # in id order: T-0 is line 3
    log = gen / "generate-test1.txt"
    lines = log.read_bytes().split(b"\n")
    lines[2] = lines[2] + b" " + BAD  # T-0
    log.write_bytes(b"\n".join(lines))
    offset = len(lines[0]) + len(lines[1]) + 2 + len(lines[2]) - 1
    return data_bin, log, offset, len(lines[2])


def test_fairseq_tpr_math_eval_with_a_non_utf8_generate_log(bad_log, run_cli):
    data_bin, log, offset, column = bad_log
    proc = run_cli("fairseq-tpr-math-eval", data_bin, "--generate-dir", log.parent)
    assert proc.stderr.count("error:") == 1, proc.stderr[-3000:]
    assert error_line(proc) == (
        f"error: fairseq-generate log file {log}: line 3, byte column {column} (byte {offset} of the file): not "
        f"UTF-8 (bytes e9); convert the file first, e.g. iconv -f <encoding> -t utf-8")
    assert not (log.parent / "math_eval.md").exists()


def test_fairseq_tpr_score_with_a_non_utf8_generate_log(bad_log, run_cli):
    _, log, offset, column = bad_log
    proc = run_cli("fairseq-tpr-score", "--generate-log", log, "--metrics", "bleu")
    assert proc.stderr.count("error:") == 1, proc.stderr[-3000:]
    assert error_line(proc) == (
        f"error: fairseq-generate log file {log}: line 3, byte column {column} (byte {offset} "
        f"of the file): not UTF-8 (bytes e9); convert the file first, e.g. iconv -f <encoding> -t utf-8")
