"""Atomic checkpoint writes and the diagnosis of damaged checkpoint files.

``fairseq_fixes.fix_atomic_checkpoint_writes`` and ``fairseq_fixes.fix_damaged_checkpoint_load``
install these into fairseq's ``checkpoint_utils``; this module itself patches nothing.

* :func:`atomic_write` writes a file under a temporary name in the same directory, flushes and
  fsyncs it, and renames it over the final name with ``os.replace``: a reader (or a resume after
  a crash) sees the old file or the new one, never a partial one. A write that fails or is
  killed leaves at most ``NAME.tmp`` behind, which no ``checkpoint*.pt`` pattern matches.
* :func:`diagnose` says why a checkpoint that failed to load is damaged (empty, truncated, a
  CRC mismatch, not a checkpoint at all), or ``None`` when its bytes are intact, so that any
  other failure (in particular ``torch.load``'s ``weights_only`` refusal of a checkpoint that
  would run code) is re-raised unchanged. Nothing here unpickles anything.
* :func:`newest_intact_sibling` finds the checkpoint to suggest (or, with
  ``FAIRSEQ_TPR_CHECKPOINT_FALLBACK=1``, to load) instead.
"""
import os
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Callable, Optional

FALLBACK_ENV = "FAIRSEQ_TPR_CHECKPOINT_FALLBACK"
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default format (torch >= 1.6) is a zip archive
PICKLE_MAGIC = b"\x80"  # torch's legacy format starts with a pickle (protocol >= 2)
_COPY_CHUNK = 16 << 20


def _fsync_dir(directory: str) -> None:
    """Make a rename in *directory* durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write: Callable) -> None:
    """Call ``write(f)`` on a binary file ``PATH.tmp``, fsync it and ``os.replace`` it to *path*.

    If *write* raises (or the process dies), *path* keeps its previous content; the temporary
    file is removed when Python gets the chance."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def atomic_copy(src, dst) -> None:
    """Copy *src* to *dst* with :func:`atomic_write`."""
    with open(src, "rb") as source:
        atomic_write(dst, lambda f: shutil.copyfileobj(source, f, _COPY_CHUNK))


def diagnose(path, error: Optional[BaseException] = None) -> Optional[str]:
    """What is wrong with the checkpoint file *path* that failed to load with *error*:
    ``"empty (0 bytes)"``, ``"truncated (...)"``, ``"damaged (...)"``, ``"unreadable (...)"``;
    ``None`` when the file is missing or its bytes are intact (the failure is something else)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(len(ZIP_MAGIC))
    except OSError:
        return None
    if size == 0:
        return "empty (0 bytes)"
    if head == ZIP_MAGIC:
        try:
            with zipfile.ZipFile(path) as archive:
                bad_member = archive.testzip()  # reads every member and checks its CRC
        except zipfile.BadZipFile:
            return f"truncated ({size} bytes; the zip archive has no end record)"
        except Exception as e:  # noqa: BLE001  (zlib/EOF/OSError while reading the members)
            return f"damaged ({size} bytes; {type(e).__name__} while reading the zip archive)"
        if bad_member is not None:
            return f"damaged (CRC mismatch in {bad_member})"
        return None
    if head.startswith(PICKLE_MAGIC):  # legacy (pre-zip) torch format: no checksum to check
        if isinstance(error, (EOFError, struct.error)) or "EOF" in str(error):
            return f"truncated ({size} bytes; the legacy-format pickle ends early)"
        return None
    return f"unreadable ({size} bytes; neither a zip archive nor a pickle, not a PyTorch checkpoint)"


def is_intact(path) -> bool:
    """Whether *path* is a complete zip-format torch checkpoint (every member's CRC checks out).
    Legacy-format files cannot be checked without unpickling them and count as not intact."""
    try:
        with open(path, "rb") as f:
            if f.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            return any(n.endswith("data.pkl") for n in names) and archive.testzip() is None
    except Exception:  # noqa: BLE001
        return False


def newest_intact_sibling(path) -> Optional[Path]:
    """The most recently modified intact ``checkpoint*.pt`` in *path*'s directory, other than
    *path* itself, or ``None``."""
    path = Path(path)
    candidates = []
    for other in path.parent.glob("checkpoint*.pt"):
        try:
            if not other.is_file() or (path.exists() and other.samefile(path)):
                continue
            candidates.append((other.stat().st_mtime, other.name, other))
        except OSError:
            continue
    for _, _, other in sorted(candidates, reverse=True):
        if is_intact(other):
            return other.resolve()
    return None


def fallback_enabled() -> bool:
    return os.environ.get(FALLBACK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def damage_message(path, damage: str, alternative: Optional[Path]) -> str:
    """The :class:`~fairseq_tpr.errors.CheckpointError` message for a damaged *path*."""
    directory = Path(path).resolve().parent
    if alternative is None:
        advice = (f"there is no intact checkpoint*.pt in {directory} to use instead (fairseq-train: remove the "
                  "damaged file to train from scratch; fairseq-generate: pass --path an intact checkpoint)")
    else:
        advice = (f"the newest intact checkpoint in {directory} is {alternative.name}: pass "
                  f"--restore-file {alternative} (fairseq-train) or --path {alternative}, or set "
                  f"{FALLBACK_ENV}=1 to load it automatically")
    return f"checkpoint {path} is {damage}, probably from a write that was interrupted; {advice}"
