"""The gain check behind `autopilot identify hull --out`: the derived gains and the vessel file's own, judged
on the identified model before either is written.

The derived gains (autopilot.identification.hull.derived_gains) come from formulas on the identified model; on
a hull unlike its guessed file they can fly worse than the guess's. So both sets are flown on the identified
model, the plant built from the identified vessel file (hil.sim.gain_flights on hil.sim.plant.Plant, its own
hull, thrusters and wind areas) with a little weather: wind 2 m/s from the beam with gusts, and noise on the
heading and yaw rate the controllers see (the true state otherwise, no estimator: the check is about the gains,
and it is cheap: a flight takes 0.1-0.2 s of CPU, the whole check 1-3 s). Per gain group, in this order, the
other groups as already chosen:

  heading (omega_n, zeta): a 20 deg heading step at the cruise speed (0.4 x hull.max_speed_mps);
      score = overshoot [deg] + settling time [s] / 10 (settled: within 1 deg of the new heading from then on;
      1 deg of overshoot weighs as 10 s of settling). The derived set must also keep the phase margin
      `autopilot check` asks (REQUIRED_MARGIN_DEG, 45 deg) at rest on the identified model, and under way (at
      hull.max_speed_mps) at least that or the file's set's, whichever is less; else it is refused.
  speed (kp, ki): a short mission at cruise (a leg of 12 hull lengths started half a hull length
      off the track, a 90 deg turn, a second leg): score = RMS of the speed error (asked - true surge) [m/s].
  lookahead (lookahead_hull_lengths): the same mission: score = cross-track RMS [m].

The derived set of a group is kept when its score is no worse than the file's (and, for the heading, its phase
margin is enough); otherwise the file's set is kept, and the check says so with both figures. Groups whose
derived and filed values are equal are not flown. Pure simulation, deterministic (fixed seeds, each figure the
mean over SEEDS), no I/O but a temporary mission file.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

GROUPS = {"heading": ("heading_omega_n_rps", "heading_zeta"),
          "speed": ("speed_kp_per_s", "speed_ki_per_s2"),
          "lookahead": ("lookahead_hull_lengths",)}
SETTLE_WEIGHT_S = 10.0            # seconds of settling that weigh as one degree of overshoot
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
                seeds=SEEDS, *, flights) -> GainCheck:
    """Judge `derived` against `filed` (default: `identified`'s own control section, which should be the user's
    file's) on the identified vessel `identified`; see the module docstring. `flights` flies them: an object
    with heading_step(vessel, seed) -> {overshoot_deg, settle_s} and leg_and_turn(vessel, seed) -> {xte_rms_m,
    speed_err_rms_mps, complete}, and its STEP_DEG and LEG_HULL_LENGTHS (hil.sim.gain_flights; the CLI, the
    composition root, passes it)."""
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
            res[src] = _mean([flights.heading_step(v, s) for s in seeds])
            res[src]["pm_rest_deg"], res[src]["pm_fast_deg"] = phase_margins_deg(v)
            res[src]["score"] = heading_score(res[src])
            figures[f"heading {src}"] = res[src]
        d, f = res["derived"], res["file"]
        fig = (f"{flights.STEP_DEG:g} deg step overshoot {d['overshoot_deg']:.2f} deg, "
               f"settled in {d['settle_s']:.1f} s, "
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
            legs[key] = _mean([flights.leg_and_turn(with_gains(identified, gains), s) for s in seeds])
        return legs[key]

    for group, metric, unit, what in (("speed", "speed_err_rms_mps", "m/s", "speed error RMS"),
                                      ("lookahead", "xte_rms_m", "m", "cross-track RMS")):
        if same(group):
            kept[group], why[group] = "same", f"the derived {group} gains are the file's"
            continue
        d, f = fly(trial(group, "derived")), fly(trial(group, "file"))
        figures[f"{group} derived"], figures[f"{group} file"] = d, f
        fig = (f"{what} on a {flights.LEG_HULL_LENGTHS:g}-hull-length leg and 90 deg turn {d[metric]:.3f} {unit} "
               f"(derived) vs {f[metric]:.3f} {unit} (file)"
               f"{'' if d['complete'] else '; the derived set did not finish the mission'}")
        if d[metric] <= f[metric] and (d["complete"] or not f["complete"]):
            kept[group], why[group] = "derived", f"it flies no worse: {fig}"
        else:
            kept[group], why[group] = "file", f"the derived set flies worse: {fig}"
        chosen.update({k: (derived if kept[group] == "derived" else filed)[k] for k in GROUPS[group]})
    return GainCheck(gains=chosen, kept=kept, why=why, figures=figures, cpu_s=time.process_time() - t0)
