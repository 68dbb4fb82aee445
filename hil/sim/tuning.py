"""Robust tuning: the controller and guidance gains that minimise a stated cost over a campaign's ensemble.

The ensemble is a campaign (hil/sim/campaign.py): missions x mismatched plants x weather x seeds. A candidate is a
set of field tunables (autopilot/files/tunables.py: HDG_OMEGA, HDG_ZETA, SPD_KP, SPD_KI, NAV_ILOS_SIGMA), each run
of the ensemble flies with them (checked by the vessel file's schema like a ground station's PARAM_SET), and
the candidate's cost is

    cost = p95 over the ensemble of xte_rms [m] + 5 m per incomplete run share + 2 m per false failsafe
           + 1 m per run that errored
           + 0.2 m per thruster reversal per minute (ensemble mean) + 10 m per share of cycles at a thrust limit

(reversals and saturation as hil/sim/thruster_usage.py counts them: a tracking gain bought with a propeller that
keeps reversing, or with thrust the boat does not have, is not a better gain).

Optuna's TPE sampler (seeded: the same search twice gives the same trials) proposes candidates; the first trial
is the vessel file's own gains, so the result is never worse than the file on this ensemble. The best gains are
written as a parameter overlay (`NAME: value`, the format `<boat config>.params.yaml` has), with the cost before
and after.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

# tunable -> (low factor, high factor) about the file's value, or absolute (low, high) when the file's is 0
SPACE: Dict[str, Tuple[float, float]] = {"HDG_OMEGA": (0.5, 2.0), "HDG_ZETA": (0.6, 1.6), "SPD_KP": (0.3, 3.0),
                                         "SPD_KI": (0.2, 3.0), "NAV_ILOS_SIGMA": (0.0, 2.0)}
ABSOLUTE = {"HDG_ZETA", "NAV_ILOS_SIGMA"}       # searched as values, not factors
REVERSAL_COST_M = 0.2        # per thruster reversal per minute
SATURATION_COST_M = 10.0     # per share of cycles with a thruster at its limit


def cost(rows: Sequence[dict]) -> float:
    """The stated cost of one candidate's rows (see the module docstring); lower is better."""
    ok = [r for r in rows if "error" not in r]
    xte = [r["xte_rms_m"] for r in ok if isinstance(r.get("xte_rms_m"), (int, float)) and math.isfinite(r["xte_rms_m"])]
    p95 = float(np.percentile(xte, 95)) if xte else 50.0
    incomplete = 1.0 - (np.mean([bool(r.get("complete")) for r in ok]) if ok else 0.0)
    false_fs = sum(int(r.get("false_failsafes", 0)) for r in ok)
    reversals = _mean_finite(r.get("reversals_per_min") for r in ok)
    saturated = _mean_finite(r.get("saturated_frac") for r in ok)
    return (p95 + 5.0 * float(incomplete) + 2.0 * false_fs + 1.0 * (len(rows) - len(ok))
            + REVERSAL_COST_M * reversals + SATURATION_COST_M * saturated)


def _mean_finite(values) -> float:
    v = [x for x in values if isinstance(x, (int, float)) and math.isfinite(x)]
    return float(np.mean(v)) if v else 0.0


@dataclass
class Trial:
    params: Dict[str, float]
    cost: float
    rows: List[dict]


def baseline_params(vessel, mission) -> Dict[str, float]:
    from autopilot.files.tunables import ParamStore
    store = ParamStore(vessel, mission)
    return {name: store.value(name) for name in SPACE}


def tune(runs: List[dict], evaluate: Callable[[List[dict]], List[dict]], base: Dict[str, float], trials: int,
         seed: int = 1, on_trial: Optional[Callable[[int, Trial], None]] = None) -> List[Trial]:
    """Search SPACE about `base` (the file's values) with Optuna; `evaluate(runs_with_params)` flies a
    candidate's runs and returns their rows. Returns every trial, the file's own first."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    bounds = {name: ((min(lo, base[name]), max(hi, base[name])) if name in ABSOLUTE else (lo, hi))
              for name, (lo, hi) in SPACE.items()}
    study.enqueue_trial({name: (base[name] if name in ABSOLUTE else 1.0) for name in SPACE})
    out: List[Trial] = []

    def objective(trial) -> float:
        params = {}
        for name, (lo, hi) in bounds.items():
            x = trial.suggest_float(name, lo, hi)
            params[name] = round(x if name in ABSOLUTE else base[name] * x, 6)
        rows = evaluate([dict(r, params={**r.get("params", {}), **params}) for r in runs])
        t = Trial(params, cost(rows), rows)
        out.append(t)
        if on_trial is not None:
            on_trial(len(out) - 1, t)
        return t.cost
    study.optimize(objective, n_trials=trials)
    return out
