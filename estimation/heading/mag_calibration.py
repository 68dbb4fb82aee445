"""Magnetometer calibration: hard-iron offset and soft-iron matrix by a least-squares ellipsoid fit.

Distortion model (what the sensor reads): m_raw = S m_true + h, with S the soft-iron matrix and h the
hard-iron offset [T]. Correction: m_corr = W (m_raw - b), with b = h and W ~ S^-1. W is symmetric (a rotation
part of S cannot be seen in field magnitudes and is assumed absent) and scaled so that |m_corr| equals the
expected local field strength (vessel.sensors.mag.field_t).

Two methods:
- "3d": readings in many orientations (on the bench: tumble the boat or the sensor). Fits the quadric
  m^T A m + 2 p^T m + d = 0 (total least squares on normalised data), centre b = -A^-1 p, and
  W = field_t * sqrtm(A / k) with k = b^T A b - d.
- "2d": readings from level turns only (a boat on the water: two slow full turns). Fits an ellipse to the
  horizontal components (x, y); z is left untouched (offset 0, scale 1). W's 2x2 block is scaled so the
  horizontal field equals field_t * cos(inclination). Good for heading while the hull is near level.

Quality figures (CalibrationFit.figures) and the thresholds of MagFitLimits decide accept/refuse; a refused
fit says why. `write_calibration` / `read_calibration` keep a fit in a YAML file the vessel config points to
(sensors.mag.calibration_file). Times are passed in (the core reads no clock).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import numpy as np
import yaml

from autopilot.vocab.schema import ConfigError


@dataclass(frozen=True)
class MagCalibration:
    """A magnetometer correction: m_corr = matrix @ (m_raw - offset_t). Units: tesla, matrix dimensionless."""

    offset_t: tuple = (0.0, 0.0, 0.0)
    matrix: tuple = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    method: str = "3d"                     # "2d" (level turns: x-y only) or "3d"
    figures: dict = field(default_factory=dict)
    if TYPE_CHECKING:   # what __post_init__ caches (object.__setattr__; not fields at run time): b, W as arrays, lists
        _b: np.ndarray = field(init=False, repr=False, compare=False)
        _w: np.ndarray = field(init=False, repr=False, compare=False)
        _bl: List[float] = field(init=False, repr=False, compare=False)
        _wl: List[List[float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        b = np.asarray(self.offset_t, dtype=float)
        w = np.asarray(self.matrix, dtype=float)
        if b.shape != (3,) or not np.all(np.isfinite(b)):
            raise ValueError(f"offset_t must be 3 finite numbers, got {self.offset_t!r}")
        if w.shape != (3, 3) or not np.all(np.isfinite(w)):
            raise ValueError(f"matrix must be 3x3 finite numbers, got {self.matrix!r}")
        if np.linalg.cond(w) > 1e6:
            raise ValueError("matrix is singular: it would map different fields onto the same reading")
        if self.method not in ("2d", "3d"):
            raise ValueError(f"method must be '2d' or '3d', got {self.method!r}")
        object.__setattr__(self, "offset_t", tuple(b.tolist()))
        object.__setattr__(self, "matrix", tuple(tuple(row) for row in w.tolist()))
        object.__setattr__(self, "_b", b)
        object.__setattr__(self, "_w", w)
        object.__setattr__(self, "_wl", w.tolist())
        object.__setattr__(self, "_bl", b.tolist())

    def apply(self, field_t):
        """Corrected field [T] of one (3,) reading, or of an (n, 3) array of readings."""
        m = np.asarray(field_t, dtype=float)
        if m.ndim == 1:
            return self._w @ (m - self._b)
        return (m - self._b) @ self._w.T

    def apply_xyz(self, mx: float, my: float, mz: float) -> tuple[float, float, float]:
        """Scalar fast path for one reading [T]; returns plain floats."""
        (w0, w1, w2), b = self._wl, self._bl
        dx, dy, dz = mx - b[0], my - b[1], mz - b[2]
        return (w0[0] * dx + w0[1] * dy + w0[2] * dz,
                w1[0] * dx + w1[1] * dy + w1[2] * dz,
                w2[0] * dx + w2[1] * dy + w2[2] * dz)


@dataclass(frozen=True)
class MagFitLimits:
    """Accept/refuse thresholds of a calibration fit."""

    min_samples_3d: int = 100
    min_samples_2d: int = 40
    min_coverage_3d: float = 0.6      # fraction of 26 direction cells (sphere) holding a reading
    min_coverage_2d: float = 0.8      # fraction of 36 heading sectors of 10 degrees holding a reading
    max_residual_pct: float = 5.0     # RMS distance of readings from the fitted surface, % of the total field
    field_ratio_range: tuple = (0.6, 1.6)   # fitted mean field / expected field (units, local disturbance)
    max_anisotropy: float = 1.5       # largest / smallest eigenvalue of W (soft iron this strong is suspect)


@dataclass(frozen=True)
class CalibrationFit:
    """A fit and its verdict. `figures` holds n_samples, residual_rms_t, residual_rms_pct, coverage,
    field_ratio, anisotropy; `reason` is empty when accepted, else says which limit failed and what to do."""

    calibration: MagCalibration
    accepted: bool
    reason: str
    figures: dict


# ------------------------------------------------------------------------------------------------- fitting
def fit_calibration(readings_t, field_t: float, method: str = "3d", inclination_deg: float = 60.0,
                    limits: Optional[MagFitLimits] = None) -> CalibrationFit:
    """Fit hard and soft iron to raw readings (n, 3) [T] and judge the fit.

    field_t: the local field strength [T] (e.g. from the WMM); inclination_deg: the local dip (2-D only: the
    horizontal field is field_t * cos(inclination)). Raises ValueError for unusable input (wrong shape, not
    finite, fewer readings than the algebra needs). Readings that define no ellipse/ellipsoid, or a fit that
    exists but is poor, come back with accepted=False, the reason, and an identity calibration.
    """
    lim = limits or MagFitLimits()
    m = np.asarray(readings_t, dtype=float)
    if m.ndim != 2 or m.shape[1] != 3:
        raise ValueError(f"readings must be an (n, 3) array of fields in tesla, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("readings contain non-finite values")
    if not field_t > 0:
        raise ValueError(f"field_t must be > 0, got {field_t}")
    if method not in ("2d", "3d"):
        raise ValueError(f"method must be '2d' or '3d', got {method!r}")
    n_algebra = 10 if method == "3d" else 6
    if len(m) < n_algebra:
        raise ValueError(f"a {method.upper()} fit needs at least {n_algebra} readings, got {len(m)}")
    n_min = lim.min_samples_3d if method == "3d" else lim.min_samples_2d
    cov_min = lim.min_coverage_3d if method == "3d" else lim.min_coverage_2d
    if method == "3d":
        target = field_t
    else:
        target = field_t * math.cos(math.radians(inclination_deg))
        if target <= 0:
            raise ValueError("a 2-D fit needs a horizontal field (inclination below 90 degrees)")
    try:
        if method == "3d":
            offset, W, mean_radius = _fit_ellipsoid(m)
            W = W * target
        else:
            c2, W2, mean_radius = _fit_ellipse(m[:, :2])
            offset = np.array([c2[0], c2[1], 0.0])
            W = np.eye(3)
            W[:2, :2] = W2 * target
    except _NoFit as e:
        coverage = coverage_of(m, method)
        figures = dict(n_samples=int(len(m)), coverage=float(coverage), expected_field_t=float(target))
        reason = str(e)
        if coverage < cov_min:
            reason += f"; coverage about {coverage:.0%} is below {cov_min:.0%}: {_coverage_advice(method)}"
        return CalibrationFit(MagCalibration(method=method), False, reason, figures)

    corrected = (m - offset) @ W.T
    if method == "3d":
        radius = np.linalg.norm(corrected, axis=1)
        # judged both after correction and about the fitted centre, so a wild fit cannot fake coverage
        coverage = min(_sphere_coverage(corrected), _sphere_coverage(m - offset))
    else:
        radius = np.hypot(corrected[:, 0], corrected[:, 1])
        coverage = min(_circle_coverage(corrected[:, :2]), _circle_coverage((m - offset)[:, :2]))
    residual = float(np.sqrt(np.mean((radius - target) ** 2)))
    eig = np.linalg.eigvalsh(W if method == "3d" else W[:2, :2])
    anisotropy = float(eig.max() / eig.min()) if eig.min() > 0 else math.inf
    field_ratio = float(mean_radius / target)
    figures = dict(n_samples=int(len(m)), residual_rms_t=residual, residual_rms_pct=100.0 * residual / field_t,
                   coverage=float(coverage), field_ratio=field_ratio, anisotropy=anisotropy,
                   expected_field_t=float(target))

    reasons = []
    if len(m) < n_min:
        reasons.append(f"only {len(m)} readings, at least {n_min} needed: record for longer")
    if coverage < cov_min:
        reasons.append(f"coverage {coverage:.0%} is below {cov_min:.0%}: {_coverage_advice(method)}")
    if figures["residual_rms_pct"] > lim.max_residual_pct:
        reasons.append(f"residual {figures['residual_rms_pct']:.1f} % of the field exceeds "
                       f"{lim.max_residual_pct:.1f} %: a changing disturbance (motor current, moving metal), a "
                       f"noisy sensor, or a hull rolling too much during a 2-D calibration")
    lo, hi = lim.field_ratio_range
    if not lo <= field_ratio <= hi:
        reasons.append(f"measured field is {field_ratio:.2f} x the expected {target * 1e6:.1f} uT "
                       f"(allowed {lo}-{hi}): check field_t/inclination in the vessel config, the sensor range, "
                       f"or move away from steel")
    if anisotropy > lim.max_anisotropy:
        reasons.append(f"soft-iron anisotropy {anisotropy:.2f} exceeds {lim.max_anisotropy}: the sensor sits "
                       f"too close to iron; move it")
    try:
        cal = MagCalibration(offset_t=tuple(offset.tolist()), matrix=tuple(map(tuple, W.tolist())), method=method,
                             figures=figures)
    except ValueError as e:
        reasons.append(f"the fitted correction is unusable ({e})")
        cal = MagCalibration(method=method, figures=figures)
    return CalibrationFit(cal, not reasons, "; ".join(reasons), figures)


def with_vertical_offset(calibration: MagCalibration, readings_t, field_t: float,
                         inclination_deg: float) -> MagCalibration:
    """A 2-D calibration with its z offset [T] filled in from the known field strength.

    Level turns cannot see a hard iron along the sensor's z axis by the ellipse (z hardly changes), but they
    see it in the field strength: with x and y corrected, the vertical component must make up
    field_t (down positive when the inclination is: z_true = sign(inc) sqrt(field_t^2 - h^2)). The offset is
    the median over the readings of z_raw - z_true (z scale kept at 1). It matters as soon as the hull rolls
    or pitches: the tilt compensation mixes z into the heading. A 3-D calibration is returned unchanged."""
    if calibration.method != "2d":
        return calibration
    m = np.asarray(readings_t, dtype=float)
    corrected = calibration.apply(m)
    h2 = corrected[:, 0] ** 2 + corrected[:, 1] ** 2
    ok = h2 < field_t ** 2
    if not np.any(ok):
        return calibration
    z_true = math.copysign(1.0, inclination_deg) * np.sqrt(field_t ** 2 - h2[ok])
    bz = float(np.median(m[ok, 2] - z_true))
    offset = (calibration.offset_t[0], calibration.offset_t[1], bz)
    return MagCalibration(offset_t=offset, matrix=calibration.matrix, method="2d",
                          figures=dict(calibration.figures, vertical_offset_t=bz))


class _NoFit(ValueError):
    """The readings define no ellipse/ellipsoid (the message says why)."""


def _coverage_advice(method: str) -> str:
    return ("turn through all orientations (roll and pitch the sensor through every face)" if method == "3d"
            else "complete two slow full turns")


def _fit_ellipsoid(m: np.ndarray):
    """(centre (3,), unit-sphere matrix (3, 3) symmetric, mean radius) of the ellipsoid through m."""
    mu = m.mean(axis=0)
    s = float(np.abs(m - mu).max()) or 1.0
    x, y, z = ((m - mu) / s).T
    D = np.column_stack([x * x, y * y, z * z, 2 * y * z, 2 * x * z, 2 * x * y, 2 * x, 2 * y, 2 * z,
                         np.ones_like(x)])
    v = np.linalg.svd(D, full_matrices=False)[2][-1]
    A = np.array([[v[0], v[5], v[4]], [v[5], v[1], v[3]], [v[4], v[3], v[2]]])
    p = v[6:9]
    d = v[9]
    if np.linalg.det(A) < 0:                 # the sign of a homogeneous solution is arbitrary
        A, p, d = -A, -p, -d
    try:
        centre_n = -np.linalg.solve(A, p)
    except np.linalg.LinAlgError:
        raise _NoFit("readings are degenerate (all in a plane or on a line): no ellipsoid fits; "
                     "use method '2d' for level turns") from None
    k = centre_n @ A @ centre_n - d
    M = A / k if k != 0 else A * math.inf
    eig, vec = np.linalg.eigh(M)
    if not np.all(np.isfinite(eig)) or eig.min() <= 0:
        raise _NoFit("readings do not lie on an ellipsoid (fit is not positive definite): too little "
                     "coverage or a strong disturbance; use method '2d' for level turns")
    W_n = vec @ np.diag(np.sqrt(eig)) @ vec.T          # maps the ellipsoid onto the unit sphere (normalised)
    centre = mu + s * centre_n
    W = W_n / s
    mean_radius = float(np.prod(1.0 / np.sqrt(eig)) ** (1.0 / 3.0) * s)
    return centre, W, mean_radius


def _fit_ellipse(m2: np.ndarray):
    """(centre (2,), unit-circle matrix (2, 2) symmetric, mean radius) of the ellipse through m2."""
    mu = m2.mean(axis=0)
    s = float(np.abs(m2 - mu).max()) or 1.0
    x, y = ((m2 - mu) / s).T
    D = np.column_stack([x * x, 2 * x * y, y * y, 2 * x, 2 * y, np.ones_like(x)])
    _, _, vt = np.linalg.svd(D, full_matrices=False)
    a, b, c, d, e, f = vt[-1]
    A = np.array([[a, b], [b, c]])
    if np.linalg.det(A) <= 0:
        raise _NoFit("horizontal readings do not lie on an ellipse")
    if a < 0:
        A, d, e, f = -A, -d, -e, -f
    p = np.array([d, e])
    centre_n = -np.linalg.solve(A, p)
    k = centre_n @ A @ centre_n - f
    M = A / k
    eig, vec = np.linalg.eigh(M)
    if not np.all(np.isfinite(eig)) or eig.min() <= 0:
        raise _NoFit("horizontal readings do not lie on an ellipse")
    W_n = vec @ np.diag(np.sqrt(eig)) @ vec.T
    mean_radius = float(math.sqrt(np.prod(1.0 / np.sqrt(eig))) * s)
    return mu + s * centre_n, W_n / s, mean_radius


def _sphere_coverage(v: np.ndarray) -> float:
    """Fraction of 26 direction cells (cube faces, edges and corners) hit by the directions of v."""
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    cells = np.rint(u / np.abs(u).max(axis=1, keepdims=True) * 1.2071).astype(int)   # each axis to -1/0/1
    cells = np.clip(cells, -1, 1)
    keys = {tuple(c) for c in cells.tolist()}
    keys.discard((0, 0, 0))
    return len(keys) / 26.0


def _circle_coverage(v2: np.ndarray) -> float:
    """Fraction of 36 sectors of 10 degrees hit by the directions of the horizontal vectors v2."""
    ang = np.degrees(np.arctan2(v2[:, 1], v2[:, 0])) % 360.0
    return len(set(np.floor(ang / 10.0).astype(int).tolist())) / 36.0


def coverage_of(readings_t, method: str = "3d") -> float:
    """Coverage (0-1) of raw readings about their mean, for progress display while recording."""
    m = np.asarray(readings_t, dtype=float)
    if len(m) < 2:
        return 0.0
    c = (m.max(axis=0) + m.min(axis=0)) / 2.0           # rough centre: the middle of the bounding box
    return _sphere_coverage(m - c) if method == "3d" else _circle_coverage((m - c)[:, :2])


# ------------------------------------------------------------------------------------------------- files
def write_calibration(path, fit: CalibrationFit, time_utc: str, vessel_name: str = "",
                      written_by: str = "autopilot calibrate mag") -> Path:
    """Write a calibration YAML (see read_calibration). `time_utc`: ISO 8601 string given by the caller."""
    cal = fit.calibration
    data = {
        "written_by": written_by,
        "time_utc": time_utc,
        "vessel": vessel_name,
        "method": cal.method,
        "offset_t": [float(x) for x in cal.offset_t],
        "matrix": [[float(x) for x in row] for row in cal.matrix],
        "figures": {**{k: float(v) if isinstance(v, float) else v for k, v in fit.figures.items()},
                    "accepted": bool(fit.accepted), "reason": fit.reason},
    }
    path = Path(path)
    text = ("# Magnetometer calibration: m_corr = matrix @ (m_raw - offset_t), tesla, body FRD.\n"
            "# Point the vessel config at this file: sensors.mag.calibration_file.\n"
            + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
    path.write_text(text, encoding="utf-8")
    return path


def read_calibration(path) -> MagCalibration:
    """Read a calibration YAML. Errors are ConfigError(file, key, reason).

    Keys: method (2d|3d), offset_t (3 numbers, T), matrix (3x3), figures (mapping), and the informational
    written_by, time_utc, vessel.
    """
    from autopilot.vocab.safe_read import load_yaml_text, read_user_text
    path = Path(path)
    data = load_yaml_text(read_user_text(path), path)
    if not isinstance(data, dict):
        raise ConfigError(path, "", "must be a YAML mapping")
    known = {"written_by", "time_utc", "vessel", "method", "offset_t", "matrix", "figures", "samples"}
    if not {"offset_t", "matrix"} & set(map(str, data)):
        # some other file: its keys are not ours to echo
        raise ConfigError(path, "", "not a magnetometer calibration (it has neither offset_t nor matrix)")
    for k in data:
        if k not in known:
            raise ConfigError(path, str(k), f"unknown key (allowed here: {', '.join(sorted(known))})")
    for k in ("offset_t", "matrix"):
        if k not in data:
            raise ConfigError(path, k, "is required")
    offset = data["offset_t"]
    if not (isinstance(offset, list) and len(offset) == 3 and all(_is_number(x) for x in offset)):
        raise ConfigError(path, "offset_t", f"must be a list of 3 numbers (tesla), got {offset!r}")
    matrix = data["matrix"]
    if not (isinstance(matrix, list) and len(matrix) == 3 and all(isinstance(r, list) and len(r) == 3
                                                                  and all(_is_number(x) for x in r)
                                                                  for r in matrix)):
        raise ConfigError(path, "matrix", f"must be 3 rows of 3 numbers, got {matrix!r}")
    method = data.get("method", "3d")
    if method not in ("2d", "3d"):
        raise ConfigError(path, "method", f"must be 2d or 3d, got {method!r}")
    figures = data.get("figures") or {}
    if not isinstance(figures, dict):
        raise ConfigError(path, "figures", "must be a mapping")
    if any(abs(x) > 1e-3 for x in offset):
        raise ConfigError(path, "offset_t", f"{offset} is larger than 1 mT: the file must be in tesla")
    try:
        return MagCalibration(tuple(offset), tuple(map(tuple, matrix)), method, figures)
    except ValueError as e:
        raise ConfigError(path, "matrix", str(e)) from None


SIM_WRITTEN_BY = "autopilot calibrate mag --sim"   # written_by of a fit to the simulator's magnetometer


def calibration_from_simulator(path_or_data) -> bool:
    """Whether a calibration (a file path, or its YAML mapping as read) was fitted to the simulator's
    magnetometer: its written_by starts with SIM_WRITTEN_BY. False when written_by is absent or not text.
    A path that cannot be read as YAML raises ConfigError(file, key, reason); anything but a path or a mapping
    raises TypeError."""
    if isinstance(path_or_data, dict):
        data = path_or_data
    elif isinstance(path_or_data, (str, Path)):
        from autopilot.vocab.safe_read import load_yaml_text, read_user_text
        path = Path(path_or_data)
        loaded = load_yaml_text(read_user_text(path), path)
        if not isinstance(loaded, dict):
            raise ConfigError(path, "", "must be a YAML mapping")
        data = loaded
    else:
        raise TypeError(f"a calibration file path or its mapping, got {type(path_or_data).__name__}")
    written_by = data.get("written_by")
    return isinstance(written_by, str) and written_by.strip().startswith(SIM_WRITTEN_BY)


def calibration_path(vessel) -> Optional[Path]:
    """vessel.sensors.mag.calibration_file as a Path (a relative one from the vessel file's directory), or None
    when it is not set. The file need not exist."""
    name = vessel.sensors.mag.calibration_file
    if not name:
        return None
    path = Path(name)
    if not path.is_absolute() and vessel.source_file:
        path = Path(vessel.source_file).resolve().parent / path
    return path


def calibration_for_vessel(vessel) -> Optional[MagCalibration]:
    """The calibration named by vessel.sensors.mag.calibration_file (relative to the vessel file), or None
    when none is named. A named file that is missing or malformed raises ConfigError."""
    path = calibration_path(vessel)
    return None if path is None else read_calibration(path)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ------------------------------------------------------------------------------------------------- errors
def soft_iron_error_pct(matrix, soft_iron, method: str = "3d") -> float:
    """How far matrix @ soft_iron is from the identity: spectral norm of (W S - I), in percent.

    Zero when the correction exactly undoes the distortion; 2 % means some direction is still scaled or
    skewed by 2 %. For a 2-D calibration only the horizontal (x-y) block is compared.
    """
    W = np.asarray(matrix, dtype=float)
    S = np.asarray(soft_iron, dtype=float).reshape(3, 3)
    n = 2 if method == "2d" else 3
    return 100.0 * float(np.linalg.norm(W[:n, :n] @ S[:n, :n] - np.eye(n), 2))
