"""fairseq_tpr.corpora.sample_documents: a seeded per-split sample of SPLIT.jsonl documents (the
sizing step of recipes/extractive/manpages.sh): sizes, corpus order, determinism per seed and
split, the sentence cut, the record, and a rerun that keeps or refuses an existing sample."""
import json

import pytest

from fairseq_tpr.corpora import sample_documents
from fairseq_tpr.errors import ConfigError, InputError


def write_corpus(root, sizes=(("train", 30), ("valid", 10), ("test", 8))):
    root.mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        with open(root / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for i in range(n):
                units = [f"{split} document {i} sentence {j}." for j in range(3 + i % 5)]
                f.write(json.dumps({"units": units, "summary": f"{split} {i}", "page": f"p{i}(1)"}) + "\n")
    return root


def read(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_sample_sizes_order_and_record(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "raw"
    assert sample_documents.main([str(corpus), str(out), "--train", "12", "--valid", "4", "--max-sentences", "4"]) == 0
    train, valid, test = (read(out / f"{s}.jsonl") for s in ("train", "valid", "test"))
    assert (len(train), len(valid), len(test)) == (12, 4, 8)  # test: all (the default)
    lines = [d["corpus_line"] for d in train]
    assert lines == sorted(lines) and len(set(lines)) == 12  # corpus order, no repeats
    original = read(corpus / "train.jsonl")
    for d in train:
        src = original[d["corpus_line"] - 1]
        assert d["units"] == src["units"][:4] and d["summary"] == src["summary"] and d["page"] == src["page"]
    assert [d["corpus_line"] for d in test] == list(range(1, 9))
    record = json.loads((out / "sample.json").read_text())
    assert record["options"]["train"] == 12 and record["options"]["test"] is None
    assert record["counts"]["train"]["documents"] == 12 and record["counts"]["train"]["of"] == 30
    assert record["counts"]["train"]["sentences"] == sum(len(d["units"]) for d in train)
    assert record["counts"]["test"]["cut_to_max_sentences"] == sum(3 + i % 5 > 4 for i in range(8))


def test_same_seed_same_sample_other_seed_other_sample(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    picks = {}
    for name, seed, valid in (("a", 1, "4"), ("b", 1, "all"), ("c", 2, "4")):
        sample_documents.main([str(corpus), str(tmp_path / name), "--train", "10", "--valid", valid,
                               "--seed", str(seed)])
        picks[name] = [d["corpus_line"] for d in read(tmp_path / name / "train.jsonl")]
    assert picks["a"] == picks["b"]  # a split's sample does not depend on the other splits' sizes
    assert picks["a"] != picks["c"]
    assert [i + 1 for i in sample_documents.draw(30, 10, 1, "train")] == picks["a"]


def test_rerun_keeps_the_sample_or_refuses_other_options(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "raw"
    args = [str(corpus), str(out), "--train", "5"]
    assert sample_documents.main(args) == 0
    (out / "train.tree").mkdir()  # trees parsed for this sample
    before = (out / "train.jsonl").read_text()
    assert sample_documents.main(args) == 0
    assert "sample already drawn" in capsys.readouterr().err and (out / "train.jsonl").read_text() == before
    with pytest.raises(ConfigError, match=r"other options \(train 5 -> 6\)"):
        sample_documents.main([str(corpus), str(out), "--train", "6"])


def test_clear_errors(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    with pytest.raises(ConfigError, match=r"--train 31: .*train.jsonl has only 30 documents"):
        sample_documents.main([str(corpus), str(tmp_path / "x"), "--train", "31"])
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit):
        sample_documents.main([str(corpus), str(tmp_path / "x"), "--train", "0"])
    with pytest.raises(ConfigError, match="--max-sentences must be at least 1"):
        sample_documents.main([str(corpus), str(tmp_path / "x"), "--max-sentences", "0"])
    (corpus / "valid.jsonl").unlink()
    with pytest.raises(InputError, match="missing .*valid.jsonl"):
        sample_documents.main([str(corpus), str(tmp_path / "x")])
    write_corpus(corpus)
    (corpus / "test.jsonl").write_text('{"units": [], "summary": "s"}\n')
    with pytest.raises(InputError, match=r"test.jsonl line 1: expected an object with a non-empty \"units\" list"):
        sample_documents.main([str(corpus), str(tmp_path / "x")])
