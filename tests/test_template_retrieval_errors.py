"""Template retrieval on degenerate inputs (``fairseq-tpr-retrieve-templates``): no usable training
summary at all, a train query whose only usable summary is its own (``--random-templates`` used to
loop forever there), empty query lines (``--on-empty-query``), ``--top-k`` above the index size.
Each bad input gives one ``error:`` line naming the file and line, exit 2, no traceback."""
import re

import numpy as np
import pytest

from fairseq_tpr.cli.retrieve_templates import main
from fairseq_tpr.corpora.template_retrieval import _random_candidate
from fairseq_tpr.errors import ConfigError, InputError


def _write(raw, **files):
    """``_write(raw, train_source=[...], ...)``: one line per item in ``raw/train.source`` etc."""
    raw.mkdir(exist_ok=True)
    for name, lines in files.items():
        (raw / name.replace("_", ".")).write_text("".join(line + "\n" for line in lines))
    return raw


def _ids(path):
    """``.template.ids`` rows as (chosen line, [candidate lines])."""
    rows = []
    for line in path.read_text().split("\n")[:-1]:
        chosen, cands = line.split("\t")
        rows.append((int(chosen), [int(c.split(":")[0]) for c in cands.split()]))
    return rows


def _the_error(proc):
    """The one ``error:`` line of a command that must fail cleanly (exit 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


# --- 1. a train query whose only usable summary is its own ---------------------------------------

@pytest.mark.parametrize("command", [["fairseq-tpr-retrieve-templates"],
                                     ["python", "-m", "fairseq_tpr.cli.retrieve_templates"]])
def test_random_templates_with_only_the_query_s_own_summary_fail_instead_of_hanging(tmp_path, run_cli, command):
    raw = _write(tmp_path / "raw", train_source=["alpha beta", "gamma delta"], train_target=["s0", ""],
                 valid_source=["alpha"], test_source=["gamma"])
    proc = run_cli(*command, raw, "--random-templates", "--no-progress", timeout=120)  # used to hang
    error = _the_error(proc)
    assert re.fullmatch(r"error: split 'train', line 1 of \S*train\.source: no template can be retrieved for this "
                        r"query: the only non-empty summary in \S*train\.target is this query's own \(never its "
                        r"template\); add training summaries, or leave train out of --splits", error), error
    assert not (raw / "train.template").exists() and not (raw / "valid.template").exists()


def test_bm25_with_only_the_query_s_own_summary_names_the_split_and_line(tmp_path):
    raw = _write(tmp_path / "raw", train_source=["alpha beta", "gamma delta", "eps zeta"],
                 train_target=["", "s1", ""])
    with pytest.raises(InputError, match=r"split 'train', line 2 of \S*train\.source: .*the only non-empty summary "
                                         r"in \S*train\.target is this query's own"):
        main([str(raw), "--splits", "train", "--no-progress"])
    # without the train split, every query has a template: line 2's summary
    _write(raw, valid_source=["alpha", "zeta"])
    assert main([str(raw), "--splits", "valid", "--no-progress"]) == 0
    assert (raw / "valid.template").read_text() == "s1\ns1\n"


def test_only_copies_of_the_query_have_summaries_unless_keep_duplicates(tmp_path):
    raw = _write(tmp_path / "raw", train_source=["a b", "A  b", "c d"], train_target=["s0", "s1", ""])
    with pytest.raises(InputError, match=r"line 1 of .*each of the 2 non-empty summaries in \S*train\.target is "
                                         r"this query's own or an exact copy's \(excluded unless --keep-duplicates\)"):
        main([str(raw), "--splits", "train", "--no-progress"])
    assert main([str(raw), "--splits", "train", "--keep-duplicates", "--no-progress"]) == 0
    assert [chosen for chosen, _ in _ids(raw / "train.template.ids")] == [1, 0, 0]
    # --random-templates never excluded copies, only the query itself: it works as before
    assert main([str(raw), "--splits", "train", "--random-templates", "--no-progress"]) == 0
    assert [chosen for chosen, _ in _ids(raw / "train.template.ids")][:2] == [1, 0]


def test_random_candidate_never_loops_and_never_returns_the_query():
    rng = np.random.default_rng(0)
    is_usable = np.array([True, False, False])
    usable = np.flatnonzero(is_usable)
    assert _random_candidate(rng, usable, is_usable, own=0) == []  # nothing else: no loop
    assert _random_candidate(rng, usable, is_usable, own=1) == [(0, 0.0)]
    assert _random_candidate(rng, usable, is_usable, own=None) == [(0, 0.0)]
    is_usable = np.array([True, True])
    draws = {_random_candidate(rng, np.flatnonzero(is_usable), is_usable, own=1)[0][0] for _ in range(50)}
    assert draws == {0}


# --- 2. no usable training summary at all ---------------------------------------------------------

@pytest.mark.parametrize("flags", [[], ["--random-templates"], ["--top-k", "3", "--rerank", "rouge1"]])
def test_no_non_empty_training_summary_is_a_clear_error_without_the_train_split(tmp_path, flags):
    raw = _write(tmp_path / "raw", train_source=["alpha beta", "gamma delta"], train_target=["", "  "],
                 valid_source=["alpha"])
    with pytest.raises(InputError, match=r"^no training article has a non-empty summary in \S*raw/train\.target: "
                                         r".*nothing to retrieve \(--splits valid\)$"):  # was a TypeError
        main([str(raw), "--splits", "valid", "--no-progress", *flags])
    assert not (raw / "valid.template").exists()


def test_empty_copy_from_summaries_name_both_files(tmp_path):
    raw = _write(tmp_path / "raw", train_source=["alpha beta", "gamma delta"], train_target=["s0", ""],
                 valid_source=["alpha"])
    _write(tmp_path / "bpe", train_target=["", "t1"])
    with pytest.raises(InputError, match=r"no training article has a non-empty summary in both \S*raw/train\.target "
                                         r"and \S*bpe/train\.target"):
        main([str(raw), "--splits", "valid", "--copy-from", str(tmp_path / "bpe"), "--no-progress"])


def test_no_usable_summary_end_to_end(tmp_path, run_cli):
    raw = _write(tmp_path / "raw", train_source=["alpha beta", "gamma delta"], train_target=["", ""],
                 valid_source=["alpha"])
    error = _the_error(run_cli("fairseq-tpr-retrieve-templates", raw, "--splits", "valid", "--no-progress"))
    assert error.startswith("error: no training article has a non-empty summary in "), error


# --- 3. empty query lines -------------------------------------------------------------------------

TRAIN = dict(train_source=["cat mat sat", "dog bark night", "rain storm flood", "ship port dock"],
             train_target=["s0", "s1", "s2", "s3"])


def test_an_empty_query_line_is_an_error_by_default(tmp_path, run_cli):
    raw = _write(tmp_path / "raw", **TRAIN, valid_source=["cat", "", "dog", "  "], test_source=["ship"])
    proc = run_cli("fairseq-tpr-retrieve-templates", raw, "--no-progress")
    error = _the_error(proc)
    assert re.fullmatch(r"error: \S*raw/valid\.source line 2: empty source line \(2 in this file\): there is nothing "
                        r"to retrieve a template with; remove the empty lines \(and their targets\), or pass "
                        r"--on-empty-query skip \(empty template, id -1\) or fallback \(a template anyway\)",
                        error), error
    assert not list(raw.glob("*.template*"))  # checked before any output


def test_skip_keeps_the_outputs_aligned_with_an_empty_template_and_id_minus_one(tmp_path, capsys):
    raw = _write(tmp_path / "raw", **TRAIN, valid_source=["cat", "", "dog", "  "])
    assert main([str(raw), "--splits", "valid", "--on-empty-query", "skip", "--no-progress"]) == 0
    assert (raw / "valid.template").read_text() == "s0\n\ns1\n\n"
    assert (raw / "valid.template.ids").read_text().split("\n")[1] == "-1\t"
    assert [chosen for chosen, _ in _ids(raw / "valid.template.ids")] == [0, -1, 1, -1]
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and re.fullmatch(
        r"warning: \S*raw/valid\.source: 2 empty source line\(s\) \(first: line 2\); --on-empty-query skip gave them "
        r"an empty template and id -1 \(drop those lines before preprocess/templates\.sh\)", warnings[0]), warnings


def test_fallback_is_the_old_behaviour_with_the_count_printed(tmp_path, capsys):
    raw = _write(tmp_path / "raw", **TRAIN, valid_source=["cat", "", "dog", "  "])
    assert main([str(raw), "--splits", "valid", "--on-empty-query", "fallback", "--no-progress"]) == 0
    assert (raw / "valid.template").read_text() == "s0\ns0\ns1\ns0\n"  # empty: the first usable summary
    err = capsys.readouterr().err
    assert "warning: " in err and "2 empty source line(s) (first: line 2); --on-empty-query fallback" in err


def test_skip_in_the_train_split_and_with_random_templates(tmp_path):
    raw = _write(tmp_path / "raw", train_source=["cat mat", "", "dog bark"], train_target=["s0", "s1", ""])
    # line 2 is empty and skipped; its summary is still a template for the others
    assert main([str(raw), "--splits", "train", "--on-empty-query", "skip", "--no-progress"]) == 0
    assert (raw / "train.template").read_text() == "s1\n\ns0\n"
    assert main([str(raw), "--splits", "train", "--on-empty-query", "skip", "--random-templates",
                 "--no-progress"]) == 0
    chosen = [chosen for chosen, _ in _ids(raw / "train.template.ids")]
    assert chosen[:2] == [1, -1] and chosen[2] in (0, 1)
    # with fallback line 2 needs a template too, and the only usable one besides its own is line 1's
    assert main([str(raw), "--splits", "train", "--on-empty-query", "fallback", "--no-progress"]) == 0
    assert (raw / "train.template").read_text() == "s1\ns0\ns0\n"


# --- 4. --top-k above the index size --------------------------------------------------------------

def test_top_k_above_the_index_size_warns_with_the_numbers_and_keeps_what_exists(tmp_path, capsys):
    raw = _write(tmp_path / "raw", **TRAIN, valid_source=["cat", "dog"], test_source=["ship"])
    assert main([str(raw), "--top-k", "10", "--no-progress"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --top-k 10 but the index has only 4 training articles: "
                        "keeping at most 4 candidates per query",
                        "warning: --top-k 10: 4 of 4 train queries kept fewer than 4 candidates (as few as 3) from 4 "
                        "usable training summaries: a training query's own article, its exact copies (unless "
                        "--keep-duplicates) and its --exclude-same group are never its candidates"]
    assert [len(c) for _, c in _ids(raw / "valid.template.ids")] == [4, 4]
    assert [len(c) for _, c in _ids(raw / "train.template.ids")] == [3, 3, 3, 3]  # never the query itself
    _write(raw, train_target=["s0", "", "s2", "s3"])
    assert main([str(raw), "--top-k", "4", "--splits", "valid", "--no-progress"]) == 0
    assert ("warning: --top-k 4 but the index has only 4 training articles (3 with a non-empty summary): "
            "keeping at most 3 candidates per query") in capsys.readouterr().err
    assert main([str(raw), "--top-k", "3", "--splits", "valid", "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_fewer_candidates_than_top_k_for_training_queries_warn_with_the_counts(tmp_path, capsys):
    # 10 training articles, 4 of them copies of one another: with --top-k 10 a training query keeps the
    # others minus its own copies; the index holds 10, so only the per-split warning can say so
    src = ["cat mat"] * 4 + [f"word{i} other{i}" for i in range(6)]
    raw = _write(tmp_path / "raw", train_source=src, train_target=[f"s{i}" for i in range(10)])
    assert main([str(raw), "--splits", "train", "--top-k", "10", "--no-progress"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --top-k 10: 10 of 10 train queries kept fewer than 10 candidates (as few as 6) "
                        "from 10 usable training summaries: a training query's own article, its exact copies "
                        "(unless --keep-duplicates) and its --exclude-same group are never its candidates"]
    assert sorted({len(c) for _, c in _ids(raw / "train.template.ids")}) == [6, 9]


def test_exclude_same_errors_name_the_file_and_the_line(tmp_path):
    raw = _write(tmp_path / "raw", train_source=["a b", "c d", "e f"], train_target=["s0", "s1", ""],
                 train_package=["p", "p", "q"])
    # line 1's only other usable summary (line 2) is of its own package
    with pytest.raises(InputError, match=r"line 1 of .*each of the 2 non-empty summaries in \S*train\.target is "
                                         r"this query's own or an exact copy's \(excluded unless --keep-duplicates\) "
                                         r"or its group's in train\.package \(--exclude-same\)"):
        main([str(raw), "--splits", "train", "--exclude-same", "package", "--no-progress"])
    _write(raw, train_package=["p", "q"])
    with pytest.raises(InputError, match=r"\S*train\.package has 2 lines but \S*train\.source has 3"):
        main([str(raw), "--splits", "train", "--exclude-same", "package", "--no-progress"])
    with pytest.raises(InputError, match=r"--exclude-same's group labels \S*train\.nothing is missing"):
        main([str(raw), "--splits", "train", "--exclude-same", "nothing", "--no-progress"])
    with pytest.raises(ConfigError, match="--exclude-same applies to retrieved templates"):
        main([str(raw), "--random-templates", "--exclude-same", "package", "--no-progress"])
