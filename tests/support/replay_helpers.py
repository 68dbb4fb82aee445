"""A short simulated run logged like `autopilot sim --log`: what the replay tests replay."""
from __future__ import annotations

from autopilot.runlog.sim_log import SimRunLog
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.runner import SimOptions, run_sim


def logged_sim(base, duration_s: float = 20.0, seed: int = 3, rate_hz: float = 10.0, devices: str = "bytes",
               vessel_file: str = "foka", faults: tuple = (), **sim_options):
    """(run directory, SimResult) of FOKA (or `vessel_file`) flying the demo survey for duration_s, logged into
    `base`. The result's `batches` lists what each cycle's batch held: (IMU samples, mag samples, GNSS fixes).
    `sim_options`: further SimOptions (the plant, the weather)."""
    vessel = load_vessel(str(vessel_file))
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    log = SimRunLog(vessel, mission, base, rate_hz)
    batches = []

    def on_result(t_s, autopilot, batch, result, truth):
        batches.append((list(batch.imu), list(batch.mag), list(batch.gps)))
        log.on_result(t_s, autopilot, batch, result, truth)
    try:
        result = run_sim(vessel, mission, SimOptions(seed=seed, duration_s=duration_s, devices=devices,
                                                     faults=faults, on_result=on_result, **sim_options))
    finally:
        log.close()
    result.batches = batches
    return log.log.run_dir, result
