"""The contour ("snakes") image generator behind Pathfinder and PathfinderSegmentation.

A port of `snakes2.py` / `snakes.py` of drewlinsley/pathfinder (the generator LRA cites; DLR's
PathfinderSegmentation uses a lightly edited copy), kept to the original's structure, parameters
and order of random draws per image, with NumPy in place of OpenCV.

One image (`render`):
1. label ~ randint(0, 2); a paddle margin m from `paddle_margin_list`.
2. Two target contours of `contour_length` paddles each (`two_snakes`). The first one's tail is
   uniform among the pixels that stay free after the border of width 2 seed_distance and a
   dilation by the paddle's own shape; its orientation a random integer degree in [-180, 180).
   The second tail lies seed_distance away at a random integer-degree angle. Then the two contours
   grow together, one paddle each per step (`extend`): the next pivot is the previous pivot moved
   paddle_length + 2m along the previous orientation; candidate heads are the pixels on a circle of
   radius paddle_length + m around it, weighted by cos^2(min(continuity |d angle|, pi/2)) times
   (1 - the occupancy dilated by a disc of radius m); a sampled paddle is redrawn (up to
   max_paddle_retrial times) if it overlaps earlier paddles (max(mask + new) >= 1.8). Any failure
   restarts the pair.
3. `num_distractor_snakes` distractor contours of `distractor_length` paddles (`make_snake`),
   seeded uniformly among free pixels; a distractor that cannot be placed is retried up to
   max_distractor_contour_retrial times, then skipped. Optionally single-paddle distractors.
4. Markers: discs of radius marker_radius at the origin tip (the first tail) of a random target k
   and at the terminal tip (the last head) of target k if label = 1, of target 1 - k if label = 0.
   With `mark_distractors` (DLR), every distractor also gets a disc at its first pivot.
5. Image = max(contours, markers), scaled to 0-255 by its own min and max (scipy's `imsave`).

Drawing (`paddle`): a paddle is a line of paddle_length pixels and width paddle_thickness, drawn with
Pillow at antialias_scale times the resolution and shrunk with Lanczos; its occupancy mask is the
line dilated by a disc of radius m (at the fine scale) and shrunk the same way. Both images are 8-bit
before shrinking, as scipy's `imresize` made them in the original (DLR's Python 3 copy shrinks the
line as floats; the difference is at most one grey level of ringing).

OpenCV's border: `cv2.dilate` of a float image treats pixels outside it as -DBL_MAX. The seeding
kernel (the paddle's occupancy drawn from one pixel off the kernel's centre) may miss its own centre,
so some edge pixel can have every tap outside and becomes -DBL_MAX; the original then finds "no free
pixel" and the seed fails. At 32 x 32 this happens for most orientations (330 of 360), which
restricts the orientation of the first target paddle and leaves about one distractor per image
instead of five, which does not match the busy LRA images; so by default (`opencv_border=False`) only
those pixels are excluded, and True reproduces OpenCV. UNCONFIRMED either way (docs/data.md).

Exact equivalents, not approximations: OpenCV's `dilate` (max over the kernel's offsets, pixels
outside the image ignored) is a loop of shifted maxima; the occupancy dilated by the disc is needed
only at the candidate pixels, so it is computed there; binary images are dilated as booleans.
Every random draw comes from one `numpy.random.Generator` per image (the original mixes NumPy's
and Python's global generators), so an image depends only on (seed, image index).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

MAX_PAIR_ATTEMPTS = 10_000  # the original retries the target pair forever; a bad parameter set should fail


@dataclass(frozen=True)
class SnakeParams:
    """One parameter set; the defaults are drewlinsley/pathfinder's `Args` defaults."""

    window_size: int = 256  # R: images are R x R pixels
    padding: int = 22  # border (pixels) where no target seed may lie
    antialias_scale: int = 4  # paddles and markers are drawn at this multiple of the resolution
    seed_distance: int = 27  # distance between the two targets' tails; also the seed border / 2
    marker_radius: float = 3.0  # radius of the marker discs
    contour_length: int = 15  # paddles per target contour
    distractor_length: int = 5  # paddles per distractor contour
    num_distractor_snakes: int = 6  # distractor contours attempted
    snake_contrast_list: tuple[float, ...] = (1.0,)  # per-contour intensity, drawn per contour
    paddle_contrast_list: tuple[float, ...] = (1.0,)  # per-paddle intensity factor of the targets
    use_single_paddles: bool = False  # also scatter one-paddle distractors (Args: True; wrappers: False)
    max_distractor_contour_retrial: int = 4  # attempts per distractor beyond the first
    max_paddle_retrial: int = 2  # redraws of a paddle (and of a seed) beyond the first
    continuity: float = 1.4  # larger: straighter contours (angle changes are penalised more)
    paddle_length: int = 5  # pixels per paddle
    paddle_thickness: float = 1.5  # line width; thickness * antialias_scale must be an integer
    paddle_margin_list: tuple[int, ...] = (4,)  # gap m between paddles, drawn per image
    mark_distractors: bool = False  # DLR: a marker disc at every distractor's start too
    opencv_border: bool = False  # True: seeding fails when the paddle kernel reaches outside from some pixel (below)

    def __post_init__(self):
        scaled = self.paddle_thickness * self.antialias_scale
        if round(scaled) != scaled:  # the original's sanity check
            raise ValueError("paddle_thickness * antialias_scale must be an integer")


@dataclass
class Stamp:
    """A paddle placed in the image: its line and occupancy patches and where they go."""

    rows: slice  # image rows covered
    cols: slice  # image columns covered
    line: np.ndarray  # float (h w) intensity, contrast applied
    mask: np.ndarray  # float (h w) occupancy in [0, 1]

    def onto(self, image: np.ndarray, occupancy: bool = False) -> None:
        """image = max(image, stamp) in place (the line, or with occupancy=True the mask)."""
        window = image[self.rows, self.cols]
        np.maximum(window, self.mask if occupancy else self.line, out=window)


@dataclass
class Contour:
    """What the generator knows about one contour (the record the tests check)."""

    tips: list[tuple[int, int]] = field(default_factory=list)  # [origin tail, ..., terminal head]
    paddles: list[tuple[tuple[int, int], float]] = field(default_factory=list)  # (start, orientation)


@dataclass
class Rendered:
    """One image and its record."""

    image: np.ndarray  # uint8 (R R), as saved
    label: int  # 1: the markers lie on one target contour; 0: on the two different targets
    margin: int  # the paddle margin m of this image
    targets: list[Contour]  # the two target contours
    target_images: list[np.ndarray]  # float (R R) each: the targets' own drawings
    marker_indices: tuple[int, int]  # (k, target of the terminal marker): equal iff label = 1
    origin_tips: list[tuple[int, int]]  # first tail of each target
    terminal_tips: list[tuple[int, int]]  # last head of each target
    scale: tuple[float, float]  # (min, max) of the float image, mapped to 0 and 255
    distractors: int = 0  # distractor contours drawn
    attempts: int = 1  # tries of the target pair


# ------------------------------------------------------------------------------------- geometry


def translate(coord, orientation: float, dist: float) -> list[int]:
    """The original's `translate_coord`: move by dist along orientation (radians), round up."""
    return [int(math.ceil(coord[0] + float(dist) * math.sin(orientation))),
            int(math.ceil(coord[1] + float(dist) * math.cos(orientation)))]


def flip(orientation: float) -> float:
    return orientation + math.pi if orientation < 0 else orientation - math.pi


def disc(radius: int) -> np.ndarray:
    """bool (2r+1 2r+1): x^2 + y^2 <= r^2 (the original's `generate_dilation_struct`)."""
    y, x = np.ogrid[-radius:radius + 1, -radius:radius + 1]
    return x * x + y * y <= radius * radius


def dilate(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """OpenCV's `dilate` with anchor at the kernel centre, for a boolean image.

    out[y, x] = any(image[y + i - ai, x + j - aj] for kernel[i, j]), positions outside ignored.
    """
    height, width = image.shape
    anchor_y, anchor_x = kernel.shape[0] // 2, kernel.shape[1] // 2
    out = np.zeros_like(image, dtype=bool)
    for i, j in zip(*np.nonzero(kernel)):
        dy, dx = int(i) - anchor_y, int(j) - anchor_x
        if abs(dy) >= height or abs(dx) >= width:
            continue
        target = out[max(0, -dy):height - max(0, dy), max(0, -dx):width - max(0, dx)]
        target |= image[max(0, dy):height - max(0, -dy), max(0, dx):width - max(0, -dx)]
    return out


def dilated_at(mask: np.ndarray, points: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Grey dilation of `mask` by the symmetric `kernel`, evaluated only at `points` (P 2)."""
    radius = kernel.shape[0] // 2
    offsets = np.argwhere(kernel) - radius  # (K 2)
    where = points[:, None, :] + offsets[None, :, :]  # (P K 2)
    inside = ((where >= 0) & (where < np.array(mask.shape))).all(axis=-1)  # (P K)
    values = mask[np.clip(where[..., 0], 0, mask.shape[0] - 1), np.clip(where[..., 1], 0, mask.shape[1] - 1)]
    return np.where(inside, values, 0.0).max(axis=1)  # (P); the mask is >= 0


def shrink(array: np.ndarray, size: int) -> np.ndarray:
    """Lanczos resize of an 8-bit image to size x size (scipy's `imresize`, which went through PIL)."""
    return np.asarray(Image.fromarray(array).resize((size, size), resample=Image.Resampling.LANCZOS))


def bytescale(data: np.ndarray, low: float | None = None, high: float | None = None) -> np.ndarray:
    """scipy's `bytescale`: map [low, high] (default: the data's min and max) to 0-255, round half up."""
    low = float(data.min()) if low is None else low
    high = float(data.max()) if high is None else high
    scale = 255.0 / (high - low if high != low else 1.0)
    return (np.clip((data - low) * scale, 0, 255) + 0.5).astype(np.uint8)


# --------------------------------------------------------------------------------------- drawing


@lru_cache(maxsize=1 << 16)
def paddle_patches(length: int, thickness: float, margin: int, aa: int, orientation: float,
                   contrast: float) -> tuple[np.ndarray, np.ndarray]:
    """The original's `draw_line_n_mask` before placement: line and occupancy, float (s s) with
    s = 2 (length + ceil(thickness) + margin) + 1, the paddle starting at the centre.

    Cached: starts are whole pixels, so a paddle depends only on its orientation and contrast, and
    orientations come from a finite set (integer degrees for seeds, pixel offsets on a circle for
    the rest), so most paddles of an image have been drawn before.
    """
    half = length + int(math.ceil(thickness)) + margin
    blown_size = half * 2 * aa + 1
    centre = half * aa
    head = translate([centre, centre], orientation, length * aa)
    blown = Image.new("F", (blown_size, blown_size), "black")
    ImageDraw.Draw(blown).line([(centre, centre), (head[1], head[0])], fill="white",
                               width=int(round(thickness * aa)))
    blown_line = np.asarray(blown) > 0  # bool: Pillow fills exactly 0 or 255
    small = half * 2 + 1
    line = shrink(blown_line.astype(np.uint8) * np.uint8(255), small).astype(np.float64) / 255.0
    if contrast != 1.0:
        line *= contrast
    mask = shrink(dilate(blown_line, disc(margin * aa)).astype(np.uint8) * np.uint8(255), small)
    line.flags.writeable = False
    mask = mask.astype(np.float64) / 255.0
    mask.flags.writeable = False
    return line, mask


def paddle(size: tuple[int, int], start, orientation: float, length: int, thickness: float, margin: int,
           aa: int, contrast: float = 1.0) -> Stamp | None:
    """The original's `draw_line_n_mask`: a paddle from `start` along `orientation`, as a Stamp
    clipped to an image of shape `size` (None if nothing of it falls inside)."""
    line, mask = paddle_patches(length, float(thickness), margin, aa, float(orientation), float(contrast))
    half = line.shape[0] // 2
    top, left = start[0] - half, start[1] - half
    r0, r1 = max(top, 0), min(top + line.shape[0], size[0])
    c0, c1 = max(left, 0), min(left + line.shape[1], size[1])
    if r0 >= r1 or c0 >= c1:
        return None
    patch = (slice(r0 - top, r1 - top), slice(c0 - left, c1 - left))
    return Stamp(slice(r0, r1), slice(c0, c1), line[patch], mask[patch])


@lru_cache(maxsize=1 << 12)
def paddle_shape(length: int, thickness: float, margin: int, aa: int, orientation: float) -> np.ndarray:
    """The seeding kernel: the occupancy of a paddle drawn from [L+m+1, L+m+1] in a (2(L+m)+1)^2
    window, kept where it is exactly 1 (the original casts it to uint8)."""
    size = (length + margin) * 2 + 1
    head = length + margin + 1
    window = np.zeros((size, size))
    stamp = paddle((size, size), [head, head], orientation, length, thickness, margin, aa)
    if stamp is not None:
        window[stamp.rows, stamp.cols] = stamp.mask
    kernel = window >= 1.0
    kernel.flags.writeable = False
    return kernel


def marker(size: int, coord, radius: float, aa: int) -> np.ndarray:
    """The original's `draw_circle`: an antialiased disc at `coord`, uint8 (R R) in 0-255."""
    y, x = np.ogrid[-coord[0] * aa:(size - coord[0]) * aa, -coord[1] * aa:(size - coord[1]) * aa]
    blown = ((x * x + y * y) <= (radius * aa) ** 2).astype(np.uint8) * np.uint8(255)
    return shrink(blown, size)


# -------------------------------------------------------------------------------------- growing


def free_pixels(params: SnakeParams, margin: int, occupied: np.ndarray, border: int,
                orientation: float) -> np.ndarray | None:
    """Flat indices of the pixels where a seed may go: outside `border`, and free after dilating the
    occupied pixels by the paddle kernel of `orientation` (None: OpenCV's border case, see above)."""
    kernel = paddle_shape(params.paddle_length, float(params.paddle_thickness), margin, params.antialias_scale,
                          orientation)
    lined = occupied.copy()
    lined[:border, :] = lined[-border:, :] = lined[:, :border] = lined[:, -border:] = True
    reach = dilate(np.ones_like(lined), kernel)  # pixels with at least one kernel tap inside
    if params.opencv_border and not reach.all():
        # OpenCV dilates a float image with -DBL_MAX outside it, so such a pixel becomes
        # negative, and the original's `find_available_coordinates` then reports no free pixel.
        return None
    return np.flatnonzero(~dilate(lined, kernel) & reach)


@lru_cache(maxsize=1 << 12)
def initial_free(params: SnakeParams, margin: int, border: int, orientation: float) -> np.ndarray | None:
    """`free_pixels` of an image's initial mask (its padding only), which every target pair starts from."""
    size = params.window_size
    occupied = np.zeros((size, size), dtype=bool)
    pad = params.padding
    occupied[:pad, :] = occupied[-pad:, :] = occupied[:, :pad] = occupied[:, -pad:] = True
    free = free_pixels(params, margin, occupied, border, orientation)
    if free is not None:
        free.flags.writeable = False
    return free


class Canvas:
    """The state one image is grown on: parameters of this image and its random generator."""

    def __init__(self, params: SnakeParams, margin: int, rng: np.random.Generator):
        self.p = params
        self.size = (params.window_size, params.window_size)
        self.margin = margin
        self.rng = rng
        self.small_disc = disc(margin)
        # Candidate heads: pixels on the circle of radius L + m around a pivot. The original truncates
        # pivot + step (sin, cos) to int; inside the image that is pivot + floor(step (sin, cos)), so
        # the offsets, their order (np.unique sorts them) and their orientations are the same at
        # every pivot and are computed once.
        step = params.paddle_length + margin
        angles = np.arange(0, 360, 360.0 / (2 * step * np.pi)) * np.pi / 180
        self.ring = np.unique(np.floor(np.stack([step * np.sin(angles), step * np.cos(angles)], axis=1))
                              .astype(int), axis=0)  # (K 2)
        self.ring_orientations = np.arctan2(self.ring[:, 0], self.ring[:, 1])  # (K)
        # Fast path for pivots whose ring and its dilation lie inside the image: flat indices.
        width = self.size[1]
        ring_disc = self.ring[:, None, :] + (np.argwhere(self.small_disc) - margin)[None]  # (K D 2)
        self.ring_disc_flat = ring_disc[..., 0] * width + ring_disc[..., 1]  # (K D)
        self.reach = int(np.abs(ring_disc).max())

    def draw(self, start, orientation: float, contrast: float = 1.0) -> Stamp | None:
        p = self.p
        return paddle(self.size, start, orientation, p.paddle_length, p.paddle_thickness, self.margin,
                      p.antialias_scale, contrast)

    def inside(self, coord) -> bool:
        return 0 <= coord[0] < self.size[0] and 0 <= coord[1] < self.size[1]

    def contrast(self, choices, always_draw: bool) -> float:
        """A contrast from `choices`; the original draws an index even from one choice in some places."""
        if always_draw or len(choices) > 1:
            return float(choices[int(self.rng.integers(0, len(choices)))])
        return float(choices[0])

    def candidates(self, pivot, last_orientation: float, mask: np.ndarray):
        """The original's `get_coords_cmf`: head candidates on the circle of radius L + m around
        `pivot`, their orientations and cumulative probabilities (None at a dead end)."""
        y, x = pivot
        coords = self.ring + np.array([y, x])  # (K 2)
        if self.reach <= y < self.size[0] - self.reach and self.reach <= x < self.size[1] - self.reach:
            orientations = self.ring_orientations
            occupancy = mask.ravel()[self.ring_disc_flat + (y * self.size[1] + x)].max(axis=1)  # (K)
        else:
            keep = ((coords >= 0) & (coords < np.asarray(self.size))).all(axis=1)
            if not keep.any():
                return None
            coords, orientations = coords[keep], self.ring_orientations[keep]
            occupancy = dilated_at(mask, coords, self.small_disc)
        delta = np.abs(orientations - last_orientation)
        delta = np.minimum(np.minimum(delta, 2 * np.pi - delta) * self.p.continuity, 0.5 * np.pi)
        weights = np.maximum(np.cos(delta), 0) ** 2
        pmf = (1 - occupancy) * weights
        total = pmf.sum()
        if total < 1e-4:
            return None
        return coords, orientations, np.cumsum(pmf / total)

    def extend(self, pivot, orientation: float, mask: np.ndarray, contrast: float):
        """The original's `extend_snake`: the next paddle of a contour whose last pivot and
        orientation are given; (stamp, new pivot, new orientation, new head) or None."""
        p = self.p
        new_pivot = translate(pivot, orientation, p.paddle_length + 2 * self.margin)
        found = self.candidates(new_pivot, orientation, mask)
        if found is None:
            return None
        coords, orientations, cmf = found
        for _ in range(p.max_paddle_retrial + 1):
            index = int(np.argmax(cmf - self.rng.random() > 0))
            new_orientation = float(orientations[index])
            head = [int(coords[index, 0]), int(coords[index, 1])]
            stamp = self.draw(head, flip(new_orientation), contrast)
            if stamp is None or np.max(mask[stamp.rows, stamp.cols] + stamp.mask) < 1.8:
                return stamp, new_pivot, new_orientation, head
        return None

    def seed_orientation(self) -> tuple[float, float]:
        orientation = int(self.rng.integers(-180, 180)) * np.pi / 180
        return orientation, flip(orientation)  # (orientation, reversed), as the original computes them

    def free_seed(self, mask: np.ndarray, border: int, orientation: float, availability: float | None,
                  initial: bool = False):
        """A tail uniform among the free pixels of `mask` outside `border` after dilation by the paddle
        shape; 'stop' when the image is too full (or no pixel is free), else the tail. `initial`: the
        mask is the image's initial one (padding only), whose free pixels are cached per orientation."""
        if initial:
            free = initial_free(self.p, self.margin, border, float(orientation))
        else:
            occupied = mask > 0.3  # the original keeps pixels where ceil(mask - 0.3) == 0
            if availability is not None and (~occupied).sum() / occupied.size < availability:
                return "stop"
            free = free_pixels(self.p, self.margin, occupied, border, float(orientation))
        if free is None or free.size == 0:
            return "stop"
        flat = int(free[int(self.rng.integers(0, free.size))])
        return [flat // self.size[1], flat % self.size[1]]

    def seed(self, mask: np.ndarray, border: int, contrast: float, availability: float | None,
             initial: bool = False):
        """The original's `seed_snake` (and the first half of `initialize_two_seeds`): (stamp, pivot,
        orientation, tail) of a contour's first paddle, or None."""
        p = self.p
        for _ in range(p.max_paddle_retrial + 1):
            orientation, reverse = self.seed_orientation()
            tail = self.free_seed(mask, border, orientation, availability, initial)
            if tail == "stop":
                return None
            head = translate(tail, orientation, p.paddle_length)
            pivot = translate(head, reverse, p.paddle_length + self.margin)
            if self.inside(head) and self.inside(pivot):
                return self.draw(tail, orientation, contrast), pivot, orientation, tail
        return None

    def two_targets(self):
        """The original's `two_snakes`: the two target contours grown together, or None."""
        p = self.p
        mask = np.zeros(self.size)
        pad = p.padding
        mask[:pad, :] = mask[-pad:, :] = mask[:, :pad] = mask[:, -pad:] = 1
        snake_contrasts = list(self.rng.permutation(list(p.snake_contrast_list) * 2)[:2])
        first = self.seed(mask, 2 * p.seed_distance, self.contrast(p.paddle_contrast_list, False)
                          * snake_contrasts[0], availability=None, initial=True)
        if first is None:
            return None
        second = None
        contrast = self.contrast(p.paddle_contrast_list, False) * snake_contrasts[1]
        for _ in range(p.max_paddle_retrial + 1):
            orientation, reverse = self.seed_orientation()
            angle = int(self.rng.integers(0, 360)) * np.pi / 180
            tail = [int(np.round(first[3][0] + p.seed_distance * np.sin(angle))),
                    int(np.round(first[3][1] + p.seed_distance * np.cos(angle)))]
            head = translate(tail, orientation, p.paddle_length)
            pivot = translate(head, reverse, p.paddle_length + self.margin)
            if self.inside(head) and self.inside(pivot):
                second = (self.draw(tail, orientation, contrast), pivot, orientation, tail)
                break
        if second is None:
            return None
        images = [np.zeros(self.size), np.zeros(self.size)]
        contours = [Contour(), Contour()]
        segments, pivots, orientations = [], [], []
        for k, (stamp, pivot, orientation, tail) in enumerate((first, second)):
            if stamp is not None:
                stamp.onto(images[k])
            segments.append(stamp)
            pivots.append(pivot)
            orientations.append(orientation)
            contours[k].tips.append((int(tail[0]), int(tail[1])))
            contours[k].paddles.append(((int(tail[0]), int(tail[1])), orientation))
        for _ in range(p.contour_length - 1):
            contrast = self.contrast(p.paddle_contrast_list, True)
            for k in range(2):
                grown = self.extend(pivots[k], orientations[k], mask, contrast * snake_contrasts[k])
                if grown is None:
                    return None
                stamp, pivots[k], orientations[k], head = grown
                if stamp is not None:
                    stamp.onto(images[k])
                if segments[k] is not None:
                    segments[k].onto(mask, occupancy=True)
                segments[k] = stamp
                contours[k].paddles.append(((head[0], head[1]), flip(orientations[k])))
                contours[k].tips.append((head[0], head[1]))
        if segments[-1] is not None:  # the original adds only the second target's last paddle here
            segments[-1].onto(mask, occupancy=True)
        return images, mask, contours

    def distractor(self, image: np.ndarray, mask: np.ndarray, paddles: int) -> bool:
        """The original's `make_snake`: draw one contour into image and mask in place if it fits."""
        p = self.p
        new_image, new_mask = image.copy(), mask.copy()
        contrast = self.contrast(p.snake_contrast_list, True)
        seeded = self.seed(new_mask, 1, contrast, availability=0.01)
        if seeded is None:
            return False
        segment, pivot, orientation, _ = seeded
        if segment is not None:
            segment.onto(new_image)
        if p.mark_distractors:  # DLR: a disc at the distractor's first pivot
            np.maximum(new_image, marker(p.window_size, pivot, p.marker_radius, p.antialias_scale) / 255.0,
                       out=new_image)
        for _ in range(paddles - 1):
            contrast = self.contrast(p.snake_contrast_list, True)
            grown = self.extend(pivot, orientation, new_mask, contrast)
            if grown is None:
                return False
            stamp, pivot, orientation, _ = grown
            if stamp is not None:
                stamp.onto(new_image)
            if segment is not None:
                segment.onto(new_mask, occupancy=True)
            segment = stamp
        if segment is not None:
            segment.onto(new_mask, occupancy=True)
        image[...], mask[...] = new_image, new_mask
        return True

    def distractors(self, image: np.ndarray, mask: np.ndarray, count: int, paddles: int, retrials: int) -> int:
        """The original's `make_many_snakes` with allow_incomplete: contours drawn (of `count`)."""
        drawn = 0
        for _ in range(int(count)):
            for _ in range(retrials + 1):
                if self.distractor(image, mask, paddles):
                    drawn += 1
                    break
        return drawn


def render(params: SnakeParams, rng: np.random.Generator) -> Rendered:
    """One image with its label and record (see the module docstring)."""
    label = int(rng.integers(0, 2))
    margin = int(params.paddle_margin_list[int(rng.integers(0, len(params.paddle_margin_list)))])
    canvas = Canvas(params, margin, rng)
    for attempt in range(1, MAX_PAIR_ATTEMPTS + 1):
        grown = canvas.two_targets()
        if grown is not None:
            break
    else:
        raise RuntimeError(f"no pair of target contours fits after {MAX_PAIR_ATTEMPTS} attempts: {params}")
    images, mask, contours = grown
    image = np.maximum(images[0], images[1])
    drawn = canvas.distractors(image, mask, params.num_distractor_snakes, params.distractor_length,
                               params.max_distractor_contour_retrial)
    if params.use_single_paddles:
        singles = (int(150 / ((7.5 + 13 * margin + 4 * margin * margin) / 123.5))
                   - 2 * params.contour_length - params.num_distractor_snakes * params.distractor_length)
        canvas.distractors(image, mask, max(singles, 0), 1, params.max_paddle_retrial)
    origin = int(rng.integers(0, 2))
    terminal = origin if label == 1 else 1 - origin
    origin_tips = [c.tips[0] for c in contours]
    terminal_tips = [c.tips[-1] for c in contours]
    markers = np.maximum(marker(params.window_size, origin_tips[origin], params.marker_radius, params.antialias_scale),
                         marker(params.window_size, terminal_tips[terminal], params.marker_radius,
                                params.antialias_scale)) / 255.0
    marked = np.maximum(image, markers)
    low, high = float(marked.min()), float(marked.max())
    return Rendered(bytescale(marked, low, high), label, margin, contours, images, (origin, terminal),
                    origin_tips, terminal_tips, (low, high), drawn, attempt)
