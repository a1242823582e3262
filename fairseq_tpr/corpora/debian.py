"""The Debian package-description corpus: real, human-written text that can always be fetched.

``preprocess/debian.sh OUT [options]`` runs ``python -m fairseq_tpr.corpora.debian OUT``:

1. **Fetch** the package lists with ``apt-get update`` into a private directory ``OUT/apt/``
   (its own ``apt.conf``, ``sources.list``, lists and cache; ``Acquire::Languages`` en,de;
   the system's ``/etc/apt/apt.conf.d``, lists and lock are never read or written), or read an
   existing lists directory (``--lists-dir``) holding ``*Packages`` and ``*Translation-<lang>``
   files in the Debian archive format (plain or ``.gz``/``.xz``/``.bz2``).
2. **Parse** the deb822 paragraphs: ``Packages`` gives each binary package's source package,
   ``Translation-en`` the English description (synopsis line + long description) under its
   ``Description-md5``, ``Translation-de`` the DDTP German translation under the same md5.
3. **Clean** the description markup (Debian Policy 5.6.13, see :func:`clean_long_description`).
4. **Deduplicate** on ``Description-md5``, then on the cleaned source text.
5. **Split** by source package: a description's group is its source package, merged (union-find)
   with every other source package whose description shares its first paragraph (``0ad`` and
   ``0ad-data`` are two source packages with one text), unless that paragraph is short (fewer
   than ``--min-source-words`` words) or boilerplate shared by more than
   ``--max-shared-sources`` source packages; a group goes to
   test / valid / train by a SHA-1 hash of its name, so siblings (``-dev``, ``-doc``, ``-data``)
   never straddle splits.
6. Build two corpora with :func:`fairseq_tpr.corpora.prepare.build`:
   ``OUT/summarization/`` (cleaned English long description -> synopsis, headline generation) and
   ``OUT/en-de/`` (DDTP human translations: synopsis pairs and paragraph pairs), each with
   ``text/``, ``bpe/``, ``spm.model``, ``data-bin/`` and ``summary.json``; ``OUT/corpus.json``
   records the extraction counts (what was dropped and why) and where the lists came from.
"""
import argparse
import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from ..errors import ConfigError, DependencyError, InputError
from .prepare import add_common_args, build, check_common_args, check_out
from .rawio import SPLITS, RawSplit, normalise, read_text

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
BULLET = re.compile(r"^([*\-+o•·‣◦])\s+(\S.*)$")


# ---------------------------------------------------------------------------------------------
# fetching


def add_apt_args(g, *, arch_help="architecture (default amd64)", refresh_lists=True):
    """The archive flags every Debian-fetching corpus takes (``--mirror``, ``--suite``,
    ``--components``, ``--arch``, ``--keyring``, and ``--refresh-lists`` unless told not to), on
    the argument group ``g``."""
    g.add_argument("--mirror", default=DEFAULT_MIRROR, help=f"archive URL (default {DEFAULT_MIRROR})")
    g.add_argument("--suite", default="bookworm", help="suite (default bookworm)")
    g.add_argument("--components", default="main", help="comma-separated components (default main)")
    g.add_argument("--arch", default="amd64", help=arch_help)
    g.add_argument("--keyring", default=DEFAULT_KEYRING, help=f"signed-by keyring (default {DEFAULT_KEYRING})")
    if refresh_lists:
        g.add_argument("--refresh-lists", action="store_true", help="apt-get update again although OUT/apt has lists")


def apt_update(apt_dir, mirror, suite, components, languages, arch, keyring):
    """``apt-get update`` into ``apt_dir`` with a private configuration; returns the lists dir."""
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        raise DependencyError("apt-get not found: run on a Debian/Ubuntu machine or pass --lists-dir DIR "
                              "with Packages and Translation-* files")
    apt_dir = Path(apt_dir).resolve()
    lists = apt_dir / "lists"
    for d in (lists / "partial", apt_dir / "cache" / "archives" / "partial", apt_dir / "apt.conf.d",
              apt_dir / "sources.list.d", apt_dir / "preferences.d"):
        d.mkdir(parents=True, exist_ok=True)
    signed = f" [signed-by={keyring}]" if keyring and Path(keyring).is_file() else ""
    (apt_dir / "sources.list").write_text(f"deb{signed} {mirror} {suite} {' '.join(components)}\n")
    langs = " ".join(f'"{lang}";' for lang in languages)
    # Read through APT_CONFIG before anything else: pointing Dir::Etc::Parts at our own empty
    # directory keeps the system's apt.conf.d (e.g. Docker's Acquire::Languages "none",
    # Acquire::GzipIndexes, post-update hooks) out of this run.
    conf = f"""Dir::Etc::Main "{apt_dir}/apt.conf.main";
Dir::Etc::Parts "{apt_dir}/apt.conf.d";
Dir::Etc::SourceList "{apt_dir}/sources.list";
Dir::Etc::SourceParts "{apt_dir}/sources.list.d";
Dir::Etc::Preferences "{apt_dir}/preferences";
Dir::Etc::PreferencesParts "{apt_dir}/preferences.d";
Dir::State::Lists "{lists}";
Dir::Cache "{apt_dir}/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Debug::NoLocking "true";
APT::Architecture "{arch}";
APT::Architectures {{ "{arch}"; }};
APT::Sandbox::User "root";
Acquire::Languages {{ {langs} }};
Acquire::GzipIndexes "false";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
"""
    (apt_dir / "apt.conf").write_text(conf)
    (apt_dir / "apt.conf.main").write_text("")
    env = dict(os.environ, APT_CONFIG=str(apt_dir / "apt.conf"), LC_ALL="C")
    print(f"[debian] apt-get update into {lists} ({mirror} {suite} {' '.join(components)}, "
          f"languages {','.join(languages)})", flush=True)
    proc = subprocess.run([apt_get, "update"], env=env, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0 or "\nW: Failed" in proc.stderr or proc.stderr.startswith("E:") or "\nE:" in proc.stderr:
        raise DependencyError(f"apt-get update failed (exit {proc.returncode}):\n{proc.stderr.strip()}\n"
                              f"(or pass --lists-dir DIR with Packages and Translation-* files)")
    return lists


def apt_env(apt_dir):
    """The environment under which apt-get uses :func:`apt_update`'s private configuration in ``apt_dir``."""
    return dict(os.environ, APT_CONFIG=str(Path(apt_dir).resolve() / "apt.conf"), LC_ALL="C")


def apt_download(apt_dir, package, debs_dir):
    """``apt-get download PACKAGE`` into ``debs_dir`` with :func:`apt_update`'s configuration in
    ``apt_dir`` (run that first); a ``PACKAGE_*.deb`` already there is not fetched again. Nothing is
    installed. Returns the ``.deb`` path."""
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        raise DependencyError("apt-get not found: run on a Debian/Ubuntu machine, or bring the files another way "
                              "(the command's --help names the option)")
    debs_dir = Path(debs_dir)
    debs_dir.mkdir(parents=True, exist_ok=True)
    have = sorted(debs_dir.glob(f"{package}_*.deb"))
    if not have:
        proc = subprocess.run([apt_get, "download", package], cwd=debs_dir, env=apt_env(apt_dir),
                              capture_output=True, text=True)
        have = sorted(debs_dir.glob(f"{package}_*.deb"))
        if proc.returncode != 0 or not have:
            raise InputError(f"apt-get download {package} failed ({' '.join(proc.stderr.split())[:200]}): is it in "
                             f"the suite and components of {apt_dir}/sources.list?")
    return have[-1]


def deb_fields(deb, *fields):
    """``{field: value}`` of a ``.deb``'s control fields (``dpkg-deb -f``); a missing field is absent."""
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        raise DependencyError("dpkg-deb not found: install the Debian package dpkg")
    proc = subprocess.run([dpkg_deb, "-f", str(deb), *fields], capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"{deb}: not a Debian package ({proc.stderr.strip()}): delete it and run again")
    if len(fields) == 1:
        return {fields[0]: proc.stdout.strip()} if proc.stdout.strip() else {}
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)


def deb_extract(deb, member, target):
    """``dpkg-deb -x`` of ``deb`` into a temporary directory next to ``target``, of which the
    directory ``member`` (e.g. ``usr/share/man``) becomes ``target``; the rest is deleted. Nothing
    is installed. Returns ``target``."""
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        raise DependencyError("dpkg-deb not found: install the Debian package dpkg")
    target = Path(target)
    tmp = target.parent / f".tmp-{target.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([dpkg_deb, "-x", str(deb), str(tmp)], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"{deb}: dpkg-deb -x failed ({proc.stderr.strip()}): delete it and run again")
    if not (tmp / member).is_dir():
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"{deb} has no {member}/: is it the right package?")
    (tmp / member).rename(target)
    shutil.rmtree(tmp)
    return target


# ---------------------------------------------------------------------------------------------
# parsing


def _open_list(path):
    data = path.read_bytes()
    for suffix, decompress in ((".gz", gzip.decompress), (".xz", lzma.decompress), (".bz2", bz2.decompress)):
        if path.name.endswith(suffix):
            data = decompress(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"{path}: line {line}: not UTF-8 (bytes {data[e.start:e.end].hex(' ')})") from None
    return text


def parse_deb822(text, path):
    """Paragraphs of ``Field: value`` lines (continuation lines start with a space or tab) ->
    list of (dict, first line number). Continuation lines keep their leading space."""
    records, cur, key, start = [], {}, None, 1
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            if cur:
                records.append((cur, start))
            cur, key = {}, None
            continue
        if line[0] in " \t":
            if key is None:
                raise InputError(f"{path}: line {n}: continuation line outside a field")
            cur[key] += "\n" + line
            continue
        field, sep, value = line.partition(":")
        if not sep:
            raise InputError(f"{path}: line {n}: expected 'Field: value', got {line[:60]!r}")
        if not cur:
            start = n
        key = field.strip()
        cur[key] = value.strip()
    if cur:
        records.append((cur, start))
    return records


def find_lists(lists_dir, languages):
    """``{"packages": [paths], "en": [paths], "de": [paths], ...}`` from an apt lists directory."""
    lists_dir = Path(lists_dir)
    if not lists_dir.is_dir():
        raise InputError(f"lists directory {lists_dir} does not exist")
    files = sorted(p for p in lists_dir.iterdir() if p.is_file())
    plain = lambda p: re.sub(r"\.(gz|xz|bz2|lz4|zst)$", "", p.name)  # noqa: E731
    found = {"packages": [p for p in files if plain(p).endswith("Packages")]}
    for lang in languages:
        found[lang] = [p for p in files if plain(p).endswith(f"Translation-{lang}")]
    unreadable = [p for p in files if p.suffix in (".lz4", ".zst") and any(p in v for v in found.values())]
    if unreadable:
        raise InputError(f"{', '.join(map(str, unreadable))}: lz4/zstd-compressed lists cannot be read here; "
                         f"let this script fetch its own (it sets Acquire::GzipIndexes false) or decompress them")
    missing = [k for k in ("packages", "en") if not found[k]]
    if missing:
        names = {"packages": "*Packages", "en": "*Translation-en"}
        raise InputError(f"{lists_dir}: no {' and no '.join(names[k] for k in missing)} file "
                         f"(expected files as apt-get update writes them, e.g. "
                         f"deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages and "
                         f"..._main_i18n_Translation-en, optionally .gz/.xz/.bz2)")
    return found


def read_lists(found, languages):
    """-> (source_of: package -> source package, descriptions: lang -> md5 -> (text, [packages]))."""
    source_of = {}
    for path in found["packages"]:
        for rec, line in parse_deb822(_open_list(path), path):
            if "Package" not in rec:
                raise InputError(f"{path}: paragraph at line {line} has no Package field")
            source_of.setdefault(rec["Package"], rec.get("Source", rec["Package"]).split()[0])
    descriptions = {}
    for lang in languages:
        table = {}
        for path in found.get(lang, []):
            field = f"Description-{lang}"
            for rec, line in parse_deb822(_open_list(path), path):
                if "Package" not in rec or "Description-md5" not in rec or field not in rec:
                    raise InputError(f"{path}: paragraph at line {line} lacks Package, Description-md5 or {field}")
                text, packages = table.setdefault(rec["Description-md5"], (rec[field], []))
                packages.append(rec["Package"])
        descriptions[lang] = table
    return source_of, descriptions


# ---------------------------------------------------------------------------------------------
# cleaning the description markup


def clean_long_description(lines):
    """The long-description lines (each starting with a space) -> list of paragraph strings.

    Debian Policy 5.6.13: a line ``" ."`` is a blank line (paragraph break); a line starting
    with one space is word-wrapped text (joined with the lines around it); a line starting
    with two or more spaces is shown verbatim, which in practice means bullet lists
    (``*``, ``-``, ``+``, ``o``, ``•``), continuation lines of a bullet, or the odd table or code.
    We keep every word: a paragraph becomes one line; each bullet item starts with a
    normalised ``*`` marker and takes its deeper-indented continuation lines; other verbatim
    lines are joined with single spaces. Text is NFKC-normalised; whitespace collapsed.
    """
    paragraphs, segments = [], []
    bullet_indent = None  # indentation of the current bullet marker, None outside a bullet item

    def close():
        nonlocal segments, bullet_indent
        text = normalise(" ".join(segments))
        if text:
            paragraphs.append(text)
        segments, bullet_indent = [], None

    for raw in lines:
        body = raw[1:] if raw[:1] in (" ", "\t") else raw
        if body.strip() == ".":
            close()
            continue
        indent = len(body) - len(body.lstrip())
        stripped = body.strip()
        if not stripped:
            continue
        m = BULLET.match(stripped)
        if m:
            segments.append(f"* {m.group(2)}")
            bullet_indent = indent
        elif bullet_indent is not None and indent > bullet_indent:
            segments[-1] += " " + stripped
        else:
            segments.append(stripped)
            bullet_indent = None
    close()
    return paragraphs


def split_description(text):
    """A ``Description-xx`` field value -> (normalised synopsis, list of cleaned paragraphs)."""
    synopsis, _, rest = text.partition("\n")
    return normalise(synopsis), clean_long_description(rest.split("\n") if rest else [])


# ---------------------------------------------------------------------------------------------
# grouping and splitting


def split_of(group, valid_percent, test_percent):
    """test / valid / train by the SHA-1 of the group name (stable across machines and runs)."""
    bucket = int(hashlib.sha1(group.encode("utf-8")).hexdigest()[:8], 16) % 10000 / 100.0
    if bucket < test_percent:
        return "test"
    if bucket < test_percent + valid_percent:
        return "valid"
    return "train"


class _UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller name is the root: group names do not depend on the order
            ra, rb = min(ra, rb), max(ra, rb)
            self.parent[rb] = ra


def extract(source_of, descriptions, args):
    """-> (summarization examples, en-de examples, counts); each example a dict with
    ``split``, ``package``, ``source``, ``target``, ``kind``."""
    counts = Counter()
    entries = _entries(source_of, descriptions["en"], counts)
    _assign_groups(entries, args, counts)
    summ = _summarization_pairs(entries, args, counts)
    pairs = _translation_pairs(entries, descriptions.get("de", {}), args, counts)
    return summ, pairs, counts


def _entries(source_of, en, counts):
    """One entry per English Description-md5 (its packages, source packages, synopsis and paragraphs),
    in a fixed order."""
    counts["translation_en_md5"] = len(en)
    entries = []
    for md5, (text, packages) in en.items():
        packages = sorted(set(packages))
        srcs = sorted({source_of.get(p, p) for p in packages})
        counts["packages_without_Packages_entry"] += sum(p not in source_of for p in packages)
        synopsis, paragraphs = split_description(text)
        entries.append({"md5": md5, "package": packages[0], "source_pkg": srcs[0], "sources": srcs,
                        "synopsis": synopsis, "paragraphs": paragraphs})
    entries.sort(key=lambda e: (e["source_pkg"], e["package"], e["md5"]))
    return entries


def _assign_groups(entries, args, counts):
    """Each entry's ``group`` (source packages, merged when they share a non-boilerplate first paragraph)
    and the ``split`` of that group."""
    uf = _UnionFind()
    first_par = defaultdict(set)
    for e in entries:
        for s in e["sources"]:
            uf.union(e["sources"][0], s)
        if e["paragraphs"] and len(e["paragraphs"][0].split()) >= args.min_source_words:
            first_par[e["paragraphs"][0]].add(e["source_pkg"])
    for par, srcs in first_par.items():
        if 1 < len(srcs) <= args.max_shared_sources:
            srcs = sorted(srcs)
            for s in srcs[1:]:
                uf.union(srcs[0], s)
    for e in entries:
        e["group"] = uf.find(e["source_pkg"])
        e["split"] = split_of(e["group"], args.valid_percent, args.test_percent)
    counts["groups"] = len({e["group"] for e in entries})
    counts["source_packages"] = len({e["source_pkg"] for e in entries})


def _summarization_pairs(entries, args, counts):
    """Summarization examples: long description -> synopsis, each drop counted by its reason."""
    summ, seen_source, per_source = [], set(), Counter()
    for e in entries:
        source = " ".join(e["paragraphs"])
        if not e["synopsis"]:
            counts["summ_drop_no_synopsis"] += 1
        elif not source:
            counts["summ_drop_no_long_description"] += 1
        elif len(source.split()) < args.min_source_words:
            counts["summ_drop_short_source"] += 1
        elif source in seen_source:
            counts["summ_drop_duplicate_source"] += 1
        elif per_source[e["source_pkg"]] >= args.max_per_source:
            counts["summ_drop_over_max_per_source"] += 1
        else:
            seen_source.add(source)
            per_source[e["source_pkg"]] += 1
            summ.append({"split": e["split"], "package": e["package"], "group": e["group"], "source": source,
                         "target": e["synopsis"], "kind": "description"})
    counts["summ_pairs"] = len(summ)
    return summ


def _translation_pairs(entries, de, args, counts):
    """en-de examples: the DDTP translations under the same Description-md5, synopsis and paragraph by
    paragraph, each drop counted by its reason."""
    counts["translation_de_md5"] = len(de)
    pairs, seen_en = [], set()
    for e in entries:
        if e["md5"] not in de:
            continue
        counts["de_matched_md5"] += 1
        syn_de, pars_de = split_description(de[e["md5"]][0])
        candidates = [("synopsis", e["synopsis"], syn_de)]
        if len(pars_de) == len(e["paragraphs"]):
            candidates += [("paragraph", a, b) for a, b in zip(e["paragraphs"], pars_de)]
        else:
            counts["de_paragraph_count_mismatch"] += 1
        for kind, a, b in candidates:
            if not a or not b:
                counts[f"de_drop_empty_{kind}"] += 1
            elif a == b:
                counts[f"de_drop_untranslated_{kind}"] += 1
            elif max(len(a.split()), len(b.split())) > args.max_pair_words:
                counts[f"de_drop_long_{kind}"] += 1
            elif a in seen_en:
                counts[f"de_drop_duplicate_{kind}"] += 1
            else:
                seen_en.add(a)
                counts[f"de_{kind}_pairs"] += 1
                pairs.append({"split": e["split"], "package": e["package"], "group": e["group"], "source": a,
                              "target": b, "kind": kind})
    return pairs


def to_raw_splits(examples):
    out = {}
    for split in SPLITS:
        ex = [x for x in examples if x["split"] == split]
        if not ex:
            raise InputError(f"the {split} split is empty ({len(examples)} examples in all): too little data "
                             f"for --valid-percent/--test-percent (tiny lists?)")
        out[split] = RawSplit([x["source"] for x in ex], [x["target"] for x in ex],
                              (lambda ex: lambda i: f"package {ex[i]['package']} ({ex[i]['kind']})")(ex))
    return out


def write_meta(examples, out, max_examples):
    """``text/{split}.package``, ``.group`` and ``.kind``: where each line came from (aligned with
    text/): the binary package, the split group (the source package merged with those sharing its
    text; a group is never in two splits) and the kind of text."""
    for split in SPLITS:
        ex = [x for x in examples if x["split"] == split][:max_examples]
        for field, suffix in (("package", "package"), ("group", "group"), ("kind", "kind")):
            (Path(out) / "text" / f"{split}.{suffix}").write_text("".join(x[field] + "\n" for x in ex))


# ---------------------------------------------------------------------------------------------
# the command line


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="preprocess/debian.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="output directory (apt/, summarization/, en-de/, corpus.json)")
    g = parser.add_argument_group("Debian lists")
    g.add_argument("--lists-dir", type=Path,
                   help="read these Packages / Translation-* files instead of fetching with apt-get update")
    add_apt_args(g, arch_help="architecture of the Packages file (default amd64)", refresh_lists=False)
    g.add_argument("--languages", default="en,de", help="Translation files to fetch/read (default en,de; en is required)")
    g = parser.add_argument_group("corpus")
    g.add_argument("--valid-percent", type=float, default=4.0, help="share of groups in valid (default 4)")
    g.add_argument("--test-percent", type=float, default=4.0, help="share of groups in test (default 4)")
    g.add_argument("--min-source-words", type=int, default=10,
                   help="summarization: drop long descriptions shorter than this (default 10)")
    g.add_argument("--max-per-source", type=int, default=3,
                   help="summarization: at most this many descriptions per source package, taken in "
                        "package-name order (default 3; templated families such as tesseract-lang have 100+)")
    g.add_argument("--max-shared-sources", type=int, default=5,
                   help="merge source packages into one split group when their descriptions share a first "
                        "paragraph, unless more than this many do (boilerplate; default 5)")
    g.add_argument("--max-pair-words", type=int, default=250,
                   help="en-de: drop pairs with a side longer than this many words (default 250: long "
                        "verbatim lists such as font names)")
    add_common_args(parser, default_bpe="sentencepiece", default_vocab=8000)
    parser.set_defaults(truncate_source=400)
    args = parser.parse_args(argv)
    check_common_args(args)
    languages = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    if "en" not in languages:
        raise ConfigError("--languages must include en (the English descriptions)")
    if not (0 <= args.valid_percent and 0 <= args.test_percent and args.valid_percent + args.test_percent < 100):
        raise ConfigError("--valid-percent and --test-percent must be >= 0 and sum to less than 100")
    out = args.out
    for sub in ("summarization", "en-de"):  # before fetching: refuse to overwrite without --force
        check_out(out / sub, args.force, remove=False)
    if args.lists_dir is not None:
        lists, origin = args.lists_dir, {"lists_dir": str(args.lists_dir)}
    else:
        lists = apt_update(out / "apt", args.mirror, args.suite, args.components.split(","), languages,
                           args.arch, args.keyring)
        origin = {"mirror": args.mirror, "suite": args.suite, "components": args.components, "arch": args.arch}
    found = find_lists(lists, languages)
    release = sorted(Path(lists).glob("*InRelease"))
    if release:
        m = re.search(r"^Date: (.*)$", read_text(release[0]), re.M)
        origin["release_date"] = m.group(1) if m else None
    origin["files"] = {k: [p.name for p in v] for k, v in found.items()}
    source_of, descriptions = read_lists(found, languages)
    summ, pairs, counts = extract(source_of, descriptions, args)
    if "de" not in languages or not pairs:
        raise InputError("no en-de pairs: the lists hold no Translation-de matching Translation-en "
                         "(pass --languages en,de and check the lists)")
    raw_summ, raw_pairs = to_raw_splits(summ), to_raw_splits(pairs)
    split_counts = {
        "summarization": {s: len(raw_summ[s]) for s in SPLITS},
        "en-de": {s: dict(Counter(x["kind"] for x in pairs if x["split"] == s)) for s in SPLITS},
    }
    record = {"origin": origin, "counts": dict(sorted(counts.items())), "splits": split_counts,
              "options": {k: getattr(args, k) for k in ("valid_percent", "test_percent", "min_source_words",
                                                         "max_per_source", "max_shared_sources",
                                                         "max_pair_words", "truncate_source",
                                                         "truncate_source_subwords")}}
    print(json.dumps(record, indent=2))
    out.mkdir(parents=True, exist_ok=True)
    build("debian-summarization", raw_summ, out / "summarization", args, langs=("source", "target"),
          extra={"debian": record})
    write_meta(summ, out / "summarization", args.max_examples)
    args.truncate_source = args.truncate_source_subwords = None  # translation sources are never truncated
    build("debian-en-de", raw_pairs, out / "en-de", args, langs=("en", "de"), extra={"debian": record})
    write_meta(pairs, out / "en-de", args.max_examples)
    (out / "corpus.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
