#!/usr/bin/env bash
# System packages outside pip: Perl's XML::Parser (the official ROUGE-1.5.5 script), Java
# (METEOR 1.5 in pycocoevalcap; the Stanford parser inside the RST parser of preprocess/rst_parse.sh)
# and Perl with its standard modules (the RST parser's sentence splitter, boundary.pl: Getopt::Std),
# and groff (groff-base: preprocess/manpages.sh renders manual pages with it), and Chromium with its
# ChromeDriver (chromium, chromium-driver: the role explorer's browser tests and its screenshot,
# fairseq-tpr-roles html --screenshot).
# On Debian 12 java comes from openjdk-17-jre-headless (default-jre-headless depends on it), perl from
# perl-base and Getopt::Std from perl-modules-5.36 (the perl package depends on both).
# Installs them with apt-get when run as root on Debian/Ubuntu; otherwise prints what is missing
# and how to install it. Never fails the build: only the Perl ROUGE, METEOR and the RST parser
# (and the manual-page corpus) need these, and they say so themselves when run without them.
set -uo pipefail
missing=()
perl -MGetopt::Std -e1 >/dev/null 2>&1 || missing+=(perl)
perl -MXML::Parser -e1 >/dev/null 2>&1 || missing+=(libxml-parser-perl)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v groff >/dev/null 2>&1 || missing+=(groff-base)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages: ${missing[*]}"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; }) \
        && echo "installed: ${missing[*]}" && exit 0
fi
echo "WARNING: missing system packages: ${missing[*]}" >&2
echo "  install them with: sudo apt-get install ${missing[*]}" >&2
echo "  (without them the Perl ROUGE-1.5.5 and METEOR scorers, preprocess/rst_parse.sh and preprocess/manpages.sh report themselves unavailable, and the role explorer's browser tests skip)" >&2
exit 0
