"""The Mathematics Dataset pipeline: ``preprocess/math_dataset.sh`` (``fairseq_tpr/corpora/math_dataset.py``).

A fixture release in the official layout (three modules, a few lines per file, written by
:func:`write_release`) goes through the real script and ``fairseq-preprocess``; the counts in
counts.json, test_sets.json and the binarized subsets are checked against the fixture. Every
bad input named in the issue gets its message. ``test_generate_with_deepmind_generator`` runs
DeepMind's generator in its own venv (``$FAIRSEQ_TPR_MATHGEN_VENV`` or one cached by pytest,
created on the first run: ~40 s).
"""
import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import cli_env
from fairseq_tpr.corpora import math_dataset as md
from fairseq_tpr.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "preprocess" / "math_dataset.sh"

# examples per file of the fixture release
TRAIN_PER_FILE = {"arithmetic__add_or_sub": 4, "comparison__pair": 5, "numbers__place_value": 6}
INTERPOLATE = {"arithmetic__add_or_sub": 3, "comparison__pair": 3, "numbers__place_value": 4}
EXTRAPOLATE = {"arithmetic__add_or_sub_big": 2, "numbers__place_value_big": 3}
# characters that no training line has: "½" in one comparison__pair question (1), "€" twice in
# a question and once in the answer of arithmetic__add_or_sub_big (3)
UNK = {"interpolate": {"comparison__pair": 1}, "extrapolate": {"arithmetic__add_or_sub_big": 3}}
VALID_PER_MODULE = 2
LEAKED = ("What is the tens digit of 4321?", "2")


def _example(module, rng, big=False):
    """One (question, answer) pair of ``module`` from a fixed template (no new characters)."""
    if module.startswith("numbers__place_value"):
        n = rng.randint(10**6, 10**8) if big else rng.randint(10, 999)
        return f"What is the tens digit of {n}?", str(n // 10 % 10)
    if module == "comparison__pair":
        a, b = rng.randint(-20, 20), rng.randint(-20, 20)
        return f"Which is bigger: {a} or {b}?", str(max(a, b))
    a, b = (rng.randint(10**5, 10**7) for _ in "ab") if big else (rng.randint(-50, 50) for _ in "ab")
    return (f"What is {a} + {b}?", str(a + b)) if rng.random() < 0.5 else (f"What is {a} - {b}?", str(a - b))


def write_release(root, seed=0):
    """Write the fixture release to ``root`` (the layout of mathematics_dataset-v1.0) and return
    ``{split: {module: [(question, answer), ...]}}``."""
    rng = random.Random(seed)
    data = {split: {} for split in md.RELEASE_SPLITS}
    for split in md.TRAIN_SPLITS:
        for module, n in TRAIN_PER_FILE.items():
            data[split][module] = [_example(module, rng) for _ in range(n)]
    data["train-easy"]["numbers__place_value"][0] = ("What is the tens digit of 1234567890?", "9")  # every digit
    data["train-medium"]["numbers__place_value"][0] = LEAKED  # twice in training, once in interpolate
    data["train-hard"]["numbers__place_value"][0] = LEAKED
    for module, n in INTERPOLATE.items():
        data["interpolate"][module] = [_example(module, rng) for _ in range(n)]
    data["interpolate"]["comparison__pair"][1] = ("Which is bigger: 4 or ½?", "4")
    data["interpolate"]["numbers__place_value"][2] = LEAKED
    for module, n in EXTRAPOLATE.items():
        data["extrapolate"][module] = [_example(module, rng, big=True) for _ in range(n)]
    data["extrapolate"]["arithmetic__add_or_sub_big"][0] = ("What is 5€ + 7€?", "12€")
    for split, modules in data.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        for module, pairs in modules.items():
            (root / split / f"{module}.txt").write_text("".join(f"{q}\n{a}\n" for q, a in pairs), encoding="utf-8")
    return data


def run_script(*args, env_extra=None, timeout=300):
    """``bash preprocess/math_dataset.sh ARGS`` with this interpreter; the CompletedProcess."""
    env = cli_env()
    env["PYTHON"] = sys.executable
    env.update(env_extra or {})
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _ok(proc, what="math_dataset.sh"):
    assert proc.returncode == 0, f"{what} failed (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-5000:]}"
    return proc


def _error(proc):
    """The error message of a run that must fail cleanly: rc 2, ``error: ...``, no traceback."""
    assert proc.returncode == 2, f"expected rc 2, got {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: ") or "\nerror: " in proc.stderr, proc.stderr
    return proc.stderr


def _num_sentences(prefix):
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(Path(prefix).parent / "dict.q.txt"))
    return len(data_utils.load_indexed_dataset(str(prefix), dictionary))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The fixture release, preprocessed twice side by side: every module (``all``) and
    ``--modules numbers__place_value`` with the default validation size (``one``)."""
    root = tmp_path_factory.mktemp("math_dataset")
    release = root / "mathematics_dataset-v1.0"
    data = write_release(release)
    with ThreadPoolExecutor(2) as pool:
        full = pool.submit(run_script, "--release", release, "--out", root / "all", "--workers", 1,
                           "--valid-per-module", VALID_PER_MODULE, "--seed", 3)
        one = pool.submit(run_script, "--release", release, "--out", root / "one", "--workers", 1,
                          "--modules", "numbers__place_value")
        return {"root": root, "release": release, "data": data, "all": _ok(full.result()), "one": _ok(one.result())}


# ---------------------------------------------------------------------------------------------
# tokenization, module names, hold-out: pure functions


@pytest.mark.parametrize("text", ["What is 2 + 3?", " leading and  two spaces ", "x", "-0.5", "a\u00bdb"])
def test_tokenize_round_trips(text):
    line = md.tokenize(text)
    assert md.detokenize(line) == text
    assert line.split(" ") == [md.SPACE if c == " " else c for c in text]  # one token per character
    assert "  " not in line


def test_tokenize_example():
    assert md.tokenize("Is 3 > 2?") == "I s ▁ 3 ▁ > ▁ 2 ?"
    assert md.detokenize("1 <unk> 2") == "1<unk>2"


def test_module_lists_are_the_generators():
    assert len(md.TRAIN_MODULES) == 56 and len(set(md.TRAIN_MODULES)) == 56
    assert len(md.EXTRAPOLATE_MODULES) == 15
    # every extrapolate module belongs to exactly one training module
    owners = {e: md.extrapolate_owner(e, md.TRAIN_MODULES) for e in md.EXTRAPOLATE_MODULES}
    assert None not in owners.values(), owners
    assert owners["arithmetic__mul_big"] == "arithmetic__mul"
    assert owners["arithmetic__mul_div_multiple_longer"] == "arithmetic__mul_div_multiple"
    assert owners["measurement__conversion"] == "measurement__conversion"
    assert owners["probability__swr_p_level_set_more_samples"] == "probability__swr_p_level_set"
    assert md.extrapolate_owner("arithmetic__add_or_sub_in_base", ["arithmetic__add_or_sub"]) == "arithmetic__add_or_sub"
    assert md.extrapolate_owner("numbers__gcd", ["numbers__lcm"]) is None


def test_generator_jobs_take_exact_names():
    jobs = md.generator_jobs(["numbers__place_value", "arithmetic__mul", "comparison__sort_more"])
    assert jobs["numbers__place_value"] == [(s, "numbers__place_value") for s in md.TRAIN_SPLITS + ("interpolate",)] + [
        ("extrapolate", "numbers__place_value_big")]
    assert ("extrapolate", "arithmetic__mul_big") in jobs["arithmetic__mul"]
    assert ("extrapolate", "arithmetic__mul_div_multiple_longer") not in jobs["arithmetic__mul"]
    assert jobs["comparison__sort_more"] == [("extrapolate", "comparison__sort_more")]


def test_select_files(tmp_path):
    write_release(tmp_path)
    layout = md.scan_release(tmp_path)
    chosen = md.select_files(layout, ["numbers__place_value"])
    assert {s: sorted(m) for s, m in chosen.items()} == {
        **{s: ["numbers__place_value"] for s in md.TRAIN_SPLITS + ("interpolate",)},
        "extrapolate": ["numbers__place_value_big"],
    }
    assert md.select_files(layout, None) == layout
    only_extra = md.select_files(layout, ["arithmetic__add_or_sub_big"])
    assert {s: list(m) for s, m in only_extra.items() if m} == {"extrapolate": ["arithmetic__add_or_sub_big"]}
    with pytest.raises(ConfigError, match=r"numbers__place_valu \(did you mean numbers__place_value"):
        md.select_files(layout, ["numbers__place_valu"])


def test_valid_count():
    assert [md.valid_count(n, None) for n in (0, 1, 50, 250, 10**6)] == [0, 1, 1, 2, 1000]
    assert md.valid_count(30, 7) == 7


def test_hold_out_is_deterministic_in_the_seed(tmp_path):
    write_release(tmp_path / "rel")
    files = md.select_files(md.scan_release(tmp_path / "rel"))
    outs = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        md.write_tokenized(files, tmp_path / name, valid_per_module=3, seed=seed)
        outs[name] = (tmp_path / name / "valid.q").read_text()
    assert outs["a"] == outs["b"]
    assert outs["a"] != outs["c"]


# ---------------------------------------------------------------------------------------------
# the script on the fixture release


def test_counts_json(built):
    counts = json.loads((built["root"] / "all" / "data-bin" / "counts.json").read_text())
    ex = counts["examples"]
    for split in md.TRAIN_SPLITS:
        assert ex[split] == TRAIN_PER_FILE
    assert ex["valid"] == {m: VALID_PER_MODULE for m in TRAIN_PER_FILE}
    assert ex["train"] == {m: 3 * n - VALID_PER_MODULE for m, n in TRAIN_PER_FILE.items()}
    assert ex["interpolate"] == INTERPOLATE
    assert ex["extrapolate"] == EXTRAPOLATE
    expected_unk = {split: {m: UNK.get(split, {}).get(m, 0) for m in ex[split]} for split in md.TEST_SPLITS}
    assert {s: counts["unk"][s] for s in md.TEST_SPLITS} == expected_unk
    assert counts["unk"]["valid"] == {m: 0 for m in TRAIN_PER_FILE}
    assert counts["seed"] == 3 and counts["source"]["release"] == str(built["release"].resolve())


def test_test_sets_json_and_binarized_sizes(built):
    dest = built["root"] / "all" / "data-bin"
    test_sets = json.loads((dest / "test_sets.json").read_text())
    expected = [("interpolate", m, n) for m, n in sorted(INTERPOLATE.items())]
    expected += [("extrapolate", m, n) for m, n in sorted(EXTRAPOLATE.items())]
    assert list(test_sets) == ["test"] + [f"test{k}" for k in range(1, len(expected))]
    assert [(v["split"], v["module"], v["n"]) for v in test_sets.values()] == expected
    for subset, info in test_sets.items():
        for lang in md.LANGS:
            assert _num_sentences(dest / f"{subset}.q-a.{lang}") == info["n"]
    for split, n in (("train", sum(3 * n - VALID_PER_MODULE for n in TRAIN_PER_FILE.values())),
                     ("valid", VALID_PER_MODULE * len(TRAIN_PER_FILE))):
        for lang in md.LANGS:
            assert _num_sentences(dest / f"{split}.q-a.{lang}") == n
    # one joined dictionary, from the training data: it has ▁ and not the test-only characters
    dict_q, dict_a = (dest / "dict.q.txt").read_text(), (dest / "dict.a.txt").read_text()
    assert dict_q == dict_a
    symbols = {line.split(" ")[0] for line in dict_q.splitlines()}
    assert md.SPACE in symbols and "W" in symbols
    assert not {"½", "€"} & symbols
    log = (dest / "preprocess.log").read_text()
    assert ".partial" not in log and "replaced (by <unk>)" in log


def test_tokenized_text_round_trips_to_the_release(built):
    tok, data = built["root"] / "all" / "tok", built["data"]
    for split in md.TEST_SPLITS:
        for module, pairs in data[split].items():
            questions = (tok / f"{split}.{module}.q").read_text(encoding="utf-8").splitlines()
            answers = (tok / f"{split}.{module}.a").read_text(encoding="utf-8").splitlines()
            assert [(md.detokenize(q), md.detokenize(a)) for q, a in zip(questions, answers)] == pairs
    train_and_valid = sorted(p for s in md.TRAIN_SPLITS for pairs in data[s].values() for p in pairs)
    got = []
    for split in ("train", "valid"):
        q = (tok / f"{split}.q").read_text(encoding="utf-8").splitlines()
        a = (tok / f"{split}.a").read_text(encoding="utf-8").splitlines()
        got += [(md.detokenize(x), md.detokenize(y)) for x, y in zip(q, a)]
    assert sorted(got) == train_and_valid


def test_prints_counts_table_and_unk_warning(built):
    out, err = built["all"].stdout, built["all"].stderr
    for split in md.TRAIN_SPLITS + ("train", "valid") + md.TEST_SPLITS:
        assert split in out
    assert "numbers__place_value_big" in out and "(all 3 modules)" in out
    assert "warning: characters the training data lacks become <unk> (4 in all" in err
    assert "interpolate/comparison__pair: 1" in err and "extrapolate/arithmetic__add_or_sub_big: 3" in err
    assert not list((built["root"] / "all").glob("*.partial"))


def test_module_selection_and_default_valid_size(built):
    dest = built["root"] / "one" / "data-bin"
    counts = json.loads((dest / "counts.json").read_text())["examples"]
    assert counts["valid"] == {"numbers__place_value": 1}  # 1% of 18, at least 1
    assert counts["train"] == {"numbers__place_value": 17}
    assert counts["interpolate"] == {"numbers__place_value": 4}
    assert counts["extrapolate"] == {"numbers__place_value_big": 3}
    assert list(json.loads((dest / "test_sets.json").read_text())) == ["test", "test1"]


def test_test_examples_seen_in_training(built):
    tok = built["root"] / "one" / "tok"
    train = set(md.read_tokenized(tok / "train"))
    assert LEAKED in train  # at most one of its two copies is held out
    expected = {"interpolate": {"numbers__place_value": sum(p in train for p in md.read_tokenized(tok / "interpolate.numbers__place_value"))},
                "extrapolate": {"numbers__place_value_big": 0}}
    assert expected["interpolate"]["numbers__place_value"] >= 1
    counts = json.loads((built["root"] / "one" / "data-bin" / "counts.json").read_text())
    assert counts["test_in_train"] == expected


# ---------------------------------------------------------------------------------------------
# bad input: a clear message, rc 1, no traceback, no output that looks complete


def _release_copy(built, tmp_path):
    release = tmp_path / "release"
    write_release(release)
    return release


def _no_outputs(out):
    assert not (out / "tok").exists() and not (out / "data-bin").exists()
    assert not list(out.glob("*.partial")) if out.exists() else True


def test_odd_number_of_lines(built, tmp_path):
    release = _release_copy(built, tmp_path)
    path = release / "train-medium" / "comparison__pair.txt"
    path.write_text(path.read_text() + "Which is bigger: 1 or 2?\n")
    err = _error(run_script("--release", release, "--out", tmp_path / "out"))
    assert f"{path} has 11 lines, an odd number: the last question has no answer" in err
    _no_outputs(tmp_path / "out")


@pytest.mark.parametrize("where,text,line", [("question", "\n1\n", 1), ("answer", "What is 1 + 1?\n\n", 2),
                                             ("answer", "What is 1 + 1?\n   \n", 2)])
def test_empty_question_or_answer(built, tmp_path, where, text, line):
    release = _release_copy(built, tmp_path)
    path = release / "interpolate" / "arithmetic__add_or_sub.txt"
    path.write_text(text + path.read_text())
    err = _error(run_script("--release", release, "--out", tmp_path / "out"))
    assert f"{path} line {line} is an empty {where} line" in err
    _no_outputs(tmp_path / "out")


def test_tab_in_a_line(built, tmp_path):
    release = _release_copy(built, tmp_path)
    path = release / "train-hard" / "numbers__place_value.txt"
    path.write_text("What is\tthis?\n1\n" + path.read_text())
    err = _error(run_script("--release", release, "--out", tmp_path / "out"))
    assert f"{path} line 1: the question contains U+0009" in err


def test_unknown_module_in_release(built, tmp_path):
    err = _error(run_script("--release", built["release"], "--out", tmp_path / "out",
                            "--modules", "numbers__place_value,comparison__pairs"))
    assert "unknown module name:\n  comparison__pairs (did you mean comparison__pair?)" in err
    assert f"See the module files in {built['release']}/*/" in err


def test_unknown_module_for_generator(tmp_path):
    # checked before the generator venv is looked at: the venv path is never touched
    venv = tmp_path / "never-created"
    err = _error(run_script("--generate", "--modules", "arithmetic__add_or_sub_bigg,numbers__primes",
                            "--out", tmp_path / "out", "--mathgen-venv", venv))
    assert "arithmetic__add_or_sub_bigg (did you mean arithmetic__add_or_sub_big" in err
    assert "numbers__primes" in err and "preprocess/math_dataset.sh --list-modules" in err
    assert not venv.exists()


def test_list_modules():
    out = _ok(run_script("--list-modules")).stdout
    assert "numbers__place_value" in out and "arithmetic__add_or_sub_big" in out


def test_missing_release_directory(tmp_path):
    err = _error(run_script("--release", tmp_path / "nowhere", "--out", tmp_path / "out"))
    assert f"release directory {tmp_path / 'nowhere'} does not exist" in err and "--generate" in err


def test_missing_split_directory(built, tmp_path):
    release = _release_copy(built, tmp_path)
    for split in ("extrapolate", "train-hard"):
        for f in (release / split).iterdir():
            f.unlink()
        (release / split).rmdir()
    err = _error(run_script("--release", release, "--out", tmp_path / "out"))
    assert f"{release} lacks the split directories train-hard, extrapolate" in err


def test_generator_venv_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    err = _error(run_script("--generate", "--modules", "numbers__place_value", "--out", tmp_path / "out",
                            "--mathgen-venv", blocker / "venv"))
    assert f"could not create the venv {blocker / 'venv'}" in err and "--release" in err
    assert not (tmp_path / "out" / "raw").exists() and not (tmp_path / "out" / "raw.partial").exists()


def test_generator_venv_that_is_not_one(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "something").write_text("x")
    err = _error(run_script("--generate", "--out", tmp_path / "out", "--mathgen-venv", venv))
    assert f"{venv} exists but its Python cannot import mathematics_dataset" in err
    assert (venv / "something").exists()  # a directory we did not make is never deleted


def test_existing_output_needs_force(built, tmp_path):
    out = tmp_path / "out"
    (out / "data-bin").mkdir(parents=True)
    err = _error(run_script("--release", built["release"], "--out", out))
    assert f"{out / 'data-bin'} exists; pass --force" in err


def test_too_many_valid_examples_leaves_nothing(built, tmp_path):
    err = _error(run_script("--release", built["release"], "--out", tmp_path / "out", "--valid-per-module", 12))
    assert "--valid-per-module 12 would leave no training examples of arithmetic__add_or_sub (it has 12)" in err
    _no_outputs(tmp_path / "out")


def test_no_source_is_a_usage_error(tmp_path):
    proc = run_script("--out", tmp_path / "out")
    assert proc.returncode == 2 and "choose a source: --generate or --release PATH" in proc.stderr


# ---------------------------------------------------------------------------------------------
# DeepMind's generator, in its own venv


@pytest.fixture(scope="module")
def mathgen_venv(request, tmp_path_factory):
    """``$FAIRSEQ_TPR_MATHGEN_VENV`` if set, else a venv kept in pytest's cache (built on first use)."""
    import os

    if os.environ.get(md.MATHGEN_VENV_ENV):
        return Path(os.environ[md.MATHGEN_VENV_ENV])
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("mathgen-venv") if cache is not None else tmp_path_factory.mktemp("mathgen") / "venv"


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_generate_with_deepmind_generator(tmp_path, mathgen_venv):
    modules = "numbers__place_value,comparison__pair"
    args = ("--generate", "--modules", modules, "--per-module", 21, "--per-test-module", 5, "--workers", 2,
            "--valid-per-module", 1, "--mathgen-venv", mathgen_venv)
    first = _ok(run_script(*args, "--out", tmp_path / "a", timeout=600), "math_dataset.sh --generate")
    raw = tmp_path / "a" / "raw"
    expected_files = {f"{s}/{m}.txt": 7 for s in md.TRAIN_SPLITS for m in modules.split(",")}
    expected_files.update({f"interpolate/{m}.txt": 5 for m in modules.split(",")})
    expected_files["extrapolate/numbers__place_value_big.txt"] = 5  # comparison__pair has no extrapolate module
    got = {str(p.relative_to(raw)): len(p.read_text().splitlines()) // 2 for p in raw.glob("*/*.txt")}
    assert got == expected_files
    assert json.loads((raw / "generate.json").read_text())["modules"] == modules.split(",")
    counts = json.loads((tmp_path / "a" / "data-bin" / "counts.json").read_text())["examples"]
    assert counts["train"] == {m: 20 for m in modules.split(",")}
    assert counts["extrapolate"] == {"numbers__place_value_big": 5}
    assert "comparison__pair" in first.stdout
    # same seed, same data: the worker writes the same file again
    again = tmp_path / "b"
    (again / "interpolate").mkdir(parents=True)
    worker = [str(Path(mathgen_venv) / "bin" / "python"), str(Path(md.__file__)), "_generate_worker", "--out",
              str(again), "--per-module", "21", "--per-test-module", "5", "--seed", "1", "--file",
              "interpolate/comparison__pair"]
    subprocess.run(worker, check=True, timeout=120)
    assert (again / "interpolate/comparison__pair.txt").read_text() == (raw / "interpolate/comparison__pair.txt").read_text()
    # a second run over the same OUT reuses the generated files
    again = _ok(run_script(*args, "--out", tmp_path / "a", "--force", timeout=600))
    assert "reusing the generated data" in again.stderr
