#!/usr/bin/env bash
# Documents -> RST discourse trees (Feng & Hirst 2014 parser), one .dis tree per document, resumable.
#
#   bash preprocess/rst_parse.sh INPUT OUT [--workers N] [--timeout S] [--retry-failed] [--no-progress]
#
# INPUT: a directory of documents, a .jsonl file ("units": sentences, or "text") or a text file with
# one document per line; OUT: a directory (e.g. PREFIX.tree/ next to PREFIX.jsonl for
# preprocess/extractive.py --unit edu --units-from-trees). Needs pip install 'fairseq_tpr[rst]', Java
# and Perl (scripts/system_deps.sh). A thin wrapper around fairseq_tpr/corpora/rst_parse.py (`--help`
# lists every option; docs/extractive.md describes the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.rst_parse "$@"
