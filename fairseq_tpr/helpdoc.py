"""The ``--help`` of a command written as its module docstring: one helper for the preamble that
every command's parser starts with (the standard library only, so ``--help`` stays instant)."""
import argparse
from typing import Optional


def doc_parser(doc: str, prog: Optional[str] = None, **kwargs) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` whose description is ``doc``'s first paragraph and whose epilog is the
    rest, both printed as written (``RawDescriptionHelpFormatter``); ``kwargs`` go to the parser."""
    first, _, rest = (doc or "").partition("\n\n")
    return argparse.ArgumentParser(prog=prog, description=first, epilog=rest or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
