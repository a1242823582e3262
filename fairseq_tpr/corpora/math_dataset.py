"""DeepMind's Mathematics Dataset -> character-level, binarized fairseq data.

Two sources, one output::

    # (a) generate here with DeepMind's generator (``mathematics_dataset==1.0.1``, in its own venv)
    python -m fairseq_tpr.corpora.math_dataset --generate --modules numbers__place_value,comparison__pair \\
        --per-module 30000 --per-test-module 1000 --out data/math
    # (b) the official pre-generated release
    python -m fairseq_tpr.corpora.math_dataset --release /path/to/mathematics_dataset-v1.0 --out data/math

The release layout (and what ``--generate`` writes to ``OUT/raw/``) is
``{train-easy,train-medium,train-hard,interpolate,extrapolate}/<module>.txt``, question and
answer on alternate lines. The output is

- ``OUT/tok/``: one character per token, tokens separated by single spaces, a space in the
  text written as the visible symbol ``▁`` (U+2581): ``train.{q,a}`` (train-easy, -medium and
  -hard merged), ``valid.{q,a}`` (held out of the merged training data, per module, chosen
  with ``--seed``) and ``<split>.<module>.{q,a}`` for every interpolate/extrapolate module;
- ``OUT/data-bin/``: ``fairseq-preprocess --source-lang q --target-lang a --joined-dictionary``
  (the dictionary is built from the training data only), the test files passed as one
  comma-separated ``--testpref`` so they become the fairseq subsets ``test``, ``test1``, ...;
  ``test_sets.json`` maps each subset to ``{"split", "module", "n"}``, ``counts.json`` holds
  the examples per split and module, the ``<unk>`` counts and the test questions also seen
  in training, and ``preprocess.log`` is fairseq-preprocess's log.

The generator needs ``numpy<1.24`` and ``sympy==1.4``, so it lives in its own venv
(``--mathgen-venv``, default ``$FAIRSEQ_TPR_MATHGEN_VENV`` or ``.venv-mathgen`` at the
repository root), created on first use. Its ``generate_to_file`` selects modules by
*substring* (``--filter numbers__place_value`` also generates ``numbers__place_value_composed``
and ``numbers__place_value_big``), so we drive the same functions it calls
(``generate.init_modules``, ``generate.sample_from_module``) for the exact module names,
one module per process, each file seeded from ``--seed``: the same command writes the same data.

Run by path (``python fairseq_tpr/corpora/math_dataset.py ...``, what ``preprocess/math_dataset.sh``
does) this file imports only the standard library: the checks, ``--list-modules`` and the
generator start without importing torch, and the generator venv, which has neither torch nor
this package, runs it by path for its worker (``_generate_worker``). That is also why the
generator venv code stays in this one file: a sibling module could not be imported by path.
"""
import argparse
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import zlib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SPACE = "\u2581"  # ▁, the visible stand-in for a space inside a character-level line
TRAIN_SPLITS = ("train-easy", "train-medium", "train-hard")
TEST_SPLITS = ("interpolate", "extrapolate")
RELEASE_SPLITS = TRAIN_SPLITS + TEST_SPLITS
LANGS = ("q", "a")  # fairseq "languages": question (source) and answer (target)

GENERATOR_REQUIREMENTS = ("mathematics_dataset==1.0.1", "numpy<1.24", "sympy==1.4")
MATHGEN_VENV_ENV = "FAIRSEQ_TPR_MATHGEN_VENV"
_INCOMPLETE = ".fairseq_tpr-incomplete"  # marker inside a generator venv we are still building

# The 56 training/interpolation modules and 15 extrapolation modules of mathematics_dataset 1.0.1.
TRAIN_MODULES = (
    "algebra__linear_1d", "algebra__linear_1d_composed", "algebra__linear_2d",
    "algebra__linear_2d_composed", "algebra__polynomial_roots", "algebra__polynomial_roots_composed",
    "algebra__sequence_next_term", "algebra__sequence_nth_term", "arithmetic__add_or_sub",
    "arithmetic__add_or_sub_in_base", "arithmetic__add_sub_multiple", "arithmetic__div",
    "arithmetic__mixed", "arithmetic__mul", "arithmetic__mul_div_multiple",
    "arithmetic__nearest_integer_root", "arithmetic__simplify_surd", "calculus__differentiate",
    "calculus__differentiate_composed", "comparison__closest", "comparison__closest_composed",
    "comparison__kth_biggest", "comparison__kth_biggest_composed", "comparison__pair",
    "comparison__pair_composed", "comparison__sort", "comparison__sort_composed",
    "measurement__conversion", "measurement__time", "numbers__base_conversion",
    "numbers__div_remainder", "numbers__div_remainder_composed", "numbers__gcd",
    "numbers__gcd_composed", "numbers__is_factor", "numbers__is_factor_composed",
    "numbers__is_prime", "numbers__is_prime_composed", "numbers__lcm", "numbers__lcm_composed",
    "numbers__list_prime_factors", "numbers__list_prime_factors_composed", "numbers__place_value",
    "numbers__place_value_composed", "numbers__round_number", "numbers__round_number_composed",
    "polynomials__add", "polynomials__coefficient_named", "polynomials__collect",
    "polynomials__compose", "polynomials__evaluate", "polynomials__evaluate_composed",
    "polynomials__expand", "polynomials__simplify_power", "probability__swr_p_level_set",
    "probability__swr_p_sequence",
)
EXTRAPOLATE_MODULES = (
    "algebra__polynomial_roots_big", "arithmetic__add_or_sub_big", "arithmetic__add_sub_multiple_longer",
    "arithmetic__div_big", "arithmetic__mixed_longer", "arithmetic__mul_big",
    "arithmetic__mul_div_multiple_longer", "comparison__closest_more", "comparison__kth_biggest_more",
    "comparison__sort_more", "measurement__conversion", "numbers__place_value_big",
    "numbers__round_number_big", "probability__swr_p_level_set_more_samples",
    "probability__swr_p_sequence_more_samples",
)
DEFAULT_MODULES = (
    "numbers__place_value", "numbers__round_number", "comparison__pair", "comparison__sort",
    "arithmetic__add_or_sub",
)


if __package__:  # imported as fairseq_tpr.corpora.math_dataset (or run with -m): the package's errors
    from ..errors import ConfigError, DependencyError, InputError
else:  # run by path: the standard library only (module docstring); main() prints these itself
    class InputError(ValueError):
        """Stands in for the classes of :mod:`fairseq_tpr.errors` when this file runs by path."""

    ConfigError = DependencyError = InputError
ERRORS = (InputError, ConfigError, DependencyError)


# ---------------------------------------------------------------------------------------------
# tokenization


def tokenize(text):
    """One token per character, separated by single spaces; a space becomes ``▁``.

    >>> tokenize("Is 3 > 2?")
    'I s ▁ 3 ▁ > ▁ 2 ?'
    """
    return " ".join(text.replace(" ", SPACE))


def detokenize(line):
    """Invert :func:`tokenize`: drop the separating spaces, turn ``▁`` back into a space.

    Multi-character tokens (``<unk>``) are kept as they are.
    """
    return "".join(line.split()).replace(SPACE, " ")


# ---------------------------------------------------------------------------------------------
# reading and checking the release layout


_BLANK_LINE = re.compile(r"^[^\S\n]*$", re.M)  # a line with nothing but whitespace
_BAD_CHAR = re.compile("[^\\S\n ]|" + SPACE)  # whitespace other than a space (or newline), or ▁


def check_module_file(path):
    """Cheap check of one ``<module>.txt`` before any long work; returns its number of examples.

    Raises an :class:`InputError` for an odd number of lines (a question without its answer),
    an empty question or answer line, text that is not UTF-8, whitespace other than a plain
    space (fairseq would split on it) or a literal ``▁`` (it would come back as a space).
    Regular expressions over the whole file keep this fast on the full release.
    """
    data = Path(path).read_bytes()
    if not data:
        return 0
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if n_lines % 2:
        raise InputError(
            f"{path} has {n_lines} lines, an odd number: the last question has no answer. Module files "
            "hold question and answer on alternate lines; remove the unpaired last line or regenerate the file."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_no = data[: err.start].count(b"\n") + 1
        raise InputError(f"{path} line {line_no} is not UTF-8 text ({err.reason}).") from None
    body = (text[:-1] if text.endswith("\n") else text).replace("\r\n", "\n")
    blank = _BLANK_LINE.search(body)
    if blank:
        line_no = body.count("\n", 0, blank.start()) + 1
        raise InputError(
            f"{path} line {line_no} is an empty {'question' if line_no % 2 else 'answer'} line. Every question "
            "and every answer must be non-empty; remove the empty line (and its partner) or regenerate the file."
        )
    bad = _BAD_CHAR.search(body)
    if bad:
        line_no = body.count("\n", 0, bad.start()) + 1
        line = body.split("\n")[line_no - 1]
        names = ", ".join(f"U+{ord(c):04X}" for c in sorted(set(_BAD_CHAR.findall(line))))
        raise InputError(
            f"{path} line {line_no}: the {'question' if line_no % 2 else 'answer'} contains {names}. Only plain "
            f"spaces may separate words (other whitespace would be lost, and {SPACE} is the symbol a space is "
            "written as)."
        )
    return n_lines // 2


def read_module_file(path):
    """The ``(question, answer)`` pairs of one module file (checked with :func:`check_module_file`)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    return list(zip(lines[0::2], lines[1::2]))


def scan_release(root):
    """``{split: {module: path}}`` for the release layout under ``root``.

    Raises an :class:`InputError` if ``root`` or one of the five split directories is missing.
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError(
            f"release directory {root} does not exist. Pass --release the path of the unpacked official "
            "release (the folder mathematics_dataset-v1.0 that holds train-easy/, ..., extrapolate/), "
            "or use --generate to build the data with DeepMind's generator."
        )
    missing = [split for split in RELEASE_SPLITS if not (root / split).is_dir()]
    if missing:
        raise InputError(
            f"{root} lacks the split director{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}. "
            f"The release layout is {root}/{{{','.join(RELEASE_SPLITS)}}}/<module>.txt; check that --release "
            "points at the folder that holds them (mathematics_dataset-v1.0) and that the archive was fully unpacked."
        )
    return {split: {p.stem: p for p in sorted((root / split).glob("*.txt"))} for split in RELEASE_SPLITS}


def extrapolate_owner(name, train_modules):
    """The training module an extrapolation module tests, or ``None``.

    Extrapolation modules are named after their training module plus a suffix
    (``arithmetic__add_or_sub_big``, ``comparison__sort_more``) or carry its name
    (``measurement__conversion``); the owner is the longest training module name that is
    ``name`` or a ``_``-separated prefix of it (``arithmetic__mul_div_multiple_longer`` belongs to
    ``arithmetic__mul_div_multiple``, not to ``arithmetic__mul``).
    """
    owners = [m for m in train_modules if name == m or name.startswith(m + "_")]
    return max(owners, key=len) if owners else None


def _unknown_module_error(unknown, known, where):
    lines = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        lines.append(f"  {name}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return ConfigError(
        f"unknown module name{'s' if len(unknown) > 1 else ''}:\n" + "\n".join(lines) + f"\nSee {where}."
    )


def select_files(layout, modules=None, where="the list of modules"):
    """Choose the files to use: ``{split: {module: path}}`` restricted to ``modules``.

    ``modules=None`` takes every module of the release. A training-module name brings its
    train-easy/-medium/-hard and interpolate files and every extrapolate module it owns
    (:func:`extrapolate_owner`); an extrapolate-only name brings just that file. Unknown names
    raise a :class:`ConfigError` listing close matches and ``where`` to see the list.
    """
    train_names = sorted({m for s in TRAIN_SPLITS + ("interpolate",) for m in layout[s]})
    all_names = sorted(set(train_names) | set(layout["extrapolate"]))
    if modules is None:
        return {split: dict(files) for split, files in layout.items()}
    unknown = [m for m in modules if m not in all_names]
    if unknown:
        raise _unknown_module_error(unknown, all_names, where)
    wanted = set(modules)
    chosen = {split: {m: p for m, p in files.items() if m in wanted} for split, files in layout.items()}
    for name, path in layout["extrapolate"].items():
        if extrapolate_owner(name, train_names) in wanted:
            chosen["extrapolate"][name] = path
    return chosen


# ---------------------------------------------------------------------------------------------
# the generator (its own venv)


def default_mathgen_venv():
    """``$FAIRSEQ_TPR_MATHGEN_VENV`` or ``.venv-mathgen`` at the root of this checkout."""
    return Path(os.environ.get(MATHGEN_VENV_ENV) or Path(__file__).resolve().parents[2] / ".venv-mathgen")


def _generator_works(python):
    probe = "import mathematics_dataset.generate, sympy; print(sympy.__version__)"
    try:
        return subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120).returncode == 0
    except OSError:
        return False


def ensure_generator_venv(venv):
    """The Python of a venv that can import ``mathematics_dataset``; create the venv if needed.

    A venv we are still building carries a marker file; a venv with the marker (an earlier run
    was interrupted) is rebuilt. A directory that exists without the marker and cannot import the
    generator is left alone and reported. Raises :class:`DependencyError` when the venv cannot be
    created or the packages cannot be installed (the half-built venv is removed).
    """
    venv = Path(venv).absolute()
    python = venv / "bin" / "python"
    if python.exists() and not (venv / _INCOMPLETE).exists() and _generator_works(python):
        return python
    if venv.exists() and not (venv / _INCOMPLETE).exists() and any(venv.iterdir()):
        raise DependencyError(
            f"{venv} exists but its Python cannot import mathematics_dataset. Delete it to have it rebuilt, "
            f"install the generator into it ({python} -m pip install {' '.join(repr(r) for r in GENERATOR_REQUIREMENTS)}), "
            f"or pass another --mathgen-venv (or set {MATHGEN_VENV_ENV})."
        )
    shutil.rmtree(venv, ignore_errors=True)
    print(f"creating the generator venv {venv} ({', '.join(GENERATOR_REQUIREMENTS)}) ...", file=sys.stderr, flush=True)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *GENERATOR_REQUIREMENTS],
    )
    for i, cmd in enumerate(steps):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if i == 0 and proc.returncode == 0:
                (venv / _INCOMPLETE).touch()
            failed = proc.returncode != 0
            detail = (proc.stdout + proc.stderr).strip()[-2000:]
        except OSError as err:
            failed, detail = True, str(err)
        if failed:  # venv was absent, empty or ours when we started: what is there now is our half-built venv
            shutil.rmtree(venv, ignore_errors=True)
            what = "create the venv" if i == 0 else "install the generator into it"
            raise DependencyError(
                f"could not {what} {venv}:\n{detail}\nFix the cause (a writable --mathgen-venv path, access to the "
                f"package index for {', '.join(GENERATOR_REQUIREMENTS)}), or use --release with the official "
                "pre-generated files."
            )
    (venv / _INCOMPLETE).unlink()
    if not _generator_works(python):
        raise DependencyError(f"{venv} was created but cannot import mathematics_dataset.generate; delete it and retry.")
    return python


def generator_jobs(modules):
    """``{module: [(split, file_module), ...]}``: the files to generate for each requested module."""
    jobs = {}
    for m in modules:
        if m in TRAIN_MODULES:
            files = [(split, m) for split in TRAIN_SPLITS + ("interpolate",)]
            files += [("extrapolate", e) for e in EXTRAPOLATE_MODULES if extrapolate_owner(e, TRAIN_MODULES) == m]
        else:
            files = [("extrapolate", m)]
        jobs[m] = files
    return jobs


def generate_raw(raw, modules, per_module, per_test_module, seed, workers, venv, force=False):
    """Write the release layout for ``modules`` to ``raw`` with DeepMind's generator.

    An existing ``raw`` made with the same settings (``raw/generate.json``) is reused (the
    generator is deterministic given the seed); one made with other settings is replaced with
    ``force`` and an error otherwise. Writes to ``raw.partial`` and renames it when every module
    is done, so an interrupted run leaves nothing that looks complete.
    """
    settings = {"modules": list(modules), "per_module": per_module, "per_test_module": per_test_module,
                "seed": seed, "generator": GENERATOR_REQUIREMENTS[0]}
    stamp = raw / "generate.json"
    if raw.exists():
        ours = stamp.is_file()
        if ours and json.loads(stamp.read_text()) == settings:
            print(f"reusing the generated data in {raw} (same modules, counts and seed)", file=sys.stderr)
            return
        if not ours:
            raise ConfigError(f"{raw} exists and was not written by --generate ({stamp} is missing); "
                              "move it away or choose another --out.")
        if not force:
            raise ConfigError(f"{raw} was generated with other settings (see {stamp}); pass --force to "
                              "regenerate it, or choose another --out.")
        shutil.rmtree(raw)
    python = ensure_generator_venv(venv)
    partial = raw.with_name(raw.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for split in RELEASE_SPLITS:
        (partial / split).mkdir(parents=True)
    jobs = generator_jobs(modules)
    print(f"generating {len(jobs)} modules ({per_module} training and {per_test_module} test examples each) "
          f"with {workers} worker{'s' if workers > 1 else ''} ...", file=sys.stderr, flush=True)

    def run(module):
        start = time.time()
        cmd = [str(python), str(Path(__file__).resolve()), "_generate_worker", "--out", str(partial),
               "--per-module", str(per_module), "--per-test-module", str(per_test_module), "--seed", str(seed)]
        for split, name in jobs[module]:
            cmd += ["--file", f"{split}/{name}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise DependencyError(f"the generator failed on {module}:\n{(proc.stdout + proc.stderr)[-3000:]}")
        print(f"  generated {module} in {time.time() - start:.1f} s", file=sys.stderr, flush=True)

    try:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            for future in [pool.submit(run, m) for m in jobs]:
                future.result()
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    (partial / "generate.json").write_text(json.dumps(settings, indent=1) + "\n")
    partial.rename(raw)


def _generate_worker(argv):
    """Runs inside the generator venv: write the given ``split/module`` files (see :func:`generate_raw`).

    Calls the functions ``mathematics_dataset.generate_to_file`` calls (``init_modules`` with
    the train split by difficulty, ``sample_from_module``, which drops over-long questions and
    answers), with ``random`` and ``numpy.random`` seeded per file.
    """
    parser = argparse.ArgumentParser(prog="math_dataset.py _generate_worker")
    parser.add_argument("--out", required=True)
    parser.add_argument("--per-module", type=int, required=True)
    parser.add_argument("--per-test-module", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--file", action="append", required=True, help="split/module")
    args = parser.parse_args(argv)

    import numpy as np
    from absl import flags
    from mathematics_dataset import generate

    flags.FLAGS([sys.argv[0], f"--per_train_module={args.per_module}", f"--per_test_module={args.per_test_module}"])
    generate.init_modules(train_split=True)
    for spec in args.file:
        split, name = spec.split("/")
        module = generate.filtered_modules[split][name]
        key = f"{args.seed}/{split}/{name}"
        random.seed(key)
        np.random.seed(zlib.crc32(key.encode()))
        path = Path(args.out) / split / f"{name}.txt"
        with open(path, "w", encoding="utf-8") as f:
            for _ in range(generate.counts[split]):
                problem, _ = generate.sample_from_module(module)
                f.write(f"{problem.question}\n{problem.answer}\n")


# ---------------------------------------------------------------------------------------------
# tokenized text, binarized data


def valid_count(n_train, valid_per_module):
    """Examples of one module held out for validation: ``valid_per_module`` or, for ``None``,
    1% of the module's training examples, at least 1 and at most 1000."""
    if n_train == 0:
        return 0
    if valid_per_module is None:
        return min(1000, max(1, n_train // 100))
    return valid_per_module


def _write_pairs(prefix, pairs):
    with open(f"{prefix}.q", "a", encoding="utf-8") as fq, open(f"{prefix}.a", "a", encoding="utf-8") as fa:
        for q, a in pairs:
            fq.write(tokenize(q) + "\n")
            fa.write(tokenize(a) + "\n")


def _unk_count(pairs, known):
    """Characters of ``pairs`` (spaces as ``▁``) that are not in ``known`` (the ``<unk>`` tokens)."""
    total = 0
    for q, a in pairs:
        text = (q + a).replace(" ", SPACE)
        if not known.issuperset(text):
            total += sum(1 for c in text if c not in known)
    return total


def write_tokenized(files, tok, valid_per_module=None, seed=1):
    """Tokenize the chosen files into ``tok``; return ``(counts, test_prefixes)``.

    ``counts`` has ``examples`` (per split and module, including the merged ``train`` and
    ``valid``), ``unk`` (characters of valid/test sets that the training data lacks, i.e. the
    ``<unk>`` tokens fairseq will write) and ``test_in_train`` (test examples whose question
    and answer also occur in the training data of their module). ``test_prefixes`` is the
    ordered list of ``(split, module, prefix)`` for ``--testpref``: interpolate modules, then
    extrapolate modules, each sorted by name. Works one module at a time, so memory stays at
    one module's training data.
    """
    tok.mkdir(parents=True, exist_ok=True)
    for name in ("train", "valid"):
        for lang in LANGS:
            open(tok / f"{name}.{lang}", "w").close()
    examples, unk, test_in_train = defaultdict(dict), defaultdict(dict), defaultdict(dict)
    train_modules = sorted({m for s in TRAIN_SPLITS for m in files[s]})
    tests = [(split, m) for split in TEST_SPLITS for m in sorted(files[split])]
    train_chars = set()
    for module in _progress(train_modules, "train/valid"):
        pairs = []
        for split in TRAIN_SPLITS:
            if module in files[split]:
                split_pairs = read_module_file(files[split][module])
                examples[split][module] = len(split_pairs)
                pairs += split_pairs
        n_valid = valid_count(len(pairs), valid_per_module)
        if n_valid >= len(pairs):
            raise ConfigError(
                f"--valid-per-module {valid_per_module} would leave no training examples of {module} "
                f"(it has {len(pairs)}); choose fewer."
            )
        held_out = set(random.Random(f"{seed}/{module}").sample(range(len(pairs)), n_valid))
        train = [p for i, p in enumerate(pairs) if i not in held_out]
        _write_pairs(tok / "train", train)
        _write_pairs(tok / "valid", [pairs[i] for i in sorted(held_out)])
        examples["train"][module], examples["valid"][module] = len(train), n_valid
        for q, a in train:
            train_chars.update(q)
            train_chars.update(a)
        seen = set(train)
        for split, name in tests:  # leakage: only this module's own test files can repeat its questions
            owner = name if split == "interpolate" else extrapolate_owner(name, train_modules)
            if owner == module:
                test_in_train[split][name] = sum(1 for p in read_module_file(files[split][name]) if p in seen)
        del pairs, train, seen
    if " " in train_chars:
        train_chars.add(SPACE)
    valid = read_tokenized(tok / "valid")
    for module in train_modules:
        n = examples["valid"][module]
        unk["valid"][module], valid = _unk_count(valid[:n], train_chars), valid[n:]
    prefixes = []
    for split, module in _progress(tests, "test sets"):
        pairs = read_module_file(files[split][module])
        if not pairs:
            continue
        prefix = tok / f"{split}.{module}"
        for lang in LANGS:
            open(f"{prefix}.{lang}", "w").close()
        _write_pairs(prefix, pairs)
        examples[split][module] = len(pairs)
        unk[split][module] = _unk_count(pairs, train_chars)
        test_in_train[split].setdefault(module, 0)
        prefixes.append((split, module, prefix))
    counts = {"examples": dict(examples), "unk": dict(unk), "test_in_train": dict(test_in_train)}
    return counts, prefixes


def read_tokenized(prefix):
    """The ``(question, answer)`` pairs of ``prefix.q`` / ``prefix.a``, detokenized."""
    with open(f"{prefix}.q", encoding="utf-8") as fq, open(f"{prefix}.a", encoding="utf-8") as fa:
        return [(detokenize(q), detokenize(a)) for q, a in zip(fq, fa)]


def _progress(items, desc):
    """A tqdm bar over ``items`` when tqdm is installed and stderr is a terminal, else the items."""
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, unit="module", disable=not sys.stderr.isatty(), leave=False)


def _find_script(name):
    """A console script of this venv (next to ``sys.executable``) or from PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if not found:
        raise DependencyError(f"{name} not found next to {sys.executable} or on PATH; install ve-fairseq (see README).")
    return found


def binarize(tok, dest, prefixes, workers):
    """``fairseq-preprocess`` the tokenized text into ``dest``; returns ``test_sets`` (subset -> info)."""
    testpref = ",".join(str(p) for _, _, p in prefixes)
    cmd = [_find_script("fairseq-preprocess"), "--source-lang", "q", "--target-lang", "a", "--joined-dictionary",
           "--trainpref", str(tok / "train"), "--validpref", str(tok / "valid"), "--destdir", str(dest),
           "--workers", str(workers)]
    if testpref:
        cmd += ["--testpref", testpref]
    print(f"binarizing with fairseq-preprocess ({len(prefixes)} test subsets) ...", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"fairseq-preprocess failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return {
        ("test" if k == 0 else f"test{k}"): {"split": split, "module": module}
        for k, (split, module, _) in enumerate(prefixes)
    }


def format_counts(counts):
    """The table the script prints: one row per split and module, and a total per split."""
    ex, unk, seen = counts["examples"], counts["unk"], counts["test_in_train"]
    splits = [s for s in RELEASE_SPLITS[:3] + ("train", "valid") + TEST_SPLITS if s in ex]
    width = max([len(m) for s in splits for m in ex[s]] + [6])
    header = f"{'split':<12} {'module':<{width}} {'examples':>9} {'<unk>':>6} {'in train':>8}"
    rows = [header, "-" * len(header)]
    for split in splits:
        for module, n in sorted(ex[split].items()):
            u = unk.get(split, {}).get(module, "")
            s = seen.get(split, {}).get(module, "")
            rows.append(f"{split:<12} {module:<{width}} {n:>9} {u!s:>6} {s!s:>8}")
        total = sum(ex[split].values())
        rows.append(f"{split:<12} {'(all ' + str(len(ex[split])) + ' modules)':<{width}} {total:>9}")
    return "\n".join(rows)


def build(out, files, valid_per_module=None, seed=1, workers=1, force=False, source=None):
    """Tokenize and binarize ``files`` (see :func:`select_files`) into ``out/tok`` and ``out/data-bin``.

    Checks every file first (:func:`check_module_file`). Writes to ``*.partial`` directories and
    renames them at the end; existing outputs are replaced only with ``force``. Returns ``counts``.
    """
    out = Path(out)
    tok, dest = out / "tok", out / "data-bin"
    for d in (tok, dest):
        if d.exists() and not force:
            raise ConfigError(f"{d} exists; pass --force to rebuild it, or choose another --out.")
    if not any(files[s] for s in TRAIN_SPLITS):
        raise InputError("no training data: none of the chosen modules has a train-easy/-medium/-hard file.")
    checked = {}
    for split in RELEASE_SPLITS:
        for module, path in files[split].items():
            checked[(split, module)] = check_module_file(path)
    empty = [f"{s}/{m}" for (s, m), n in checked.items() if n == 0 and s in TRAIN_SPLITS]
    if empty and len(empty) == sum(len(files[s]) for s in TRAIN_SPLITS):
        raise InputError("no training data: every chosen train-easy/-medium/-hard file is empty.")

    tok_partial, dest_partial = out / "tok.partial", out / "data-bin.partial"
    for d in (tok_partial, dest_partial):
        shutil.rmtree(d, ignore_errors=True)
    try:
        counts, prefixes = write_tokenized(files, tok_partial, valid_per_module, seed)
        test_sets = binarize(tok_partial, dest_partial, prefixes, workers)
        for info in test_sets.values():
            info["n"] = counts["examples"][info["split"]][info["module"]]
        counts.update(source=source, seed=seed, valid_per_module=valid_per_module or "1% (1..1000)")
        (dest_partial / "test_sets.json").write_text(json.dumps(test_sets, indent=1) + "\n")
        (dest_partial / "counts.json").write_text(json.dumps(counts, indent=1) + "\n")
        log = dest_partial / "preprocess.log"  # name the final folders, not the .partial ones
        text = log.read_text() if log.exists() else ""
        log.write_text(text.replace(str(tok_partial), str(tok)).replace(str(dest_partial), str(dest)))
    except BaseException:
        shutil.rmtree(tok_partial, ignore_errors=True)
        shutil.rmtree(dest_partial, ignore_errors=True)
        raise
    for partial, final in ((tok_partial, tok), (dest_partial, dest)):
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
    return counts


def _warn_unk(counts):
    per = [(s, m, n) for s, mods in counts["unk"].items() for m, n in mods.items() if n]
    if per:
        lines = "\n".join(f"  {s}/{m}: {n}" for s, m, n in per)
        print(f"warning: characters the training data lacks become <unk> "
              f"({sum(n for *_, n in per)} in all; fairseq-tpr-math-eval reports them per module):\n{lines}",
              file=sys.stderr)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="math_dataset", description=__doc__.split("\n\n")[0],
        epilog="Output: OUT/tok/, OUT/data-bin/ (with test_sets.json, counts.json); OUT/raw/ with --generate.",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--generate", action="store_true", help="generate the data with DeepMind's generator")
    source.add_argument("--release", metavar="PATH", help="the official release folder (mathematics_dataset-v1.0)")
    source.add_argument("--list-modules", action="store_true", help="print the generator's module names and exit")
    parser.add_argument("--out", metavar="OUT", help="output folder (e.g. data/math)")
    parser.add_argument("--modules", help="comma-separated module names; default with --generate: "
                        + ",".join(DEFAULT_MODULES) + "; with --release: every module of the release")
    parser.add_argument("--per-module", type=int, default=10000,
                        help="--generate: training examples per module, a third each for easy/medium/hard (default %(default)s)")
    parser.add_argument("--per-test-module", type=int, default=1000,
                        help="--generate: examples per interpolate and per extrapolate module (default %(default)s)")
    parser.add_argument("--valid-per-module", type=int, default=None,
                        help="validation examples held out of each module's training data "
                             "(default: 1%% of it, at least 1, at most 1000)")
    parser.add_argument("--seed", type=int, default=1, help="seeds the validation hold-out and the generator (default %(default)s)")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                        help="generator processes and fairseq-preprocess workers (default: min(4, CPUs))")
    parser.add_argument("--mathgen-venv", type=Path, default=None,
                        help=f"the generator's venv (created if missing; default ${MATHGEN_VENV_ENV} or "
                             "REPO/.venv-mathgen)")
    parser.add_argument("--force", action="store_true", help="replace existing outputs in OUT")
    args = parser.parse_args(argv)
    if not args.list_modules:
        if not (args.generate or args.release):
            parser.error("choose a source: --generate or --release PATH")
        if not args.out:
            parser.error("--out is required")
    for flag, minimum in (("per_module", 3), ("per_test_module", 1), ("workers", 1)):
        if getattr(args, flag) < minimum:
            parser.error(f"--{flag.replace('_', '-')} must be at least {minimum}")
    if args.valid_per_module is not None and args.valid_per_module < 0:
        parser.error("--valid-per-module must be >= 0")
    return args


def main(argv=None):
    """Command line entry point (see the module docstring); exits 1 with a message on bad input."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["_generate_worker"]:
        return _generate_worker(argv[1:])
    args = parse_args(argv)
    if args.list_modules:
        print("training / interpolate modules:\n  " + "\n  ".join(TRAIN_MODULES))
        print("extrapolate modules:\n  " + "\n  ".join(EXTRAPOLATE_MODULES))
        return 0
    modules = [m.strip() for m in args.modules.split(",") if m.strip()] if args.modules else None
    out = Path(args.out)
    try:
        if args.generate:
            modules = modules or list(DEFAULT_MODULES)
            known = sorted(set(TRAIN_MODULES) | set(EXTRAPOLATE_MODULES))
            unknown = [m for m in modules if m not in known]
            if unknown:
                raise _unknown_module_error(unknown, known, "the list: preprocess/math_dataset.sh --list-modules")
            raw = out / "raw"
            generate_raw(raw, modules, args.per_module, args.per_test_module, args.seed, args.workers,
                         args.mathgen_venv or default_mathgen_venv(), args.force)
            layout = scan_release(raw)
            source = {"generate": GENERATOR_REQUIREMENTS[0], "raw": str(raw)}
        else:
            layout = scan_release(args.release)
            source = {"release": str(Path(args.release).resolve())}
        files = select_files(layout, modules, where=f"the module files in {Path(args.release or out / 'raw')}/*/")
        counts = build(out, files, args.valid_per_module, args.seed, args.workers, args.force, source)
    except ERRORS as err:  # by path there is no package error hook: report it the same way
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; partial outputs removed", file=sys.stderr)
        return 130
    print(format_counts(counts))
    _warn_unk(counts)
    print(f"\nwrote {out / 'tok'}/ and {out / 'data-bin'}/ (test_sets.json: {sum(len(v) for k, v in counts['examples'].items() if k in TEST_SPLITS)} test subsets)")
    return 0


if __name__ == "__main__":
    if __package__:  # python -m fairseq_tpr.corpora.math_dataset: the console-script exit
        from ..errors import command

        sys.exit(command(main)())
    sys.exit(main())  # run by path, possibly in the generator's own venv: the standard library only
