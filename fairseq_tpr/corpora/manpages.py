"""Debian manual pages as an extractive-summarization corpus: the DESCRIPTION section is the
document, the one-line summary of the NAME section (``ls - list directory contents``) its reference.

    preprocess/manpages.sh OUT [--packages manpages,coreutils,...] [--max-sentences 40] [--seed 1]
    preprocess/manpages.sh OUT --pages-dir DIR        # pages already on disk, no apt

(the same as ``python -m fairseq_tpr.corpora.manpages``). The steps:

1. **Fetch** (skipped with ``--pages-dir``): ``apt-get update`` into the private lists directory
   ``OUT/apt/`` (:func:`fairseq_tpr.corpora.debian.apt_update`: its own configuration, the
   system's apt state never read or written), ``apt-get download`` of every package of
   ``--packages`` (default :data:`DEFAULT_PACKAGES`, binary packages of Debian main that ship
   English manual pages) into ``OUT/debs/`` with the same configuration (a .deb already there is
   not fetched again), and ``dpkg-deb -x`` of each, of which ``usr/share/man/`` is kept in
   ``OUT/pages/PACKAGE/``; nothing is installed. ``OUT/pages/packages.tsv`` records package,
   source package and version of each.
2. **Find** the English pages of every package directory: the files under
   ``usr/share/man/man*/`` (localised trees such as ``usr/share/man/de/`` are left out), plain or
   ``.gz``. Symbolic links and ``.so`` pages (one line naming another page) are other names of a
   page and are skipped (counted).
3. **Render** each page with groff (``groff -k -t -mandoc -Tutf8``: man(7) and mdoc(7) macros,
   tables, no pager, no ``man``), one paragraph per line (``-rLL`` very long), hyphenation off,
   no bold or underline; typographic dashes and quotes become ASCII ones and the text is NFKC
   normalised. The rendered text is kept in ``OUT/rendered/`` (a rerun renders nothing again).
   groff comes from the Debian package ``groff-base`` (``scripts/system_deps.sh``).
4. **Read** the NAME and DESCRIPTION sections (:func:`sections`): the reference is the text of
   the NAME section after its first dash; the document is the DESCRIPTION's sentences
   (:func:`description_sentences`: its paragraphs in order, sub-headings and unfilled text such as
   code examples left out (:func:`sections`), each cut into sentences after
   ``.``, ``!`` or ``?`` followed by a space and an upper-case letter, digit, quote or bracket,
   as :mod:`fairseq_tpr.corpora.debian_extractive` cuts Debian descriptions; a paragraph that
   does not end a sentence is a unit of its own, e.g. an option and its explanation), the first
   ``--max-sentences`` of them, stopping before the first sentence longer than
   ``--max-sentence-words`` words (the RST parser's limit is 100).
5. **Keep** pages with a reference and at least ``--min-sentences`` sentences; **deduplicate**
   pages with the same document (the first in package and path order is kept); keep at most
   ``--max-per-source`` pages per source package (a seeded sample: large families such as the
   OpenSSL or X11 function pages would fill the corpus otherwise).
6. **Split** by source package (``manpages`` and ``manpages-dev`` come from one source, and pages
   of one source share text): the source packages, shuffled with ``--seed``, go to test until it
   holds ``--test-percent`` of the pages, then to valid until ``--valid-percent``, the rest to
   train.

Output: ``OUT/{train,valid,test}.jsonl``, one page per line, ``{"units": [sentences], "summary":
reference, "page": "ls(1)", "package": ..., "source": ...}``: the input layout of
``preprocess/rst_parse.sh OUT/SPLIT.jsonl OUT/SPLIT.tree`` (the parser keeps these sentences) and
of ``preprocess/extractive.py --trainpref OUT/train ...``; ``OUT/corpus.json`` keeps the counts
(what was dropped and why), the options and the packages, and the counts are printed.

Errors: a missing ``apt-get``, ``dpkg-deb`` or ``groff`` is a DependencyError saying what to
install; a package apt cannot find, an unreadable page directory or a split left empty an
InputError; a bad option a ConfigError.
"""
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from ..errors import ConfigError, DependencyError, InputError
from .debian import add_apt_args, apt_update
from .debian_extractive import SENT
from .rawio import SPLITS, normalise
from ..helpdoc import doc_parser

# Binary packages of Debian 12 (bookworm) main that ship English manual pages with prose
# DESCRIPTION sections, from many source packages (the split is by source package): the C library
# and system calls (manpages, manpages-dev), GNU and Linux tools, Perl, Tcl/Tk, Erlang, OpenSSL,
# X11, curl, systemd, git, Debian's own tools and some 80 CPAN modules. Every one gave at least
# one page to the corpus (Debian 12 packages, with the default options).
DEFAULT_PACKAGES = (
    "manpages", "manpages-dev", "coreutils", "util-linux", "bsdutils", "mount", "fdisk", "perl-doc",
    "libperl5.36", "libssl-doc", "openssl", "git-man", "libx11-doc", "libxext-dev", "libxi-dev",
    "libxrandr-dev", "libxtst-dev", "ncurses-bin", "tcl8.6-doc", "tk8.6-doc", "tcllib", "libsystemd-dev",
    "systemd", "udev", "debhelper", "devscripts", "dpkg-dev", "dpkg", "apt", "libcurl4-doc", "libpam-modules",
    "libpam0g-dev", "libbsd-dev", "libselinux1-dev", "postfix", "groff", "gawk", "make", "tar", "findutils",
    "iproute2", "graphviz", "libpcap0.8-dev", "erlang-manpages", "texlive-binaries", "samba",
    "samba-common-bin", "slapd", "ldap-utils", "libldap-dev", "libsasl2-dev", "sg3-utils", "nvme-cli", "lvm2",
    "e2fsprogs", "xfsprogs", "btrfs-progs", "nmh", "mutt", "zsh-common", "procps", "psmisc", "sysvinit-utils",
    "openssh-client", "openssh-server", "rsync", "cups-client", "cups-daemon", "nfs-common", "mtools",
    "libzmq3-dev", "libfabric-dev", "liburing-dev", "libibverbs-dev", "librdmacm-dev", "libpcre2-dev",
    "libtiff-dev", "libkeyutils-dev", "libseccomp-dev", "libtirpc-dev", "libaudit-dev", "libcap-dev",
    "libmoose-perl", "libwww-perl", "libdbi-perl", "libtemplate-perl", "libmojolicious-perl",
    "libdatetime-perl", "libtest-most-perl", "libcatalyst-perl", "libio-socket-ssl-perl", "libxml-libxml-perl",
    "libnet-dns-perl", "libdevel-nytprof-perl", "libpadwalker-perl", "libtest2-suite-perl",
    "libmodule-build-perl", "libpath-tiny-perl", "libtype-tiny-perl", "libfile-find-rule-perl",
    "libjson-pp-perl", "libyaml-libyaml-perl", "libtext-csv-perl", "libdata-dumper-concise-perl",
    "libemail-mime-perl", "libmime-tools-perl", "libterm-readline-gnu-perl", "libanyevent-perl", "libpoe-perl",
    "libgtk3-perl", "libglib-perl", "libmail-box-perl", "libnet-server-perl", "libdancer2-perl",
    "libplack-perl", "librose-db-object-perl", "libdbix-class-perl", "libsql-translator-perl",
    "libhtml-mason-perl", "libbio-perl-perl", "libmath-bigint-perl", "libtime-moment-perl",
    "libparams-validate-perl", "libimage-exiftool-perl", "libpdf-api2-perl", "libgd-perl", "libnet-ldap-perl",
    "libauthen-sasl-perl", "libmoo-perl", "libexporter-tiny-perl", "libgetopt-long-descriptive-perl",
    "libapp-cmd-perl", "libdist-zilla-perl", "libpod-weaver-perl", "libsoftware-license-perl",
    "liblog-log4perl-perl", "libconfig-model-perl", "libparse-recdescent-perl", "libregexp-common-perl",
    "libdate-manip-perl", "libxml-twig-perl", "libhtml-parser-perl", "liburi-perl", "libcgi-pm-perl",
    "libev-perl", "libnet-ssleay-perl", "libsnmp-dev", "snmp", "x11-xserver-utils", "xorg-docs-core",
    "xserver-xorg-core", "screen", "tmux", "sudo", "passwd", "login", "cron", "at", "less", "man-db", "file",
    "strace", "ltrace", "ffmpeg", "sox", "alsa-utils", "sqlite3", "apache2-utils", "bind9-dnsutils",
    "net-tools", "iputils-ping", "isc-dhcp-client", "openvpn", "wireguard-tools", "smartmontools", "hdparm",
    "parted", "gdisk", "sysstat", "iptables", "tcpdump", "socat", "mercurial-common", "subversion", "nano",
    "ed", "bc", "m4", "bison", "flex", "autoconf", "automake", "pkgconf", "quilt", "reprepro",
)

PAGE_NAME = re.compile(r"^(?P<name>.+)\.(?P<section>[0-9n][A-Za-z0-9_+-]*)(?:\.gz)?$")
SO_LINE = re.compile(r"^\s*\.so\s+\S+\s*$")
# what groff -Tutf8 writes for ASCII characters of the source, and typographic quotes and dashes
TYPOGRAPHY = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": " - ",
                            "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                            "\u00b4": "'", "\u02dc": "~", "\u02c6": "^", "\u00a0": " "})
DASH = re.compile(r"\s+-{1,2}\s+|^-{1,2}\s+|\s+-{1,2}$")


# ---------------------------------------------------------------------------------------------
# fetching


def _apt_env(apt_dir):
    """The environment of :func:`fairseq_tpr.corpora.debian.apt_update`'s private apt configuration."""
    return dict(os.environ, APT_CONFIG=str(Path(apt_dir).resolve() / "apt.conf"), LC_ALL="C")


def _need(tool, package):
    path = shutil.which(tool)
    if path is None:
        raise DependencyError(f"{tool} not found: install the Debian package {package} (scripts/system_deps.sh), "
                              f"or pass --pages-dir DIR with pages already extracted")
    return path


def fetch(out, packages, args, progress=True):
    """``apt-get update`` into ``out/apt``, ``apt-get download`` into ``out/debs``, ``dpkg-deb -x``
    into ``out/pages/PACKAGE``; returns the pages directory."""
    from tqdm import tqdm

    apt_get, dpkg_deb = _need("apt-get", "apt"), _need("dpkg-deb", "dpkg")
    apt_dir, debs, pages = out / "apt", out / "debs", out / "pages"
    if args.refresh_lists or not (apt_dir / "apt.conf").is_file() or not any((apt_dir / "lists").glob("*Packages")):
        apt_update(apt_dir, args.mirror, args.suite, args.components.split(","), ["en"], args.arch, args.keyring)
    env = _apt_env(apt_dir)
    debs.mkdir(parents=True, exist_ok=True)
    pages.mkdir(parents=True, exist_ok=True)
    rows, missing = [], []
    for pkg in tqdm(packages, desc="apt-get download", unit="pkg", file=sys.stderr, disable=not progress):
        have = sorted(debs.glob(f"{pkg}_*.deb"))
        if not have:
            proc = subprocess.run([apt_get, "download", pkg], cwd=debs, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                missing.append(f"{pkg} ({' '.join(proc.stderr.split())[:160]})")
                continue
            have = sorted(debs.glob(f"{pkg}_*.deb"))
            if not have:
                missing.append(f"{pkg} (apt-get download wrote no {pkg}_*.deb)")
                continue
        deb = have[-1]
        fields = subprocess.run([dpkg_deb, "-f", str(deb), "Package", "Source", "Version"], capture_output=True,
                                text=True)
        if fields.returncode != 0:
            raise InputError(f"{deb}: not a Debian package ({fields.stderr.strip()}): delete it and run again")
        info = dict(line.split(": ", 1) for line in fields.stdout.splitlines() if ": " in line)
        source = info.get("Source", pkg).split()[0]
        target = pages / pkg
        if not (target / ".extracted").is_file():
            shutil.rmtree(target, ignore_errors=True)
            tmp = pages / f".tmp-{pkg}"
            shutil.rmtree(tmp, ignore_errors=True)
            proc = subprocess.run([dpkg_deb, "-x", str(deb), str(tmp)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise InputError(f"{deb}: dpkg-deb -x failed ({proc.stderr.strip()}): delete it and run again")
            man = tmp / "usr" / "share" / "man"  # only the manual pages are kept
            (target / "usr" / "share").mkdir(parents=True)
            if man.is_dir():
                man.rename(target / "usr" / "share" / "man")
            shutil.rmtree(tmp)
            (target / ".extracted").write_text(deb.name + "\n")
        rows.append((pkg, source, info.get("Version", "")))
    if missing:
        raise InputError(f"apt-get download failed for {len(missing)} of {len(packages)} packages of --packages: "
                         f"{'; '.join(missing[:5])} (is the package in {args.suite} {args.components}? drop it "
                         f"from --packages)")
    (pages / "packages.tsv").write_text("".join(f"{p}\t{s}\t{v}\n" for p, s, v in rows))
    return pages


# ---------------------------------------------------------------------------------------------
# finding and rendering pages


def read_packages_tsv(pages_dir):
    """``{package: source}`` from ``pages_dir/packages.tsv`` (package TAB source [TAB version]);
    a package directory without a row is its own source."""
    path = Path(pages_dir) / "packages.tsv"
    sources = {}
    if path.is_file():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cols = line.split("\t")
            if len(cols) < 2 or not cols[0] or not cols[1]:
                raise InputError(f"{path} line {n}: expected 'package<TAB>source[<TAB>version]', got {line[:60]!r}")
            sources[cols[0]] = cols[1]
    return sources


def find_pages(pages_dir, counts):
    """``[(package, path relative to the package directory, section)]`` of the English pages under
    ``pages_dir/PACKAGE/usr/share/man/man*/`` (module docstring), sorted; symbolic links counted."""
    pages_dir = Path(pages_dir)
    if not pages_dir.is_dir():
        raise InputError(f"--pages-dir {pages_dir} is not a directory")
    packages = sorted(p for p in pages_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not packages:
        raise InputError(f"{pages_dir}: no package directories (expected PACKAGE/usr/share/man/man1/NAME.1[.gz], "
                         f"what dpkg-deb -x writes)")
    found = []
    for pkg in packages:
        man = pkg / "usr" / "share" / "man"
        if not man.is_dir():
            counts["packages_without_man_pages"] += 1
            continue
        for sec_dir in sorted(d for d in man.iterdir() if d.is_dir() and d.name.startswith("man")):
            for f in sorted(sec_dir.iterdir()):
                m = PAGE_NAME.match(f.name)
                if f.is_symlink():
                    counts["skipped_symlink"] += 1
                elif f.is_file() and m:
                    found.append((pkg.name, str(f.relative_to(pkg)), m.group("section")))
                else:
                    counts["skipped_not_a_page"] += 1
    return found


def read_page(path):
    """The roff source of a page (gunzipped when ``.gz``), decoded as UTF-8, else Latin-1."""
    data = Path(path).read_bytes()
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise InputError(f"{path}: not a readable gzip file ({e})") from None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def is_so_link(source):
    """True when the page is only a ``.so`` line (another name of a page), comments aside."""
    lines = [x for x in source.splitlines() if x.strip() and not x.lstrip().startswith(('.\\"', "'\\\"", '\\"'))]
    return len(lines) == 1 and bool(SO_LINE.match(lines[0]))


GROFF_ARGS = ["-k", "-t", "-mandoc", "-Tutf8", "-P-cbou", "-rLL=4000n", "-rLT=78n", "-rHY=0", "-rcR=1"]


def render(source, groff, timeout=60):
    """The page rendered to plain text by groff (module docstring); raises RuntimeError with
    groff's message when it fails."""
    proc = subprocess.run([groff] + GROFF_ARGS, input=source.encode("utf-8"), capture_output=True, timeout=timeout,
                          env=dict(os.environ, LC_ALL="C.UTF-8"))
    if proc.returncode != 0:
        raise RuntimeError(" ".join(proc.stderr.decode("utf-8", "replace").split())[:200] or
                           f"groff exit status {proc.returncode}")
    # lines padded to the very long line length (headers, centred text) lose their trailing spaces
    return "\n".join(line.rstrip() for line in proc.stdout.decode("utf-8", "replace").split("\n"))


# ---------------------------------------------------------------------------------------------
# reading the rendered text


def _clean(text):
    return normalise(text.translate(TYPOGRAPHY))


SUBHEADING_INDENT = 3


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def sections(rendered, counts=None):
    """``{HEADING: [paragraph, ...]}`` of a rendered page. A heading is a line that starts in column
    0 (not the page header and footer, the first and last such lines). The lines of a section form
    paragraphs at blank lines; groff wrote a filled paragraph as one line (``-rLL``), so:

    - a line indented by 1 to 3 columns is a sub-heading (groff puts ``.SS``/``.Ss`` 3 columns in,
      the text of a section 7 (man) or 5 (mdoc) columns in): left out, and it ends the paragraph
      before it;
    - a paragraph of one line is that line; a tagged paragraph (``.TP``/``.IP``: a tag line and
      lines indented deeper) is its lines joined by spaces (``-a, --all do not ignore ...``);
    - any other paragraph of several lines is unfilled text (``.nf``/``.EX``: code, tables, a
      synopsis) and is left out (counted as ``verbatim_paragraphs`` in ``counts``).

    Text is made plain (typographic dashes and quotes to ASCII, NFKC, white space collapsed)."""
    lines = rendered.replace("\r", "").split("\n")
    top = [i for i, x in enumerate(lines) if x.strip() and not x[:1].isspace()]
    if len(top) < 3:  # the page header, at least one heading, the page footer
        return {}
    top, foot = top[1:-1], top[-1]  # header "LS(1)  User Commands  LS(1)", footer the last line
    counts = counts if counts is not None else Counter()
    out = {}
    for k, i in enumerate(top):
        body = lines[i + 1:top[k + 1] if k + 1 < len(top) else foot]
        paras, cur = [], []

        def close():
            if len(cur) == 1 or (cur and all(_indent(x) > _indent(cur[0]) for x in cur[1:])):
                text = _clean(" ".join(x.strip() for x in cur))
                if text:
                    paras.append(text)
            elif cur:
                counts["verbatim_paragraphs"] += 1
            cur.clear()

        for x in body:
            if not x.strip():
                close()
            elif _indent(x) <= SUBHEADING_INDENT:
                close()
                counts["subheadings"] += 1
            else:
                cur.append(x.rstrip())
        close()
        out.setdefault(_clean(lines[i]).upper(), paras)
    return out


def name_summary(paragraphs):
    """The text after the first dash of the NAME section (``ls - list directory contents`` ->
    ``list directory contents``); None when it has no dash or nothing after it."""
    text = " ".join(paragraphs)
    m = DASH.search(text)
    if not m:
        return None
    rest = text[m.end():].strip()
    return rest or None


def description_sentences(paragraphs, max_sentences, max_words):
    """The DESCRIPTION's sentences (module docstring, step 4)."""
    out = []
    for p in paragraphs:
        for s in SENT.split(p):
            s = s.strip()
            if not s:
                continue
            if len(s.split()) > max_words or len(out) >= max_sentences:
                return out
            out.append(s)
    return out


# ---------------------------------------------------------------------------------------------
# the corpus


def build_documents(pages_dir, out, args, progress=True):
    """-> (documents, counts): a dict per kept page (before the per-source cap and the split)."""
    from tqdm import tqdm

    groff = _need("groff", "groff-base")
    counts = Counter()
    sources = read_packages_tsv(pages_dir)
    found = find_pages(pages_dir, counts)
    counts["pages_found"] = len(found)
    if not found:
        raise InputError(f"{pages_dir}: no manual pages under PACKAGE/usr/share/man/man*/")
    rendered_dir = out / "rendered"
    docs, seen = [], set()
    failures = []
    for pkg, rel, section in tqdm(found, desc="groff", unit="page", file=sys.stderr, mininterval=2.0,
                                  disable=not progress):
        path = Path(pages_dir) / pkg / rel
        cache = rendered_dir / pkg / (rel + ".txt")
        if cache.is_file():
            text = cache.read_text(encoding="utf-8")
        else:
            source, _ = read_page(path)
            if is_so_link(source):
                counts["skipped_so_link"] += 1
                continue
            try:
                text = render(source, groff)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                counts["drop_groff_failed"] += 1
                failures.append(f"{pkg}/{rel}\t{' '.join(str(e).split())}")
                continue
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(cache.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(cache)
        secs = sections(text, counts)
        name = PAGE_NAME.match(Path(rel).name).group("name")
        if "NAME" not in secs:
            counts["drop_no_name_section"] += 1
            continue
        summary = name_summary(secs["NAME"])
        if summary is None:
            counts["drop_no_summary"] += 1
            continue
        if "DESCRIPTION" not in secs:
            counts["drop_no_description"] += 1
            continue
        units = description_sentences(secs["DESCRIPTION"], args.max_sentences, args.max_sentence_words)
        if len(units) < args.min_sentences:
            counts["drop_short_description"] += 1
            continue
        key = "\n".join(units)
        if key in seen:
            counts["drop_duplicate"] += 1
            continue
        seen.add(key)
        docs.append({"units": units, "summary": summary, "page": f"{name}({section})", "package": pkg,
                     "source": sources.get(pkg, pkg)})
    if failures:
        (out / "groff_failures.tsv").write_text("\n".join(failures) + "\n", encoding="utf-8")
    counts["pages_rendered_ok"] = counts["pages_found"] - counts["skipped_so_link"] - counts["drop_groff_failed"]
    return docs, counts


def cap_per_source(docs, max_per_source, seed, counts):
    """At most ``max_per_source`` documents per source package, a seeded sample, kept in input order."""
    by_source = {}
    for i, d in enumerate(docs):
        by_source.setdefault(d["source"], []).append(i)
    rng = random.Random(seed)
    keep = set()
    for src in sorted(by_source):
        idx = by_source[src]
        if len(idx) > max_per_source:
            counts["drop_over_max_per_source"] += len(idx) - max_per_source
            idx = rng.sample(idx, max_per_source)
        keep.update(idx)
    return [d for i, d in enumerate(docs) if i in keep]


def assign_splits(docs, valid_percent, test_percent, seed):
    """``{source: split}``: source packages in a seeded order fill test, then valid, then train (module
    docstring, step 6)."""
    size = Counter(d["source"] for d in docs)
    order = sorted(size)
    random.Random(seed).shuffle(order)
    total, filled, out = len(docs), Counter(), {}
    for src in order:
        if filled["test"] < test_percent / 100.0 * total:
            split = "test"
        elif filled["valid"] < valid_percent / 100.0 * total:
            split = "valid"
        else:
            split = "train"
        out[src] = split
        filled[split] += size[src]
    return out


def main(argv=None):
    parser = doc_parser(__doc__, prog="preprocess/manpages.sh")
    parser.add_argument("out", type=Path, help="output directory (SPLIT.jsonl, corpus.json; apt/, debs/, pages/, "
                                               "rendered/ when fetching)")
    g = parser.add_argument_group("pages")
    g.add_argument("--pages-dir", type=Path,
                   help="read PACKAGE/usr/share/man/man*/ pages from here (and packages.tsv: package, source) "
                        "instead of fetching")
    g.add_argument("--packages", help=f"comma-separated binary packages to fetch (default: the "
                                      f"{len(DEFAULT_PACKAGES)} of DEFAULT_PACKAGES)")
    add_apt_args(g)
    g = parser.add_argument_group("corpus")
    g.add_argument("--min-sentences", type=int, default=5, help="drop pages whose DESCRIPTION has fewer (default 5)")
    g.add_argument("--max-sentences", type=int, default=40, help="cut the DESCRIPTION after this many (default 40)")
    g.add_argument("--max-sentence-words", type=int, default=100,
                   help="cut the DESCRIPTION before the first longer sentence (default 100, the RST parser's limit)")
    g.add_argument("--max-per-source", type=int, default=100,
                   help="at most this many pages per source package, a seeded sample (default 100)")
    g.add_argument("--valid-percent", type=float, default=8.0, help="share of pages in valid (default 8)")
    g.add_argument("--test-percent", type=float, default=8.0, help="share of pages in test (default 8)")
    g.add_argument("--seed", type=int, default=1, help="seed of the per-source sample and the split (default 1)")
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    for flag in ("min_sentences", "max_sentences", "max_sentence_words", "max_per_source"):
        if getattr(args, flag) < 1:
            raise ConfigError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.min_sentences > args.max_sentences:
        raise ConfigError("--min-sentences is larger than --max-sentences: no page could be kept")
    if not (0 < args.valid_percent and 0 < args.test_percent and args.valid_percent + args.test_percent < 100):
        raise ConfigError("--valid-percent and --test-percent must be > 0 and sum to less than 100")
    packages = ([p.strip() for p in args.packages.split(",") if p.strip()] if args.packages
                else list(DEFAULT_PACKAGES))
    if args.pages_dir is None and not packages:
        raise ConfigError("--packages is empty")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    progress = not args.no_progress
    if args.pages_dir is not None:
        pages_dir, origin = args.pages_dir, {"pages_dir": str(args.pages_dir)}
    else:
        pages_dir = fetch(out, packages, args, progress)
        origin = {"mirror": args.mirror, "suite": args.suite, "components": args.components, "arch": args.arch,
                  "packages": packages}
    docs, counts = build_documents(pages_dir, out, args, progress)
    counts["documents_before_cap"] = len(docs)
    docs = cap_per_source(docs, args.max_per_source, args.seed, counts)
    split_of = assign_splits(docs, args.valid_percent, args.test_percent, args.seed)
    stats, parts = {}, {s: [d for d in docs if split_of[d["source"]] == s] for s in SPLITS}
    for split in SPLITS:
        if not parts[split]:
            raise InputError(f"the {split} split is empty ({len(docs)} pages from {len(split_of)} source package(s) "
                             f"in all): too few source packages for --valid-percent/--test-percent")
    for split in SPLITS:
        part = parts[split]
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for d in part:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
        stats[split] = {
            "documents": len(part), "source_packages": len({d["source"] for d in part}),
            "sentences_per_document": round(sum(len(d["units"]) for d in part) / len(part), 2),
            "summary_words": round(sum(len(d["summary"].split()) for d in part) / len(part), 2),
            "sources": sorted({d["source"] for d in part}) if split != "train" else None,
        }
    record = {"origin": origin, "counts": dict(sorted(counts.items())), "splits": stats,
              "options": {k: getattr(args, k) for k in ("min_sentences", "max_sentences", "max_sentence_words",
                                                         "max_per_source", "valid_percent", "test_percent", "seed")}}
    (out / "corpus.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"counts": record["counts"]}, indent=1), file=sys.stderr)
    for split in SPLITS:
        s = stats[split]
        print(f"{split}: {s['documents']} pages from {s['source_packages']} source packages, "
              f"{s['sentences_per_document']} sentences per document, {s['summary_words']} words per summary "
              f"-> {out / (split + '.jsonl')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
