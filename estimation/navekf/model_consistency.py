"""How well the vessel model predicts what the sensors see, and what the navigation filter does about it.

A model-aided filter trusts its vessel file, and no vessel file matches its boat. Three mechanisms keep a
wrong model from turning into rejected GNSS and a failsafe (the model-error states themselves live in
estimation.navekf.model):

- Model-error evidence (`InnovationMonitor.learning`): the surge model-error state (estimation.navekf.model)
  starts unknown but constant (no process noise), so it settles as the boat's turns tell it from a water
  current (on a straight leg the two look alike); it gets process noise only while the data say the model
  is wrong. While the GNSS position and velocity innovations along the bow keep one sign, the filter widens
  that state's covariance and process noise; once they centre on zero again it keeps what it learned and
  stops moving it.
- `InnovationMonitor`: per-axis statistics of the normalised innovations the model produces (surge and sway
  from GNSS velocity, yaw from the gyro), as moving averages over about `window` updates. A consistent filter
  shows 1 on each axis. `consistency` (GNSS velocity NIS per degree of freedom) scales the process noise of
  the velocity and model-error states (covariance matching, Mehra 1972): `process_noise_scale` follows the
  ratio up at once and back down slowly, between 1 and `max_scale`, so a model that mispredicts gets wider
  uncertainty and the fixes keep being accepted; a consistent model keeps its nominal noise (and accuracy).
- `DriftGate`: tells a GNSS glitch from model drift when a fix fails the innovation gate. A glitch is a
  receiver that jumps: the innovation changes suddenly from one fix to the next by more than noise explains.
  Model drift is the prediction walking away from fixes that agree with each other: the innovation grows
  fix by fix. A fix failing the gate after such a gradual run is accepted with the position covariance
  widened to cover it (counted as a model-drift acceptance, not a GNSS re-acquisition, so no glitch failsafe);
  a run that began with a jump stays a glitch (rejected until the filter's own re-acquisition timeout).

Pure: arrays and floats in, decisions out; no clock, no I/O.
Why: docs/design-notes/estimation-and-drivers.md, "The EKF".
"""
from __future__ import annotations

import math
from typing import Optional

AXES = ("surge", "sway", "yaw")


class InnovationMonitor:
    """Moving statistics of normalised innovations, the adaptive process-noise scale and the model-error
    evidence they give.

    `add_velocity(e_surge, e_sway)`: GNSS velocity innovations along the body axes, each divided by its
    predicted standard deviation (~N(0, 1) for a consistent filter); `add_position_surge(e)`: the GNSS
    position innovation along the bow, normalised the same way; `add_yaw(nis)`: the gyro's squared one.
    Squares are clipped at `clip` so a single outlier cannot dominate the window.

    Model-error evidence: a model that keeps over- or under-predicting the speed shows as innovations of one
    sign (the boat keeps arriving behind or ahead of where the model puts it) even while the NIS looks fine,
    because every update pulls the estimate back. `surge_evidence_z` is how many standard errors the moving
    means (over ~`evidence_window` fixes) of the position and velocity innovations along the bow lie from
    zero. Above `learn_above_z` the monitor starts `learning` (counted in `learning_starts`: the filter widens
    its model-error states then) and keeps it until the evidence falls below `settled_below_z` and the filter
    reports the model error known (`settle(known)`).
    """

    def __init__(self, window: int = 10, max_scale: float = 100.0, decay_updates: float = 30.0,
                 clip: float = 50.0, inflate_above: float = 2.0, evidence_window: int = 20,
                 learn_above_z: float = 2.5, settled_below_z: float = 1.0):
        self._k = 1.0 / window
        self._k_evidence = 1.0 / evidence_window
        self._decay = math.exp(-1.0 / decay_updates)
        self.max_scale = max_scale
        self.clip = clip
        self.inflate_above = inflate_above
        self.learn_above_z, self.settled_below_z = learn_above_z, settled_below_z
        self.nis = {axis: 1.0 for axis in AXES}
        self.mean_surge = 0.0
        self.mean_position_surge = 0.0
        self.process_noise_scale = 1.0
        self.learning = False
        self.learning_starts = 0
        self._known = False
        # std of an EMA of N(0, 1) samples with gain k: sqrt(k / (2 - k))
        self._mean_std = math.sqrt(self._k_evidence / (2.0 - self._k_evidence))

    @property
    def consistency(self) -> float:
        """Mean NIS per degree of freedom of GNSS velocity (~1 consistent; much larger: the model mispredicts)."""
        return 0.5 * (self.nis["surge"] + self.nis["sway"])

    @property
    def worst_axis(self) -> str:
        return max(AXES, key=self.nis.__getitem__)

    def add_velocity(self, e_surge: float, e_sway: float) -> None:
        k, clip = self._k, self.clip
        self.nis["surge"] += k * (min(e_surge * e_surge, clip) - self.nis["surge"])
        self.nis["sway"] += k * (min(e_sway * e_sway, clip) - self.nis["sway"])
        lim = math.sqrt(clip)
        self.mean_surge += self._k_evidence * (max(-lim, min(lim, e_surge)) - self.mean_surge)
        self._adapt()
        self._model_error_evidence()

    def add_position_surge(self, e: float) -> None:
        """One GNSS position innovation along the bow over its predicted standard deviation (signed)."""
        lim = math.sqrt(self.clip)
        self.mean_position_surge += self._k_evidence * (max(-lim, min(lim, e)) - self.mean_position_surge)
        self._model_error_evidence()

    @property
    def surge_evidence_z(self) -> float:
        """Standard errors from zero of the moving means of the bow-wise position and surge-velocity
        innovations when both have the same sign (0 otherwise): their average, as if fully correlated (the
        conservative reading)."""
        zp, zv = self.mean_position_surge / self._mean_std, self.mean_surge / self._mean_std
        return 0.5 * abs(zp + zv) if zp * zv > 0.0 else 0.0

    def _model_error_evidence(self) -> None:
        z = self.surge_evidence_z
        if not self.learning and z >= self.learn_above_z:
            self.learning = True
            self.learning_starts += 1
        elif self.learning and z < self.settled_below_z and self._known:
            self.learning = False

    def settle(self, known: bool) -> None:
        """The filter's word on whether the model error is now known well (its covariance is small)."""
        self._known = known

    def add_yaw(self, nis: float, weight: float = 1.0) -> None:
        """`weight` < 1 for high-rate sensors, so the window spans a similar time on every axis."""
        self.nis["yaw"] += self._k * weight * (min(nis, self.clip) - self.nis["yaw"])

    def _adapt(self) -> None:
        c = self.consistency
        target = 1.0 if c <= self.inflate_above else min(self.max_scale, c * c / self.inflate_above)
        scale = self.process_noise_scale
        if target > scale:
            self.process_noise_scale = target
        else:                       # back to the nominal noise slowly: a model that failed once may again
            self.process_noise_scale = max(target, 1.0 + (scale - 1.0) * self._decay)


class DriftGate:
    """Classifies GNSS position fixes that fail the innovation gate as model drift or a glitch.

    `classify(t_s, y_n, y_e, s_nn, s_ee, r_var, gated)` is called for every fix with its innovation
    (y, metres) and innovation covariance S (m^2), the fix's own variance r_var (m^2) and whether it failed the
    gate. Returns "ok" (passed the gate), "outlier" (the first failure of a gradual run: reject it, as a 1-in-
    1000 noise outlier is), "drift" (the second and later failures of a run that grew gradually from fixes that
    agree with each other: accept with the covariance widened) or "glitch" (failed after a sudden jump, or
    within a run that began with one: reject).

    Sudden: the change of innovation since the previous fix, normalised by twice the fix variance plus what
    the innovation covariance grew by (the two fixes' noise and the prediction's), exceeds `jump_gate`
    (chi-square 2 dof). A previous fix older than `max_gap_s` (an outage) leaves nothing to compare with:
    glitch, and the filter's slower re-acquisition decides.
    """

    def __init__(self, jump_gate: float = 13.816, max_gap_s: float = 3.5):
        self.jump_gate = jump_gate
        self.max_gap_s = max_gap_s
        self._prev: Optional[tuple] = None     # (t_s, y_n, y_e, s_nn, s_ee) of the previous fix
        self._run: Optional[str] = None        # "candidate", "drift" or "glitch" while fixes keep failing the gate

    def classify(self, t_s: float, y_n: float, y_e: float, s_nn: float, s_ee: float,
                 r_var: float, gated: bool) -> str:
        prev, self._prev = self._prev, (t_s, y_n, y_e, s_nn, s_ee)
        if not gated:
            self._run = None
            return "ok"
        if self._run == "glitch":
            return "glitch"
        if prev is None or t_s - prev[0] > self.max_gap_s:
            self._run = "glitch"
            return "glitch"
        dn, de = y_n - prev[1], y_e - prev[2]
        var = 2.0 * r_var + max(0.0, 0.5 * ((s_nn - prev[3]) + (s_ee - prev[4])))
        if (dn * dn + de * de) / var > self.jump_gate:
            self._run = "glitch"
            return "glitch"
        if self._run is None:
            self._run = "candidate"
            return "outlier"
        self._run = "drift"
        return "drift"

    def reset(self) -> None:
        self._prev = None
        self._run = None

