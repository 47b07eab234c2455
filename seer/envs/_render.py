"""numpy-only drawing for the envs' ``rgb_array`` frames: shapes, lines and a
5x7 bitmap font, so a frame can carry its own legend without matplotlib.

Every function draws into an ``(H, W, 3)`` uint8 image in place and clips
at its edges; coordinates are pixels, ``(row, column)``.
"""

from __future__ import annotations

import functools

import numpy as np

# 5x7 glyphs, one string of 7 rows per character ("#" = ink)
_GLYPHS = {
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("####.", "....#", "....#", ".###.", "....#", "....#", "####."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": (".###.", "#....", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "....#", ".###."),
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "F": ("#####", "#....", "#....", "####.", "#....", "#....", "#...."),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".###."),
    "H": ("#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "I": (".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "J": ("..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."),
    "K": ("#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "Q": (".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "U": ("#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "V": ("#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."),
    "X": ("#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"),
    "Y": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
    "Z": ("#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"),
    " ": (".....",) * 7,
    ".": (".....", ".....", ".....", ".....", ".....", ".##..", ".##.."),
    ",": (".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."),
    ":": (".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."),
    "/": ("....#", "....#", "...#.", "..#..", ".#...", "#....", "#...."),
    "-": (".....", ".....", ".....", "#####", ".....", ".....", "....."),
    "+": (".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."),
    "=": (".....", ".....", "#####", ".....", "#####", ".....", "....."),
    "%": ("##..#", "##..#", "...#.", "..#..", ".#...", "#..##", "#..##"),
    "(": ("...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."),
    ")": (".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."),
    "_": (".....", ".....", ".....", ".....", ".....", ".....", "#####"),
    "<": ("...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#."),
    ">": (".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#..."),
}
GLYPH_W, GLYPH_H = 6, 8  # advance per character and line height, in font pixels (before scale)


@functools.lru_cache(maxsize=None)
def _glyph(ch: str) -> np.ndarray:
    rows = _GLYPHS.get(ch.upper(), _GLYPHS[" "])
    return np.array([[c == "#" for c in r] for r in rows], bool)


def text_size(text: str, scale: int = 1) -> tuple[int, int]:
    """Height and width in pixels of ``text`` drawn at ``scale``."""
    return GLYPH_H * scale, max(0, len(text) * GLYPH_W - 1) * scale


def text(img: np.ndarray, y: int, x: int, s: str, colour, scale: int = 1) -> int:
    """Draw ``s`` with its top-left corner at ``(y, x)``; returns the x after it.
    Lower-case letters are drawn as capitals."""
    h, w = img.shape[:2]
    for ch in s:
        g = _glyph(ch)
        if scale > 1:
            g = g.repeat(scale, axis=0).repeat(scale, axis=1)
        gy, gx = np.nonzero(g)
        gy, gx = gy + y, gx + x
        ok = (gy >= 0) & (gy < h) & (gx >= 0) & (gx < w)
        img[gy[ok], gx[ok]] = colour
        x += GLYPH_W * scale
    return x


def fill_rect(img: np.ndarray, y0: int, x0: int, y1: int, x1: int, colour, alpha: float = 1.0) -> None:
    """Fill rows ``y0..y1-1`` and columns ``x0..x1-1`` (blended by ``alpha``)."""
    h, w = img.shape[:2]
    y0, y1, x0, x1 = max(0, y0), min(h, y1), max(0, x0), min(w, x1)
    if y0 >= y1 or x0 >= x1:
        return
    if alpha >= 1.0:
        img[y0:y1, x0:x1] = colour
    else:
        region = img[y0:y1, x0:x1].astype(np.float32)
        img[y0:y1, x0:x1] = (region * (1 - alpha) + np.asarray(colour, np.float32) * alpha).astype(np.uint8)


def rect(img: np.ndarray, y0: int, x0: int, y1: int, x1: int, colour, width: int = 1) -> None:
    """The outline of the box ``[y0, y1) x [x0, x1)``, ``width`` pixels inward."""
    fill_rect(img, y0, x0, y0 + width, x1, colour)
    fill_rect(img, y1 - width, x0, y1, x1, colour)
    fill_rect(img, y0, x0, y1, x0 + width, colour)
    fill_rect(img, y0, x1 - width, y1, x1, colour)


@functools.lru_cache(maxsize=64)
def _disk_offsets(radius: int, ring: int = 0) -> tuple[np.ndarray, np.ndarray]:
    dy, dx = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    d2 = dx * dx + dy * dy
    keep = d2 <= radius * radius + radius  # the +radius rounds the rim like a drawn circle
    if ring:
        inner = radius - ring
        keep &= d2 > inner * inner + inner
    return dy[keep], dx[keep]


def disks(img: np.ndarray, ys, xs, radii, colours, ring: int = 0) -> None:
    """Filled disks (``ring > 0``: rings that wide) at ``(ys, xs)``; ``radii``
    and ``colours`` are one per disk or one for all."""
    ys, xs = np.asarray(ys, np.int64).ravel(), np.asarray(xs, np.int64).ravel()
    if ys.size == 0:
        return
    radii = np.broadcast_to(np.asarray(radii, np.int64), ys.shape)
    colours = np.asarray(colours, np.uint8)
    if colours.ndim == 1:
        colours = np.broadcast_to(colours, (ys.size, 3))
    h, w = img.shape[:2]
    for r in np.unique(radii):  # one vectorised pass per radius
        sel = np.flatnonzero(radii == r)
        oy, ox = _disk_offsets(int(r), ring)
        py = ys[sel, None] + oy[None, :]
        px = xs[sel, None] + ox[None, :]
        col = np.broadcast_to(colours[sel, None, :], (*py.shape, 3))
        ok = (py >= 0) & (py < h) & (px >= 0) & (px < w)
        img[py[ok], px[ok]] = col[ok]


def lines(img: np.ndarray, y0, x0, y1, x1, colour, dash: int = 0) -> None:
    """Straight segments from ``(y0, x0)`` to ``(y1, x1)``, one sample per
    pixel of their longer side (``dash > 0``: dashes of that many pixels)."""
    y0, x0, y1, x1 = (np.asarray(v, np.float64).ravel() for v in (y0, x0, y1, x1))
    if y0.size == 0:
        return
    n = (np.maximum(np.abs(y1 - y0), np.abs(x1 - x0)) + 1).astype(np.int64)
    seg = np.repeat(np.arange(y0.size), n)
    k = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    f = k / np.repeat(np.maximum(n - 1, 1), n)
    yy = np.rint(y0[seg] + f * (y1 - y0)[seg]).astype(np.int64)
    xx = np.rint(x0[seg] + f * (x1 - x0)[seg]).astype(np.int64)
    keep = (yy >= 0) & (yy < img.shape[0]) & (xx >= 0) & (xx < img.shape[1])
    if dash:
        keep &= (k // dash) % 2 == 0
    img[yy[keep], xx[keep]] = colour


def crosses(img: np.ndarray, ys, xs, size: int, colour) -> None:
    """Diagonal crosses (an "x") of half-size ``size`` at ``(ys, xs)``."""
    ys, xs = np.asarray(ys, np.int64).ravel(), np.asarray(xs, np.int64).ravel()
    if ys.size == 0:
        return
    k = np.arange(-size, size + 1)
    for sign in (1, -1):
        py = (ys[:, None] + k[None, :]).ravel()
        px = (xs[:, None] + sign * k[None, :]).ravel()
        ok = (py >= 0) & (py < img.shape[0]) & (px >= 0) & (px < img.shape[1])
        img[py[ok], px[ok]] = colour


def plus_marks(img: np.ndarray, ys, xs, size: int, colour) -> None:
    """Upright crosses ("+") of half-size ``size`` at ``(ys, xs)``."""
    ys, xs = np.asarray(ys, np.int64).ravel(), np.asarray(xs, np.int64).ravel()
    if ys.size == 0:
        return
    k = np.arange(-size, size + 1)
    for py, px in (((ys[:, None] + k).ravel(), np.repeat(xs, k.size)),
                   (np.repeat(ys, k.size), (xs[:, None] + k).ravel())):
        ok = (py >= 0) & (py < img.shape[0]) & (px >= 0) & (px < img.shape[1])
        img[py[ok], px[ok]] = colour


def ramp(values, stops) -> np.ndarray:
    """Colours for ``values`` in [0, 1] along a piecewise-linear ramp of
    ``stops`` (a list of RGB triples, evenly spaced)."""
    v = np.clip(np.asarray(values, np.float64), 0.0, 1.0)
    stops = np.asarray(stops, np.float64)
    pos = v * (len(stops) - 1)
    i = np.minimum(pos.astype(np.int64), len(stops) - 2)
    f = (pos - i)[..., None]
    return np.rint(stops[i] * (1 - f) + stops[i + 1] * f).astype(np.uint8)


def colour_bar(img: np.ndarray, y: int, x: int, width: int, height: int, stops) -> None:
    """A horizontal bar of the ramp ``stops``, left = 0, right = 1, outlined."""
    cols = ramp(np.linspace(0.0, 1.0, width), stops)
    fill_rect(img, y, x, y + height, x + width, 0)
    h, w = img.shape[:2]
    xs = np.arange(x, x + width)
    ok = (xs >= 0) & (xs < w)
    img[max(0, y):min(h, y + height), xs[ok]] = cols[ok][None, :, :]
    rect(img, y - 1, x - 1, y + height + 1, x + width + 1, (60, 60, 60))
