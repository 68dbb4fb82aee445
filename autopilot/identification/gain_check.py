"""The gain check behind `autopilot identify hull --out`: the derived gains and the vessel file's own, judged
on the identified model before either is written.

The derived gains (autopilot.identification.hull.derived_gains) come from formulas on the identified model; on
a hull unlike its guessed file they can fly worse than the guess's. So both sets are flown on the identified
model, the plant built from the identified vessel file (hil.sim.plant.Plant, its own hull, thrusters and
wind areas) with a little weather: wind WIND_MPS from the beam with gusts, and noise on the heading and yaw
rate the controllers see (the true state otherwise, no estimator: the check is about the gains, and it is
cheap: a flight takes 0.1-0.2 s of CPU, the whole check 1-3 s). Per gain group, in this order, the other groups
as already chosen:

  heading (omega_n, zeta): a 20 deg heading step at the cruise speed (0.4 x hull.max_speed_mps);
      score = overshoot [deg] + settling time [s] / 10 (settled: within 1 deg of the new heading from then on;
      1 deg of overshoot weighs as 10 s of settling). The derived set must also keep the phase margin
      `autopilot check` asks (REQUIRED_MARGIN_DEG, 45 deg) at rest on the identified model, and under way (at
      hull.max_speed_mps) at least that or the file's set's, whichever is less; else it is refused.
  speed (kp, ki): a short mission at cruise (a leg of LEG_HULL_LENGTHS hull lengths started half a hull length
      off the track, a 90 deg turn, a second leg): score = RMS of the speed error (asked - true surge) [m/s].
  lookahead (lookahead_hull_lengths): the same mission: score = cross-track RMS [m].

The derived set of a group is kept when its score is no worse than the file's (and, for the heading, its phase
margin is enough); otherwise the file's set is kept, and the check says so with both figures. Groups whose
derived and filed values are equal are not flown. Pure simulation, deterministic (fixed seeds, each figure the
mean over SEEDS), no I/O but a temporary mission file.
"""
from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional

import numpy as np

GROUPS = {"heading": ("heading_omega_n_rps", "heading_zeta"),
          "speed": ("speed_kp_per_s", "speed_ki_per_s2"),
          "lookahead": ("lookahead_hull_lengths",)}
STEP_DEG = 20.0
STEP_AT_S, STEP_END_S = 5.0, 40.0
SETTLE_BAND_DEG = 1.0
SETTLE_WEIGHT_S = 10.0            # seconds of settling that weigh as one degree of overshoot
CRUISE_FRACTION = 0.4             # of hull.max_speed_mps
LEG_HULL_LENGTHS = 12.0
WIND_MPS, GUST_MPS = 2.0, 0.3     # from the beam (90 deg) of the first leg
HEADING_NOISE_DEG, YAW_RATE_NOISE_DPS = 0.3, 0.1
SEEDS = (1, 2, 3)                 # each figure is the mean over these seeds (wind gusts, noise)


def file_gains(vessel) -> Dict[str, float]:
    """The gains the vessel file has, under derived_gains' names."""
    c = vessel.control
    return {"heading_omega_n_rps": c.heading.omega_n_rps, "heading_zeta": c.heading.zeta,
            "speed_kp_per_s": c.speed.kp_per_s, "speed_ki_per_s2": c.speed.ki_per_s2,
            "lookahead_hull_lengths": c.lookahead_hull_lengths}


def with_gains(vessel, gains: Dict[str, float]):
    """`vessel` with the gains (derived_gains' names) in its control section."""
    c = vessel.control
    return dataclasses.replace(vessel, control=dataclasses.replace(
        c, heading=dataclasses.replace(c.heading, omega_n_rps=gains["heading_omega_n_rps"],
                                       zeta=gains["heading_zeta"]),
        speed=dataclasses.replace(c.speed, kp_per_s=gains["speed_kp_per_s"], ki_per_s2=gains["speed_ki_per_s2"]),
        lookahead_hull_lengths=gains["lookahead_hull_lengths"]))


@dataclass
class GainCheck:
    gains: Dict[str, float]             # the gains to write: per group the derived or the file's
    kept: Dict[str, str]                # group -> "derived" | "file" | "same" (derived equals the file's)
    why: Dict[str, str]                 # group -> the reason, with the figures
    figures: Dict[str, dict] = field(default_factory=dict)   # "heading derived" etc. -> flown figures
    cpu_s: float = 0.0

    def as_dict(self) -> dict:
        return {"gains": self.gains, "kept": self.kept, "why": self.why, "figures": self.figures,
                "cpu_s": self.cpu_s}

    def lines(self) -> list:
        return [f"  {g}: {self.kept[g]} kept: {self.why[g]}" for g in GROUPS]


def _controllers(vessel):
    from autopilot.control.azimuth_allocation import make_allocator
    from autopilot.control.heading_speed import HeadingController, SpeedController
    from drivers.thrust_map import make_thrust_maps
    alloc = make_allocator(vessel, list(make_thrust_maps(vessel)))
    return (alloc, HeadingController(vessel, alloc.max_yaw_nm),
            SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n))


def _env():
    from hil.sim.environment import EnvironmentConfig
    return EnvironmentConfig(wind_speed_mps=WIND_MPS, wind_from_deg=90.0, gust_std_mps=GUST_MPS)


def _cruise_mps(vessel) -> float:
    return CRUISE_FRACTION * vessel.hull.max_speed_mps


def heading_step(vessel, seed: int = 1) -> dict:
    """A STEP_DEG heading step at cruise on `vessel`'s own plant: overshoot [deg], settling time [s]."""
    from autopilot.control.azimuth_allocation import angles_or_zero
    from autopilot.vocab.angles import wrap_pi
    from autopilot.vocab.types import Wrench
    from hil.sim.plant import Plant
    alloc, hc, sc = _controllers(vessel)
    cruise = _cruise_mps(vessel)
    plant = Plant(vessel, _env(), seed, 0.0, 0.0, 0.0, surge_mps=cruise)
    rng = np.random.default_rng([seed, 0x6A])
    dt = 1.0 / vessel.control.loop_rate_hz
    n = len(vessel.thrusters)
    pods = any(t.azimuth is not None for t in vessel.thrusters)
    thrust, angle = [0.0] * n, ([0.0] * n if pods else None)
    step = math.radians(STEP_DEG)
    peak, last_out = -math.inf, STEP_AT_S
    for k in range(1, int(STEP_END_S / dt) + 1):
        t = k * dt
        tr = plant.step_to(t, thrust, angle)
        ref = step if t >= STEP_AT_S else 0.0
        psi = tr.heading_rad + math.radians(HEADING_NOISE_DEG) * rng.standard_normal()
        r = tr.yaw_rate_rps + math.radians(YAW_RATE_NOISE_DPS) * rng.standard_normal()
        cmd = alloc.allocate(Wrench(sc.update(t, tr.surge_mps, cruise), hc.update(t, psi, r, ref)))
        thrust, angle = list(cmd.thrust_n), (list(angles_or_zero(cmd)) if pods else None)
        if t >= STEP_AT_S:
            err = math.degrees(wrap_pi(tr.heading_rad - step))
            peak = max(peak, err)
            if abs(err) > SETTLE_BAND_DEG:
                last_out = t
    return {"overshoot_deg": max(0.0, peak), "settle_s": last_out - STEP_AT_S}


def _mission(vessel):
    from autopilot.vocab.config import load_mission
    leg = LEG_HULL_LENGTHS * vessel.hull.length_m
    text = (f"name: gain-check\nanchor: {{lat_deg: 51.11, lon_deg: 17.06}}\n"
            f"start: {{point: {{north_m: 0.0, east_m: 0.0}}, heading_deg: 0}}\n"
            f"waypoints: [{{north_m: {leg:.3f}, east_m: 0.0}}, {{north_m: {leg:.3f}, east_m: {leg:.3f}}}]\n"
            f"guidance: {{law: ilos, sigma: 0.3}}\n"
            f"cruise_speed_mps: {_cruise_mps(vessel):.3f}\nacceptance_radius_m: {max(1.0, vessel.hull.length_m):.2f}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gain_check.yaml"
        path.write_text(text)
        return load_mission(path)


def leg_and_turn(vessel, seed: int = 1) -> dict:
    """The two-leg mission at cruise, guidance and controllers on the (noisy) true state of `vessel`'s own
    plant: cross-track RMS [m], speed error RMS [m/s], completed."""
    from autopilot.control.azimuth_allocation import angles_or_zero
    from autopilot.guidance.path_following import MissionGuidance
    from autopilot.vocab.types import NavState, Wrench
    from hil.sim.plant import Plant
    alloc, hc, sc = _controllers(vessel)
    mission = _mission(vessel)
    guidance = MissionGuidance(mission, vessel, max_yaw_nm=alloc.max_yaw_nm)
    cruise = _cruise_mps(vessel)
    plant = Plant(vessel, _env(), seed, 0.0, 0.5 * vessel.hull.length_m, 0.0, surge_mps=cruise)
    rng = np.random.default_rng([seed, 0x1E])
    dt = 1.0 / vessel.control.loop_rate_hz
    n = len(vessel.thrusters)
    pods = any(t.azimuth is not None for t in vessel.thrusters)
    thrust, angle = [0.0] * n, ([0.0] * n if pods else None)
    cap_s = 3.0 * 2.0 * LEG_HULL_LENGTHS * vessel.hull.length_m / cruise + 30.0
    xte, speed_err, done = [], [], False
    for k in range(1, int(cap_s / dt) + 1):
        t = k * dt
        tr = plant.step_to(t, thrust, angle)
        nav = NavState(t, tr.north_m, tr.east_m,
                       tr.heading_rad + math.radians(HEADING_NOISE_DEG) * rng.standard_normal(),
                       tr.surge_mps, tr.sway_mps,
                       tr.yaw_rate_rps + math.radians(YAW_RATE_NOISE_DPS) * rng.standard_normal())
        sp = guidance.update(t, nav)
        if sp is None:
            done = True
            break
        xte.append(sp.xte_m)
        speed_err.append(sp.speed_mps - tr.surge_mps)
        cmd = alloc.allocate(Wrench(sc.update(t, nav.surge_mps, sp.speed_mps),
                                    hc.update(t, nav.heading_rad, nav.yaw_rate_rps, sp.heading_rad,
                                              sp.yaw_rate_ff_rps)))
        thrust, angle = list(cmd.thrust_n), (list(angles_or_zero(cmd)) if pods else None)
    return {"xte_rms_m": float(np.sqrt(np.mean(np.square(xte)))),
            "speed_err_rms_mps": float(np.sqrt(np.mean(np.square(speed_err)))), "complete": done}


def phase_margins_deg(vessel) -> tuple:
    """(at rest, at hull.max_speed_mps) phase margin of `vessel`'s heading loop on its own model, as
    `autopilot check` computes it."""
    from autopilot.control.margins import heading_phase_margin_deg
    return heading_phase_margin_deg(vessel), heading_phase_margin_deg(vessel, vessel.hull.max_speed_mps)


def heading_score(step: dict) -> float:
    return step["overshoot_deg"] + step["settle_s"] / SETTLE_WEIGHT_S


def _pm(x: float) -> str:
    from autopilot.files.check import _margin_text
    return _margin_text(x)


def _mean(flights) -> dict:
    return {k: (all(f[k] for f in flights) if isinstance(flights[0][k], bool) else
                float(np.mean([f[k] for f in flights]))) for k in flights[0]}


def check_gains(identified, derived: Dict[str, float], filed: Optional[Dict[str, float]] = None,
                seeds=SEEDS) -> GainCheck:
    """Judge `derived` against `filed` (default: `identified`'s own control section, which should be the user's
    file's) on the identified vessel `identified`; see the module docstring."""
    from autopilot.control.margins import REQUIRED_MARGIN_DEG
    t0 = time.process_time()
    filed = dict(file_gains(identified) if filed is None else filed)
    chosen = {k: filed[k] for g in GROUPS.values() for k in g}
    kept, why, figures = {}, {}, {}

    def same(group):
        return all(abs(float(derived[k]) - float(filed[k])) < 1e-12 for k in GROUPS[group])

    def trial(group, source):
        return dict(chosen, **{k: (derived if source == "derived" else filed)[k] for k in GROUPS[group]})

    # heading
    if same("heading"):
        kept["heading"], why["heading"] = "same", "the derived heading gains are the file's"
    else:
        res = {}
        for src in ("derived", "file"):
            v = with_gains(identified, trial("heading", src))
            res[src] = _mean([heading_step(v, s) for s in seeds])
            res[src]["pm_rest_deg"], res[src]["pm_fast_deg"] = phase_margins_deg(v)
            res[src]["score"] = heading_score(res[src])
            figures[f"heading {src}"] = res[src]
        d, f = res["derived"], res["file"]
        fig = (f"{STEP_DEG:g} deg step overshoot {d['overshoot_deg']:.2f} deg, settled in {d['settle_s']:.1f} s, "
               f"score {d['score']:.2f} (derived) vs {f['overshoot_deg']:.2f} deg, {f['settle_s']:.1f} s, score "
               f"{f['score']:.2f} (file); phase margin at rest {_pm(d['pm_rest_deg'])} vs {_pm(f['pm_rest_deg'])}, "
               f"at {identified.hull.max_speed_mps:g} m/s {_pm(d['pm_fast_deg'])} vs {_pm(f['pm_fast_deg'])}")
        need_fast = min(REQUIRED_MARGIN_DEG, f["pm_fast_deg"])
        if d["pm_rest_deg"] < REQUIRED_MARGIN_DEG:
            kept["heading"] = "file"
            why["heading"] = (f"the derived set's phase margin at rest is below the {REQUIRED_MARGIN_DEG:g} deg "
                              f"`autopilot check` asks; {fig}")
        elif d["pm_fast_deg"] < need_fast:
            kept["heading"] = "file"
            floor = (f"the {REQUIRED_MARGIN_DEG:g} deg `autopilot check` asks" if need_fast >= REQUIRED_MARGIN_DEG
                     else "the file's set's")
            why["heading"] = f"the derived set's phase margin under way is below {floor}; {fig}"
        elif d["score"] <= f["score"]:
            kept["heading"], why["heading"] = "derived", f"it flies no worse: {fig}"
        else:
            kept["heading"], why["heading"] = "file", f"the derived set flies worse: {fig}"
    chosen.update({k: (derived if kept["heading"] == "derived" else filed)[k] for k in GROUPS["heading"]})

    # speed, then lookahead, on the leg and turn
    legs = {}

    def fly(gains):
        key = tuple(sorted(gains.items()))
        if key not in legs:
            legs[key] = _mean([leg_and_turn(with_gains(identified, gains), s) for s in seeds])
        return legs[key]

    for group, metric, unit, what in (("speed", "speed_err_rms_mps", "m/s", "speed error RMS"),
                                      ("lookahead", "xte_rms_m", "m", "cross-track RMS")):
        if same(group):
            kept[group], why[group] = "same", f"the derived {group} gains are the file's"
            continue
        d, f = fly(trial(group, "derived")), fly(trial(group, "file"))
        figures[f"{group} derived"], figures[f"{group} file"] = d, f
        fig = (f"{what} on a {LEG_HULL_LENGTHS:g}-hull-length leg and 90 deg turn {d[metric]:.3f} {unit} "
               f"(derived) vs {f[metric]:.3f} {unit} (file)"
               f"{'' if d['complete'] else '; the derived set did not finish the mission'}")
        if d[metric] <= f[metric] and (d["complete"] or not f["complete"]):
            kept[group], why[group] = "derived", f"it flies no worse: {fig}"
        else:
            kept[group], why[group] = "file", f"the derived set flies worse: {fig}"
        chosen.update({k: (derived if kept[group] == "derived" else filed)[k] for k in GROUPS[group]})
    return GainCheck(gains=chosen, kept=kept, why=why, figures=figures, cpu_s=time.process_time() - t0)
