"""Arguments and output files of the ``seer`` command: argument types (a bad value ends as
``seer CMD: error: argument X: ...``, exit 2) and the atomic write of what a command was asked to write."""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path

from seer._checks import MAX_WORKERS
from seer._io import atomic_write_text, check_output_path
from seer._text import for_terminal, markup_safe
from seer.errors import OutputPathError

__all__ = ["MAX_ENTITIES", "MAX_SEED", "MAX_STEP_LENGTH", "MAX_WORKERS", "OUTPUT_HELP", "PLOT_FORMATS", "bounded_float_arg", "directory_arg", "existing_dir_arg", "int_arg",
           "json_target_arg", "output_path_arg", "plot_path_arg", "positive_float_arg", "sizes_arg", "write_output"]

#: Most entities ``seer trace --entities`` accepts: uav_swarm_v0's largest scenario (xxlarge).
MAX_ENTITIES = 65_536
#: Longest ``seer trace --step-length`` (simulated time per step): a synthetic entity ticks ten
#: times per unit, so a step of 1e300 would never end.
MAX_STEP_LENGTH = 1000.0
#: Largest seed ``seer tune --seed`` accepts (the workload sampler's seeds stay within 64 bits).
MAX_SEED = 2**32 - 1

#: Figure formats --plot accepts (matplotlib picks the writer from the suffix).
PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "webp", "tif", "tiff", "eps", "ps")
OUTPUT_HELP = ("written atomically; an existing symbolic link at this path is refused (not followed), and "
               "its directory must exist")


def int_arg(lo: int, hi: int | None = None):
    """An argparse type: an integer in ``[lo, hi]``."""
    expected = f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not an integer: expected {expected}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{v} is out of range: expected {expected}")
        return v

    return parse


def _shown(text: str) -> str:
    # A value as an error message quotes it: repr (control characters escaped), long ones cut.
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def positive_float_arg(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number: expected a finite number > 0") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is out of range: expected a finite number > 0")
    return v


def bounded_float_arg(hi: float):
    """An argparse type: a finite number in ``(0, hi]``."""
    expected = f"a finite number in (0, {hi:g}]"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number: expected {expected}") from None
        if not (math.isfinite(v) and 0 < v <= hi):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is out of range: expected {expected}")
        return v

    return parse


def output_path_arg(text: str) -> Path:
    """An argparse type: where a new file may be written (see :func:`seer._io.check_output_path`)."""
    try:
        return check_output_path(text, what="output file")
    except OutputPathError as exc:  # it quotes the path: shown as typed, control characters escaped
        raise argparse.ArgumentTypeError(for_terminal(exc)) from None


def plot_path_arg(text: str) -> Path:
    """An argparse type: an output path ending in a figure format, with matplotlib installed."""
    path = output_path_arg(text)
    fmt = path.suffix[1:].lower()
    if fmt not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} does not end in a figure format: expected a name ending in "
                                         f"{', '.join('.' + f for f in PLOT_FORMATS)}")
    if importlib.util.find_spec("matplotlib") is None:
        raise argparse.ArgumentTypeError("writing a plot needs matplotlib: pip install 'seer-marl[bench]'")
    return path


def sizes_arg(text: str) -> list[int]:
    """An argparse type: comma-separated pool sizes, 1 included (sorted, without repeats)."""
    parse = int_arg(1, MAX_WORKERS)
    try:
        sizes = sorted({parse(part.strip()) for part in text.split(",")})
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid ({exc}): expected comma-separated pool sizes "
                                         f"in [1, {MAX_WORKERS}] including 1, e.g. 1,2,4") from None
    if 1 not in sizes:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected pool sizes including 1 "
                                         f"(the reference every speedup is measured against), e.g. 1,2,4")
    return sizes


def directory_arg(text: str) -> Path:
    """An argparse type: a directory, existing or to be created (not an existing file)."""
    p = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty: expected a directory")
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory: expected a directory")
    return p


def existing_dir_arg(text: str) -> Path:
    """An argparse type: an existing directory."""
    p = Path(text)
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not an existing directory")
    return p


def json_target_arg(text: str):
    """An argparse type: ``-`` (standard output) or an output path."""
    return "-" if text == "-" else output_path_arg(text)


def write_output(console, path, text: str, what: str) -> None:
    """Write ``text`` to an output file the command was asked for (atomically) and say where it went."""
    atomic_write_text(path, text, what=what)
    console.print(f"wrote {markup_safe(path)}")
