"""`autopilot bench esc`: check the ESC outputs on their backend, and run a guarded motor test.

    autopilot bench esc --gpio 13,12                      show pigpiod and the pulses on those GPIOs
    autopilot bench esc --config /etc/autopilot/boat.yaml    the boat's esc: backend (kernel_pwm, ...) and outputs
    autopilot bench esc --gpio 13,12 --test --propellers-removed [--offset-us 150] [--ramp-s 3] [--hold-s 2]
    autopilot bench esc --emulated [--config BOAT.yaml] [--test --propellers-removed]    a pigpiod stand-in

The motor test arms the ESCs (neutral for the arming time), then for each channel in turn ramps gently from
neutral to neutral + offset, holds, back to neutral, to neutral - offset, holds, and back. It refuses to run
without --propellers-removed. Whatever happens (end of test, Ctrl-C, SIGTERM, an error) the outputs end at
neutral. Pulse ranges, neutral, trim and reverse come from the vessel's thruster with the same GPIO, or the
1100/1500/1900 us defaults. --gpio lists outputs as the backend numbers them: BCM GPIOs for pigpio and
kernel_pwm, board channels 0-15 for pca9685; without it the outputs are the vessel's (each thruster's gpio, or
the boat config's esc.pca9685_channels). The vessel is the one --config names, else --vessel, else foka.
--emulated drives a pigpiod stand-in on this machine (hil/devices/fake_pigpiod.py) in place of the boat's
backend, to try the tool, and the motor test, without hardware. Exit status 0; 1 when the backend cannot be
used or a file does not validate (the message says what to do); 2 when the test is refused.
"""
from __future__ import annotations

import sys
import time

from autopilot.bringup import add_vessel_arguments, bench_vessel, get_bench_subparsers

CONFIRM_FLAG = "--propellers-removed"


def register(subparsers) -> None:
    p = get_bench_subparsers(subparsers).add_parser(
        "esc", help="check ESC outputs; with --test run a guarded motor test",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--gpio", default=None, metavar="L,R",
                   help="comma-separated outputs, e.g. 13,12 (left,right): BCM GPIOs, or pca9685 board channels "
                        "(default: the vessel's thruster GPIOs, or the boat config's esc.pca9685_channels)")
    add_vessel_arguments(p, "the outputs and pulse ranges (thrusters)")
    p.add_argument("--backend", choices=("pigpio", "kernel_pwm", "pca9685"), default=None,
                   help="ESC backend (default: the boat config's, else pigpio)")
    p.add_argument("--host", default=None, help="pigpiod host (default: the boat config's, else localhost)")
    p.add_argument("--port", type=int, default=None, help="pigpiod port (default: the boat config's, else 8888)")
    p.add_argument("--emulated", action="store_true",
                   help="drive a pigpiod stand-in on this machine instead of the boat's ESC backend: no hardware "
                        "needed")
    p.add_argument("--test", action="store_true", help="run the motor test (needs " + CONFIRM_FLAG + ")")
    p.add_argument(CONFIRM_FLAG, dest="propellers_removed", action="store_true",
                   help="confirm the propellers are off (or the thrusters cannot hurt anyone)")
    p.add_argument("--offset-us", type=int, default=150, help="largest pulse offset from neutral (default 150)")
    p.add_argument("--ramp-s", type=float, default=3.0, help="time to ramp to the offset (default 3 s)")
    p.add_argument("--hold-s", type=float, default=2.0, help="time held at the offset (default 2 s)")
    p.add_argument("--arming-s", type=float, default=None, help="neutral before the test (default: vessel's)")
    p.add_argument("--calibrate", action="store_true",
                   help="pca9685: put 1500 us on the first output and say how to measure the board's clock; with "
                        "--measured-hz or --measured-us, print the esc.pulse_scale for the boat config")
    p.add_argument("--measured-hz", type=float, default=None, help="the output's frame rate as measured [Hz]")
    p.add_argument("--measured-us", type=float, default=None, help="the 1500 us pulse's width as measured [us]")
    p.set_defaults(func=run)


def _outputs(vessel, cfg, kind: str):
    """The outputs the boat drives its thrusters on: the boat config's pca9685_channels, or each thruster's
    gpio. ValueError when the files do not say (then --gpio must)."""
    if kind == "pca9685":
        channels = tuple(cfg.esc.pca9685_channels) if cfg is not None else ()
        if not channels:
            raise ValueError("pca9685: give the board channels with --gpio, e.g. --gpio 0,1 (or --config with "
                             "esc.pca9685_channels)")
        return list(channels)
    unwired = [t.name for t in vessel.thrusters if t.gpio < 0]
    if unwired:
        raise ValueError(f"vessel {vessel.name}: thruster {', '.join(unwired)} has no gpio in its file: give the "
                         f"outputs with --gpio")
    return [t.gpio for t in vessel.thrusters]


def _channels(gpios, vessel):
    from drivers.esc.output import EscChannel
    by_gpio = {t.gpio: t for t in vessel.thrusters if t.gpio >= 0}
    return [EscChannel.from_thruster(by_gpio[g]) if g in by_gpio else EscChannel(name=f"GPIO{g}", gpio=g)
            for g in gpios]


def run(args) -> int:
    import dataclasses

    from autopilot.vocab.schema import ConfigError
    from drivers.esc.contract import EscBackend, EscError
    from drivers.esc.output import EscChannel

    emulated = getattr(args, "emulated", False)
    try:
        cfg, vessel = bench_vessel(args)
        backend = cfg.esc.backend_spec() if cfg is not None else EscBackend()
        if args.host is not None:
            backend = dataclasses.replace(backend, host=args.host)
        if args.port is not None:
            backend = dataclasses.replace(backend, port=args.port)
        if args.backend:
            backend = dataclasses.replace(backend, kind=args.backend)
        if emulated and backend.kind != "pigpio":
            if args.backend:
                raise ValueError(f"--emulated stands in for pigpiod: it cannot drive --backend {args.backend}")
            print(f"bench esc: --emulated: a pigpiod stand-in in place of the boat config's {backend.kind} backend",
                  file=sys.stderr)
            backend = dataclasses.replace(backend, kind="pigpio")
        if args.gpio:
            try:
                gpios = [int(g) for g in args.gpio.split(",") if g.strip()]
            except ValueError:
                raise ValueError(f"--gpio {args.gpio}: expected whole numbers separated by commas, e.g. "
                                 f"13,12") from None
        else:
            gpios = _outputs(vessel, cfg, backend.kind)
        channels = _channels(gpios, vessel) if backend.kind != "pca9685" else [
            EscChannel.from_thruster(t, o) for t, o in zip(vessel.thrusters, gpios)]
    except (ValueError, ConfigError, EscError) as e:
        print(f"bench esc: {e}", file=sys.stderr)
        return 1
    if not emulated:
        return _bench(args, backend, gpios, channels)
    from autopilot.bringup import stand_ins
    daemon = stand_ins.make("pigpiod")
    print(f"bench esc: emulated pigpiod on {daemon.host}:{daemon.port}", file=sys.stderr)
    try:
        return _bench(args, dataclasses.replace(backend, host=daemon.host, port=daemon.port), gpios, channels)
    finally:
        daemon.close()


def _bench(args, backend, gpios, channels) -> int:
    """The status report, the calibration or the motor test on a resolved backend and its channels."""
    import dataclasses

    from autopilot.vocab.types import PulseCommand
    from drivers.esc.contract import EscError
    from drivers.esc.output import EscOutput
    from drivers.esc.ports import open_port

    if args.calibrate:
        return _calibrate(args, backend, gpios)
    if args.test and not args.propellers_removed:
        print(f"bench esc: refusing to spin the thrusters: remove the propellers (or make sure nothing can be "
              f"hit) and repeat with {CONFIRM_FLAG}", file=sys.stderr)
        return 2
    try:
        pi = open_port(backend, gpios)
    except (EscError, OSError) as e:
        print(f"bench esc: {e}", file=sys.stderr)
        return 1
    label = "ch" if backend.kind == "pca9685" else "GPIO"
    if backend.kind == "pigpio":
        print(f"bench esc: pigpiod {pi.get_pigpio_version()} on {backend.host}:{backend.port}, hardware revision "
              f"0x{pi.get_hardware_revision():x}")
    elif backend.kind == "kernel_pwm":
        print(f"bench esc: kernel PWM {backend.sysfs_root}/pwmchip{pi.chip}, GPIO -> channel {pi.channel_of}")
    else:
        print(f"bench esc: PCA9685 at 0x{backend.pca9685_address:02x} on I2C bus {backend.i2c_bus}, "
              f"pulse_scale {backend.pulse_scale:g}")
    for c in channels:
        try:
            now = pi.get_servo_pulsewidth(c.gpio)
        except Exception:            # noqa: BLE001 - pigpio.error: no servo pulses on this GPIO yet
            now = 0
        print(f"bench esc: {c.name} {label}{c.gpio}: pulse now {now or 'off'}"
              f"{'' if not now else ' us'}; range {c.pulse_min_us}-{c.pulse_neutral_us}-{c.pulse_max_us} us, "
              f"trim {c.trim_us:+d}, {'reversed' if c.reverse else 'normal'}")
    if not args.test:
        pi.stop()
        return 0
    if args.arming_s is not None:
        channels = [dataclasses.replace(c, arming_time_s=args.arming_s) for c in channels]
    esc = EscOutput(channels, pi, command_timeout_s=0.5, close_pi=True,
                    emergency_pi_factory=lambda: open_port(backend, gpios))
    esc.install_signal_handlers()
    period = 0.02
    t0 = time.monotonic()

    def hold(pulses, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            esc.write(time.monotonic() - t0, PulseCommand(tuple(pulses)))
            time.sleep(period)

    def ramp(i, start, stop, seconds):
        steps = max(1, int(seconds / period))
        for k in range(steps + 1):
            pulses = [c.pulse_neutral_us for c in channels]
            pulses[i] = round(start + (stop - start) * k / steps)
            esc.write(time.monotonic() - t0, PulseCommand(tuple(pulses)))
            time.sleep(period)

    try:
        neutral = [c.pulse_neutral_us for c in channels]
        arming = max(c.arming_time_s for c in channels)
        print(f"bench esc: arming: neutral for {arming:g} s", flush=True)
        hold(neutral, arming + 0.1)
        for i, c in enumerate(channels):
            for sign, what in ((+1, "forward"), (-1, "reverse")):
                top = c.pulse_neutral_us + sign * args.offset_us
                print(f"bench esc: {c.name} {label}{c.gpio} {what}: ramp to {top} us", flush=True)
                ramp(i, c.pulse_neutral_us, top, args.ramp_s)
                hold([top if j == i else n for j, n in enumerate(neutral)], args.hold_s)
                ramp(i, top, c.pulse_neutral_us, args.ramp_s)
        print("bench esc: test done", flush=True)
    except KeyboardInterrupt:
        print("bench esc: interrupted", file=sys.stderr)
    finally:
        esc.close()
        print("bench esc: outputs at neutral", flush=True)
    return 0


def _calibrate(args, backend, outputs) -> int:
    """PCA9685 oscillator calibration (see --calibrate); the output is left at 1500 us (neutral for an ESC)."""
    from drivers.esc.contract import EscError
    from drivers.esc.pca9685 import pulse_scale_from_frequency, pulse_scale_from_width
    from drivers.esc.ports import open_port
    if backend.kind != "pca9685":
        print(f"bench esc: --calibrate is for a PCA9685 board (its oscillator runs a few % off); {backend.kind} "
              f"pulses are timed by the Pi's own clock", file=sys.stderr)
        return 2
    try:
        port = open_port(backend, outputs)
        port.set_servo_pulsewidth(outputs[0], 1500)
    except (EscError, OSError) as e:
        print(f"bench esc: {e}", file=sys.stderr)
        return 1
    frame_hz = 1e6 / (4096 * port._tick_us())
    try:
        if args.measured_hz is not None:
            scale = pulse_scale_from_frequency(args.measured_hz, port)
        elif args.measured_us is not None:
            scale = pulse_scale_from_width(args.measured_us, port, outputs[0], backend.pulse_scale)
        else:
            print(f"bench esc: output {outputs[0]} carries 1500 us at {frame_hz:.2f} Hz (with pulse_scale "
                  f"{backend.pulse_scale:g}). Measure its frequency (a multimeter's Hz range) or the pulse width "
                  f"(a scope), then run again with --measured-hz F or --measured-us W")
            return 0
    except ValueError as e:
        print(f"bench esc: {e}", file=sys.stderr)
        return 2
    finally:
        port.stop()
    print(f"bench esc: this board's oscillator is {25.0 / scale:.3f} MHz; set in the boat config:\n"
          f"esc:\n  pulse_scale: {scale:.4f}")
    return 0
