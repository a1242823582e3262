"""The ``--help`` of a command written as its module docstring: one helper for the preamble that
every command's parser starts with (the standard library only, so ``--help`` stays instant)."""
import argparse
from typing import Optional


def doc_parser(doc: str, prog: Optional[str] = None, epilog: Optional[str] = None,
               **kwargs) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` whose description is ``doc``'s first paragraph and whose epilog is the
    rest (then ``epilog``, when given), both printed as written (``RawDescriptionHelpFormatter``);
    ``kwargs`` go to the parser.

    The one convention of this package's commands (docs/architecture.md, "Commands"): each
    ``cli/NAME.py`` has ``build_parser()``, which makes its parser with this function (its ``--help``
    is the module docstring), and ``main(argv=None)``, which parses with it before importing torch or
    fairseq; ``console = command(main)`` is the console script."""
    first, _, rest = (doc or "").partition("\n\n")
    epilog = "\n\n".join(x for x in (rest, epilog) if x) or None
    return argparse.ArgumentParser(prog=prog, description=first, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def anchor(heading: str) -> str:
    """The anchor of a Markdown heading, as MkDocs (Python-Markdown's toc) and GitHub make it: lower
    case, punctuation dropped, runs of spaces and hyphens one hyphen."""
    import re

    slug = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", slug)
