"""An identification run in the simulator: the vessel driven in MANUAL by a scripted operator through the
open-loop excitation of hil/sim/excitation.py, everything through the real drivers, logged like a boat's run.

`fly_identification(vessel, log_dir, seed, ...)` returns the run directory; `autopilot identify hull` reads it.
The operator's stick values are the excitation's force and moment over the MANUAL mode's full scale, so the
thrust the log records is what the allocation and the ESCs made of them (slew, dead zone, saturation).
`fly_identification_mission(vessel, mission, log_dir, seed, ...)` flies an identification mission in AUTO
instead (config/missions/identify.yaml: the autopilot runs the segments itself, inside its box).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from autopilot.runlog.sim_log import SimRunLog
from autopilot.vocab.config import CONFIG_DIR, load_mission
from hil.sim.environment import EnvironmentConfig
from hil.sim.excitation import excitation
from hil.sim.runner import SimOptions, run_sim

START_DELAY_S = 5.0          # the run arms and settles before the excitation starts


def fly_identification(vessel, log_dir, seed: int = 1, plant_spec=None, env: Optional[EnvironmentConfig] = None,
                       gps_noise: str = "realistic", devices: str = "bytes", rate_hz: float = 50.0,
                       yaw_scale: float = 1.0) -> Path:
    """Fly the excitation (seed draws its PRBS and the sensor noise) and log it at rate_hz into log_dir;
    yaw_scale scales its yaw moments (0: a run that never turns)."""
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")     # only its start point and frame are used
    t_in, x_in, n_in = excitation(vessel, seed=seed)
    n_in = n_in * yaw_scale
    step = t_in[1] - t_in[0]

    def operator(t, ap, truth):
        k = int((t - START_DELAY_S) / step)
        surge, yaw = (x_in[k], n_in[k]) if 0 <= k < len(t_in) else (0.0, 0.0)
        ap.operator_command(t, surge / ap.manual.max_surge_n, yaw / ap.manual.max_yaw_nm)

    log = SimRunLog(vessel, mission, log_dir, rate_hz)
    try:
        run_sim(vessel, mission, SimOptions(seed=seed, env=env or EnvironmentConfig(), gps_noise=gps_noise,
                                            duration_s=START_DELAY_S + t_in[-1], initial_mode="MANUAL",
                                            on_cycle=operator, on_result=log.on_result, plant_spec=plant_spec,
                                            devices=devices))
    finally:
        log.close()
    return log.log.run_dir


def fly_identification_mission(vessel, mission, log_dir, seed: int = 1, plant_spec=None,
                               env: Optional[EnvironmentConfig] = None, gps_noise: str = "realistic",
                               devices: str = "bytes", rate_hz: float = 50.0):
    """Fly an identification mission (a MissionConfig with `identification`) in AUTO, logged at rate_hz.
    Returns (run directory, the sim report)."""
    if mission.identification is None:
        raise ValueError(f"mission {mission.name!r} has no identification section")
    log = SimRunLog(vessel, mission, log_dir, rate_hz)
    try:
        res = run_sim(vessel, mission, SimOptions(seed=seed, env=env or EnvironmentConfig(), gps_noise=gps_noise,
                                                  on_result=log.on_result, plant_spec=plant_spec, devices=devices))
    finally:
        log.close()
    return log.log.run_dir, res.report
