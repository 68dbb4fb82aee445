"""`autopilot sim MISSION ...`: fly a mission in the built-in simulator, print a summary, write plot/report/log."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from autopilot.cli.sim_summary import format_summary, jsonable
from autopilot.files.mission_files import load_mission_file
from autopilot.runlog.sim_log import SimRunLog
from autopilot.vocab.config import load_vessel, vessel_presets
from autopilot.vocab.schema import ConfigError
from drivers.esc.contract import EscError


def lockstep_steps(text: str) -> int:
    """argparse type: a whole number of simulator steps, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of steps, got {text!r}") from None
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"between 1 and 1000 steps, got {n}")
    return n


def _pair(text: str, what: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected two numbers separated by a comma, got {text!r}")
    return a, b


def _wind(text):
    speed, frm = _pair(text, "--wind SPEED_MPS,FROM_DEG")
    if speed < 0:
        raise argparse.ArgumentTypeError("--wind: speed must be >= 0")
    return speed, frm


def _current(text):
    speed, toward = _pair(text, "--current SPEED_MPS,TOWARD_DEG")
    if speed < 0:
        raise argparse.ArgumentTypeError("--current: speed must be >= 0")
    return speed, toward


def _waves(text):
    try:
        hs, tp, frm = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--waves HS_M,PERIOD_S,FROM_DEG: expected three numbers, got {text!r}")
    if hs < 0 or tp <= 0:
        raise argparse.ArgumentTypeError("--waves: height must be >= 0 and period > 0")
    return hs, tp, frm


def _positive(text):
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def _fault(text):
    from hil.sim.faults import parse_fault
    try:
        return parse_fault(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _mismatch(text):
    from hil.sim.plant_spec import parse_mismatch
    try:
        return parse_mismatch(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _force(text):
    newtons, toward = _pair(text, "--force NEWTONS,TOWARD_DEG")
    if newtons < 0 or not math.isfinite(newtons) or not math.isfinite(toward):
        raise argparse.ArgumentTypeError("--force: newtons must be finite and >= 0")
    return newtons, toward


def add_weather_arguments(p) -> None:
    """--wind, --current, --waves (read back by environment_from_args)."""
    p.add_argument("--wind", type=_wind, default=(0.0, 0.0), metavar="SPEED_MPS,FROM_DEG",
                   help="steady wind: speed [m/s] and the compass direction it blows from [deg] (default calm)")
    p.add_argument("--current", type=_current, default=(0.0, 0.0), metavar="SPEED_MPS,TOWARD_DEG",
                   help="water current: speed [m/s] and the compass direction it flows toward [deg] (default none)")
    p.add_argument("--waves", type=_waves, default=(0.0, 4.0, 0.0), metavar="HS_M,PERIOD_S,FROM_DEG",
                   help="irregular waves: significant height [m], peak period [s] and the compass direction they "
                        "come from [deg] (default none)")


def environment_from_args(args):
    """The hil.sim.environment.EnvironmentConfig of --wind, --current and --waves (calm where absent)."""
    from hil.sim.environment import EnvironmentConfig
    wind, current = getattr(args, "wind", (0.0, 0.0)), getattr(args, "current", (0.0, 0.0))
    waves = getattr(args, "waves", (0.0, 4.0, 0.0))
    return EnvironmentConfig(wind_speed_mps=wind[0], wind_from_deg=wind[1],
                             current_speed_mps=current[0], current_toward_deg=current[1],
                             wave_hs_m=waves[0], wave_tp_s=waves[1], wave_from_deg=waves[2])


def add_plant_arguments(p) -> None:
    """--plant-vessel, --mismatch, --plant-extra, --force: the true boat (read back by _plant_spec)."""
    p.add_argument("--plant-vessel", metavar="NAME|FILE",
                   help="the true boat the simulator flies (default: the vessel file the autopilot flies with)")
    p.add_argument("--mismatch", type=_mismatch, default={}, metavar="KEY=FACTOR,...",
                   help="scale the plant's coefficients, e.g. x_u=0.4,x_uu=0.4,iz=2.3,n_r=0.5,thrust=0.8,"
                        "added_mass=1.5; random=0.5 draws every factor log-uniformly within x/÷1.5 from the seed")
    p.add_argument("--plant-extra", default="", metavar="KEY=VALUE,...",
                   help="what the vessel file's model leaves out: y_r, n_v (sway-yaw damping), y_rdot (added "
                        "mass), x_g_m (CG forward of the reference point), trim_roll_deg, trim_pitch_deg, "
                        "wave_motion=1 (roll/pitch from the waves), thrust_scale=1:0.9 (per thruster), "
                        "or realistic (a set scaled to the hull)")
    p.add_argument("--force", type=_force, default=(0.0, 0.0), metavar="NEWTONS,TOWARD_DEG",
                   help="a constant external force on the plant (towed line, wind on a superstructure)")


def register(subparsers) -> None:
    p = subparsers.add_parser("sim", help="fly a mission in the built-in simulator",
                              description="Fly MISSION in the built-in vessel simulator with the real autopilot "
                                          "in the loop; print a summary and optionally write a plot, a JSON "
                                          "report and a CSV log.")
    p.add_argument("mission", help="mission YAML (e.g. config/missions/demo.yaml) or a QGroundControl / Mission "
                                   "Planner waypoint file (QGC WPL 110)")
    p.add_argument("--vessel", default="foka",
                   help=f"preset name ({', '.join(vessel_presets())}; default foka) or vessel YAML path")
    p.add_argument("--seed", type=int, default=1,
                   help="random seed of the sensor noise, the GNSS bias and the waves (default 1)")
    add_weather_arguments(p)
    p.add_argument("--gps-noise", choices=("white", "realistic"), default="realistic",
                   help="white: 2 m CEP white noise; realistic (default): plus a Gauss-Markov bias")
    p.add_argument("--gps-rate-hz", type=_positive, default=None, metavar="HZ",
                   help="GNSS fixes per second (default: the vessel file's sensors.gnss.rate_hz)")
    p.add_argument("--duration", type=_positive, default=None, metavar="S",
                   help="simulated seconds (default: until the mission completes)")
    p.add_argument("--realtime", action="store_true", help="run at wall-clock speed")
    p.add_argument("--battery-ah", type=_positive, default=None, metavar="AH",
                   help="drain a simulated pack of this capacity, full at the start (default: the vessel file's "
                        "battery.capacity_ah; neither: the pack stays at battery.voltage_v)")
    p.add_argument("--devices", choices=("bytes", "typed"), default="bytes",
                   help="bytes (default): emulated L76K/LSM9DS1/pigpio under the real drivers; "
                        "typed: sensor models straight into the estimator (faster, skips the drivers)")
    p.add_argument("--esc-backend", choices=("pigpio", "kernel_pwm", "pca9685"), default="pigpio",
                   help="with --devices bytes: the ESC output stage the pulses go through: pigpio (default, a "
                        "pigpiod stand-in), kernel_pwm (a fake /sys/class/pwm, Pi 4 channels on GPIO12/13) or "
                        "pca9685 (a PCA9685 board on an emulated I2C bus, thrusters on outputs 0, 1, ...)")
    p.add_argument("--transport", choices=("inproc", "ros"), default="inproc",
                   help="inproc (default): one process; ros: the autopilot nodes in their own process against "
                        "the Gazebo stand-in over DDS (needs rclpy); the report adds the link's figures")
    p.add_argument("--link", metavar="DELAY_MS[:JITTER_MS[:LOSS]]",
                   help="--transport ros: the autopilot in a ROS domain of its own behind an emulated Wi-Fi link "
                        "(hil/ros/link_relay.py), e.g. 20:10:0.01")
    p.add_argument("--link-outage", action="append", default=[], metavar="START_S:DURATION_S",
                   help="--link: nothing crosses for DURATION_S, START_S after the simulation starts (repeatable)")
    p.add_argument("--on-outage", choices=("pause", "run"), default="pause",
                   help="--transport ros: a link outage pauses the plant and /clock (default) or lets them run on")
    p.add_argument("--lockstep-window", type=lockstep_steps, default=1, metavar="STEPS",
                   help="--transport ros without --realtime: simulator steps in flight before the plant waits for "
                        "the autopilot's answer (default 1: strict lockstep; a link of round trip R needs about "
                        "R / 20 ms to run near real time)")
    p.add_argument("--mode", choices=("AUTO", "LOITER", "HOLD", "MANUAL", "GUIDED"), default=None,
                   help="mode asked for at the start; the run arms once its pre-arm checks pass (default AUTO; "
                        "HOLD with --mavlink; MANUAL with --transport ros: a gamepad's joy_node drives; GUIDED "
                        "keeps station until a companion computer's targets come, e.g. over --mavlink)")
    p.add_argument("--gnss-velocity", action="store_true",
                   help="--transport ros: the stand-in's GNSS also gives its velocity (speed and course, as the "
                        "boat's receiver does) on a topic beside the fix; Gazebo's bridged NavSatFix has none. "
                        "Identification from a ROS run needs it")
    p.add_argument("--gamepad", metavar="CSV", default=None,
                   help="--transport ros: play this gamepad sequence (t_s,throttle,steering) as the joy package's "
                        "joy_node would publish it, enable button held; implies --mode MANUAL and ends the run "
                        "once it is played (tests/data/gamepad/*.csv)")
    p.add_argument("--no-mag-calibration", action="store_true",
                   help="the simulated magnetometer comes uncalibrated: its distortion (the vessel file's, else "
                        "30 uT hard iron and 10 %% soft iron) reaches the autopilot, which has no calibration "
                        "(first day on the water): arming in a navigating mode is refused")
    p.add_argument("--calibrate-on-water", action="store_true",
                   help="start in CALIBRATE_ON_WATER: two slow circles on the gyro and GNSS inside "
                        "sensors.mag.on_water.box_m, fit the magnetometer, and fly the mission only if the fit is "
                        "accepted (else HOLD)")
    p.add_argument("--mag-calibration-out", metavar="FILE",
                   help="write a calibration fitted on the water (or updated underway) here, any old file kept as "
                        "FILE.prev (default: nowhere)")
    p.add_argument("--mavlink", action="append", default=[], metavar="LINK",
                   help="serve MAVLink ground stations (repeatable): udpout:HOST:PORT (QGC on this laptop: "
                        "udpout:127.0.0.1:14550), udpin:HOST:PORT, tcpin:HOST:PORT. The ground station then arms, "
                        "picks modes and uploads missions; the run lasts --duration (default 1 h) or until "
                        "Ctrl-C. Use with --realtime")
    p.add_argument("--web", metavar="HOST:PORT", default=None,
                   help="serve the boat's web page (status, map, commands, compass calibration) on HOST:PORT, e.g. "
                        "127.0.0.1:8080; the password is printed at start unless --web-password-file. Like "
                        "--mavlink: a commander arms and picks modes. Use with --realtime")
    p.add_argument("--web-password-file", metavar="FILE", default=None,
                   help="the web password's hash file (`autopilot keys web` writes one) instead of a password "
                        "made for this run")
    p.add_argument("--mavlink-sysid", type=int, default=1, metavar="N", help="MAVLink system id (default 1)")
    p.add_argument("--mavlink-key", metavar="FILE",
                   help="MAVLink 2 signing key (32 bytes or 64 hex digits, mode 600): unsigned commands refused")
    p.add_argument("--params", metavar="FILE",
                   help="parameter overlay (NAME: value) read at start and written by a ground station's "
                        "PARAM_SET (default with --mavlink: kept in memory only)")
    p.add_argument(
        "--fault",
        type=_fault,
        action="append",
        default=[],
        metavar="KIND@START_S[:DURATION_S]",
        help="inject a fault into the emulated devices (repeatable): gps-loss, gps-glitch (50 m, or "
        "=SIZE_M: gps-glitch@60:1=20), gps-forge (=F: share of epochs forged), imu-loss, imu-zero, "
        "imu-frozen, mag-loss, mag-shift (=UT: hard-iron step, mag-shift@300=10), esc-disconnect, link-loss, "
        "low-battery, thruster-weak (thruster NAME gives F x its thrust: thruster-weak@60:left=0.5), "
        "thruster-dead (thruster-dead@60:120:left, no thrust from 60 s for 120 s); e.g. gps-loss@60:60",
    )
    add_plant_arguments(p)
    p.add_argument("--plant-model", metavar="NAME",
                   help="fly a simulated boat of another structure than the vessel files' model: mmg-catamaran "
                        "(a 2 m, 55 kg twin-hull USV, MMG hull forces, propellers on shaft speed); the autopilot "
                        "keeps --vessel (two fixed thrusters); not with --plant-vessel, --mismatch, "
                        "--plant-extra, --force or --follow-model")
    p.add_argument("--follow-model", action="store_true",
                   help="model following (paper 001): the --plant-vessel hull is driven to behave like --vessel "
                        "(the autopilot's thrust drives a --vessel model, an inverse-dynamics follower drives the "
                        "plant's thrusters to match its surge and yaw rate). Flies the run twice, with and "
                        "without following, and reports RMSE, MAE and R^2 of u, v, r, x, y, psi against the model")
    p.add_argument("--follow-thrust-scale", type=_positive, default=1.0, metavar="F",
                   help="with --follow-model: let the follower push the plant's thrusters to F x their vessel-file "
                        "limits (a simulator's thrusters are force inputs; default 1)")
    p.add_argument("--follow-sway", action="store_true",
                   help="with --follow-model: also drive the plant's sway, by a body force its thrusters cannot give "
                        "(a lateral thruster or a force plugin would have to); the report gives its RMS and peak")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the run (track, cross-track error, heading and speed, thrust) to this PNG")
    p.add_argument("--report", metavar="FILE.json", help="write the summary's figures to this JSON file")
    p.add_argument("--log", metavar="DIR",
                   help="write the run log into DIR/<time>_<mission>/: state.csv (opens in a spreadsheet), "
                        "events.jsonl, run.mcap + metadata.yaml (a rosbag2 bag of the live topics); `autopilot "
                        "plot` draws it. With --transport ros the autopilot process writes it, as on a boat")
    p.add_argument("--log-rate-hz", type=_positive, default=10.0, metavar="HZ",
                   help="rows per second in the run log (default 10, up to 50)")
    p.set_defaults(func=run)


def run(args) -> int:
    from autopilot.calibration.store import load_boat_calibration
    from hil.sim.runner import SimArmingError, SimOptions, run_sim

    try:
        vessel = load_vessel(args.vessel)
        # the calibration file the vessel names is refused here as `check` refuses it (unreadable, a directory,
        # malformed), even where the simulated magnetometer does not need it; one not written yet is no error
        load_boat_calibration(vessel, "sim")
        mission = load_mission_file(args.mission, on_note=lambda note: print(f"note: {note}", file=sys.stderr))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        plant_spec = _plant_spec(vessel, args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.plant_model:
        problem = _plant_model_problem(vessel, args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    env = environment_from_args(args)
    pack = None
    if args.battery_ah is not None:
        from hil.sim.battery import PackSpec
        b = vessel.battery
        pack = PackSpec(cells=b.cells, chemistry=b.chemistry, capacity_ah=args.battery_ah,
                        internal_resistance_ohm=b.internal_resistance_ohm, hotel_current_a=b.hotel_current_a,
                        nominal_v=b.voltage_v)
    opts = SimOptions(seed=args.seed, env=env, gps_noise=args.gps_noise, gps_rate_hz=args.gps_rate_hz, battery=pack,
                      plant_model=args.plant_model or None,
                      duration_s=args.duration, realtime=args.realtime, devices=args.devices,
                      faults=tuple(args.fault), initial_mode=_initial_mode(args), plant_spec=plant_spec,
                      esc_backend=args.esc_backend, mag_calibration="none" if args.no_mag_calibration else "exact",
                      mag_calibration_path=args.mag_calibration_out)
    if args.calibrate_on_water and args.mode:
        print("error: --calibrate-on-water starts in CALIBRATE_ON_WATER (then AUTO): leave out --mode",
              file=sys.stderr)
        return 2
    if args.calibrate_on_water and (args.mavlink or args.web or args.transport == "ros"):
        print("error: --calibrate-on-water needs the in-process simulator without --mavlink (a ground station "
              "or ROS operator asks for the mode CALIBRATE_ON_WATER itself)", file=sys.stderr)
        return 2
    if args.follow_model or args.follow_thrust_scale != 1.0 or args.follow_sway:
        problem = _follow_model_problem(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        from hil.sim.model_following import FollowingSetup
        if any(t.azimuth is not None for t in vessel.thrusters):
            print(f"error: --follow-model drives fixed thrusters; {vessel.name!r} has azimuth pods", file=sys.stderr)
            return 2
        opts.model_following = FollowingSetup(follower_vessel=load_vessel(args.plant_vessel),
                                              thrust_limit_scale=args.follow_thrust_scale,
                                              sway_force=args.follow_sway)
    if args.esc_backend != "pigpio" and args.devices != "bytes":
        print("error: --esc-backend needs the emulated devices (--devices bytes)", file=sys.stderr)
        return 2
    if args.mavlink or args.web:
        if args.transport == "ros":
            print("error: --mavlink and --web serve the in-process simulator (--transport inproc); a ROS boat serves "
                  "MAVLink from its boat config's mavlink: section", file=sys.stderr)
            return 2
        from autopilot.cli.sim_mavlink import fly_with_mavlink
        return fly_with_mavlink(vessel, mission, opts, args, env)
    if args.transport == "ros":
        args.plant_spec = plant_spec
        if args.fault:
            print("error: --fault needs the in-process simulator (--transport inproc)", file=sys.stderr)
            return 2
        try:
            args.link = _link_spec(args.link, args.link_outage)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return _run_over_ros(vessel, mission, env, args)
    if args.link or args.link_outage or args.lockstep_window != 1:
        print("error: --link and --lockstep-window need --transport ros", file=sys.stderr)
        return 2
    if args.gnss_velocity:
        print("error: --gnss-velocity is for --transport ros (the in-process GNSS always gives its velocity)",
              file=sys.stderr)
        return 2
    if args.gamepad or args.mode == "MANUAL":
        print("error: --gamepad and --mode MANUAL need --transport ros (sticks come as sensor_msgs/Joy from a joy "
              "node)", file=sys.stderr)
        return 2
    sim_log = SimRunLog(vessel, mission, args.log, args.log_rate_hz) if args.log else None
    if sim_log is not None:
        opts.on_result = sim_log.on_result
    try:
        result = run_sim(vessel, mission, opts)
        if opts.model_following is not None:
            _add_baseline(result, vessel, mission, opts)
    except (SimArmingError, ValueError, EscError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if sim_log is not None:
            sim_log.close()
    print(format_summary(result.report, env))
    refused = result.report.get("armed_at_s") is None
    if refused:
        print("error: the boat never armed; pre-arm checks failing: "
              + ("; ".join(result.report.get("never_armed_because") or []) or "none reported"), file=sys.stderr)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(jsonable(result.report), indent=2) + "\n")
        print(f"report: {args.report}")
    if args.plot:
        from hil.sim.plot import plot_run
        plot_run(result, args.plot)
        print(f"plot:   {args.plot}")
    if sim_log is not None:
        print(f"log:    {sim_log.log.run_dir / 'state.csv'}")
    return 1 if refused else 0


def _plant_model_problem(vessel, args):
    """Why --plant-model cannot run with these options or this vessel file (None: it can)."""
    from hil.sim.plant_models import check_plant_model
    others = [flag for flag, given in (("--plant-vessel", args.plant_vessel), ("--mismatch", args.mismatch),
                                       ("--plant-extra", args.plant_extra), ("--force", args.force[0]),
                                       ("--follow-model", args.follow_model)) if given]
    if others:
        return (f"--plant-model {args.plant_model} is a boat of its own: {', '.join(others)} describe(s) the "
                "built-in plant and cannot apply to it")
    if args.transport == "ros":
        return "--plant-model runs in the in-process simulator (--transport inproc)"
    try:
        check_plant_model(args.plant_model, vessel)
    except (ConfigError, ValueError) as e:
        return str(e)
    return None


def _follow_model_problem(args):
    """Why --follow-model cannot run with these options (None: it can)."""
    if not args.follow_model:
        return ("--follow-sway needs --follow-model" if args.follow_sway
                else "--follow-thrust-scale needs --follow-model")
    if not args.plant_vessel:
        return ("--follow-model needs --plant-vessel NAME|FILE: the simulated hull made to behave like --vessel "
                "(e.g. --vessel foka --plant-vessel wamv)")
    if args.transport != "inproc" or args.mavlink:
        return "--follow-model runs in the in-process simulator only (no --transport ros, no --mavlink)"
    if args.follow_thrust_scale > 100.0:
        return f"--follow-thrust-scale: at most 100, got {args.follow_thrust_scale:g}"
    return None


def _add_baseline(result, vessel, mission, opts) -> None:
    """Fly the same run again without following, for as long as the first, and put both sets of figures and
    the reduction into the report's model_following section."""
    import dataclasses

    from hil.sim.model_following import reduction_pct
    from hil.sim.runner import run_sim
    base_opts = dataclasses.replace(opts, duration_s=result.report["sim_time_s"], on_result=None,
                                    model_following=dataclasses.replace(opts.model_following, follow=False))
    without = run_sim(vessel, mission, base_opts).report["model_following"]
    with_ = result.report["model_following"]
    result.report["model_following"] = {"with": with_, "without": without,
                                        "reduction_pct": reduction_pct(with_, without)}


def _initial_mode(args) -> str:
    if getattr(args, "calibrate_on_water", False):
        return "CALIBRATE_ON_WATER"
    return args.mode or "AUTO"


def _plant_spec(vessel, args):
    """The true boat from --plant-vessel, --mismatch, --plant-extra and --force (None: the vessel file as is)."""
    import dataclasses

    from hil.sim.plant_spec import PlantExtras, PlantSpec, parse_plant_extras, realistic_extras
    plant_vessel = getattr(args, "plant_vessel", None)
    mismatch = getattr(args, "mismatch", None) or {}
    extra_text = getattr(args, "plant_extra", "") or ""
    force = getattr(args, "force", (0.0, 0.0)) or (0.0, 0.0)
    if not (plant_vessel or mismatch or extra_text or force[0]):
        return None
    base = load_vessel(plant_vessel) if plant_vessel else vessel
    if extra_text.strip() == "realistic":
        extras = realistic_extras(base)
    else:
        extras = parse_plant_extras(extra_text, len(base.thrusters)) if extra_text else PlantExtras()
    if force[0]:
        extras = dataclasses.replace(extras, force_n=force[0], force_toward_deg=force[1])
    return PlantSpec.resolve(vessel, args.seed, plant_vessel=base if plant_vessel else None,
                             mismatch=mismatch, extras=extras)


def _link_spec(text, outages):
    """--link DELAY_MS[:JITTER_MS[:LOSS]] and --link-outage START_S:DURATION_S -> LinkSpec (None: no link)."""
    if not text and not outages:
        return None
    from hil.ros.link_relay import LinkSpec
    parts = (text or "0").split(":")
    try:
        nums = [float(x) for x in parts]
        outs = tuple(tuple(float(x) for x in o.split(":")) for o in outages)
    except ValueError:
        raise ValueError(f"--link takes DELAY_MS[:JITTER_MS[:LOSS]], --link-outage START_S:DURATION_S; got "
                         f"{text!r} {outages!r}") from None
    if len(nums) > 3:
        raise ValueError(f"--link takes DELAY_MS[:JITTER_MS[:LOSS]]; got {text!r}")
    delay, jitter, loss = (nums + [0.0, 0.0])[:3]
    return LinkSpec(delay_ms=delay, jitter_ms=jitter, loss=loss, outages=outs)


def _run_over_ros(vessel, mission, env, args) -> int:
    if args.plot:
        print("error: --plot is not available with --transport ros yet; the report (--report FILE.json) and the "
              "run log (--log DIR, then `autopilot plot`) are", file=sys.stderr)
        return 2
    if getattr(args, "gamepad", None):
        from hil.sim.gamepad_sequence import read_sequence
        if args.mode not in (None, "MANUAL"):
            print(f"error: --gamepad drives MANUAL; leave out --mode {args.mode}", file=sys.stderr)
            return 2
        try:
            seq = read_sequence(args.gamepad)
        except ValueError as e:
            print(f"error: --gamepad: {e}", file=sys.stderr)
            return 2
        args.mode = "MANUAL"
        if args.duration is None:          # a cap: the run ends when the sequence has been played
            args.duration = float(seq[-1, 0]) + 60.0
    elif args.mode == "MANUAL" and args.duration is None:
        print("error: --mode MANUAL over ROS needs --duration S (nothing ends a MANUAL run by itself)",
              file=sys.stderr)
        return 2
    try:
        from hil.ros.sim_transport import run_ros_sim
    except ImportError as e:
        print(f"error: --transport ros needs rclpy ({e}). On a laptop: pip install '.[ros]'; on a boat: "
              f"source /opt/ros/$ROS_DISTRO/setup.bash", file=sys.stderr)
        return 2
    from hil.ros.hil_bench import BenchError
    try:
        report = run_ros_sim(vessel, mission, env, args)
    except (BenchError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_summary(report, env))
    if "latency_p99_ms" in report:
        print(f"  sensor-in to thrust-out latency over DDS: p50 {report.get('latency_p50_ms', float('nan')):.2f} ms, "
              f"p99 {report['latency_p99_ms']:.2f} ms, max {report.get('latency_max_ms', float('nan')):.2f} ms; "
              f"loss {json.dumps(report.get('loss', {}))}")
    if "gamepad" in report:
        print(f"  gamepad: {report['gamepad']['said']}")
    for w in report.get("link_warnings", []):
        print(f"  warning: {w}")
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(jsonable(report), indent=2) + "\n")
        print(f"report: {args.report}")
    if args.log:
        if not report.get("log_dir"):
            print(f"error: the autopilot process left no run directory in {args.log}", file=sys.stderr)
            return 1
        print(f"log:    {report['log_dir']} (a rosbag2 bag of the autopilot process's topics)")
    return 0


