"""`autopilot keys token --config FILE`: create the boat's command token; `autopilot keys mavlink --config FILE`:
the MAVLink signing passphrase; `autopilot keys sros2`: the SROS2 set-up.

The token file (mode 600, next to the boat config unless `commands.token_file` says otherwise) is the shared
secret `autopilot command` and ground stations sign commands with (autopilot/commands/auth.py). Copy it to the
operator's machine over a channel you trust (scp), into the same relative place beside their copy of the boat
config, or point `commands.token_file` at it.

SROS2 adds what a token cannot: encrypted, access-controlled DDS traffic for every topic. It needs the
`sros2` package of the system ROS 2 (not on PyPI); `autopilot keys sros2` prints the commands for this boat.
"""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("keys", help="create the command token, or print the SROS2 set-up",
                              description=__doc__.split("\n\n")[0])
    ks = p.add_subparsers(dest="what", metavar="WHAT")
    ks.required = True
    t = ks.add_parser("token", help="create the shared command token named by the boat config (mode 600)")
    t.add_argument("--config", required=True, metavar="FILE",
                   help="the boat config; the token goes to its commands.token_file")
    t.add_argument("--replace", action="store_true", help="replace an existing token (every station needs the new one)")
    t.set_defaults(func=run_token)
    m = ks.add_parser("mavlink", help="create the MAVLink 2 signing passphrase named by the boat config's "
                                      "mavlink.signing_key_file (mode 600)")
    m.add_argument("--config", required=True, metavar="FILE",
                   help="the boat config; the passphrase goes to its mavlink.signing_key_file")
    m.add_argument("--replace", action="store_true", help="replace an existing key (every GCS needs the new one)")
    m.set_defaults(func=run_mavlink_key)
    w = ks.add_parser("web", help="set the web page's password (stored as a scrypt hash, mode 600, in the boat "
                                  "config's web.password_file)")
    w.add_argument("--config", required=True, metavar="FILE", help="the boat config")
    w.add_argument("--password-stdin", action="store_true",
                   help="read the password from the first line of standard input instead of asking twice")
    w.set_defaults(func=run_web_password)
    s = ks.add_parser("sros2", help="print the SROS2 keystore, enclave and environment set-up for this boat")
    s.add_argument("--config", required=True, metavar="FILE",
                   help="the boat config (its ROS namespace and node names make the enclaves)")
    s.add_argument("--keystore", default="/etc/autopilot/sros2_keystore", metavar="DIR",
                   help="where the printed commands put the keystore (default /etc/autopilot/sros2_keystore)")
    s.set_defaults(func=run_sros2)


def _config(path):
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.schema import ConfigError
    try:
        return load_boat_config(path)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def run_token(args) -> int:
    from autopilot.commands.auth import write_new_token
    cfg = _config(args.config)
    if cfg is None:
        return 2
    path = cfg.token_path()
    if args.replace and path.exists():
        path.unlink()
    try:
        write_new_token(path)
    except FileExistsError:
        print(f"error: {path} exists; keep it, or make a new one with --replace", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot create {path}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"command token written to {path} (mode 600). Copy it to each operator's machine beside their copy "
          f"of {args.config}; `autopilot command --config ...` signs with it.")
    if cfg.commands.auth == "off":
        print("note: commands.auth is off in this config: the token is not checked until you remove that line")
    return 0


def run_mavlink_key(args) -> int:
    import os
    import secrets
    cfg = _config(args.config)
    if cfg is None:
        return 2
    path = cfg.signing_key_path()
    if path is None:
        print(f"error: {args.config} has no mavlink.signing_key_file; add one (e.g. mavlink.key) first",
              file=sys.stderr)
        return 2
    passphrase = secrets.token_urlsafe(18)
    try:
        if args.replace and path.exists():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(passphrase + "\n")
    except FileExistsError:
        print(f"error: {path} exists; keep it, or make a new one with --replace", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot create {path}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"MAVLink signing passphrase written to {path} (mode 600): {passphrase}\n"
          f"Enter it in the ground station: MAVProxy `signing key {passphrase}`; QGroundControl: Application "
          f"Settings > MAVLink > signing key. Unsigned commands (except disarm and HOLD) are now refused.")
    return 0


def run_web_password(args) -> int:
    from autopilot.web.passwords import MIN_LENGTH, write_password_file
    cfg = _config(args.config)
    if cfg is None:
        return 2
    path = cfg.web_password_path()
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        import getpass
        try:
            password = getpass.getpass(f"web page password (at least {MIN_LENGTH} characters): ")
            again = getpass.getpass("again: ")
        except (EOFError, KeyboardInterrupt):
            print("\nerror: no password given", file=sys.stderr)
            return 1
        if password != again:
            print("error: the two passwords differ; nothing changed", file=sys.stderr)
            return 1
    try:
        write_password_file(path, password)
    except ValueError as e:
        print(f"error: {e}; nothing changed", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot write {path}: {e.strerror}", file=sys.stderr)
        return 1
    where = "" if cfg.web is not None else (f"\nnote: {args.config} has no web: section yet; add `web: "
                                            f"{{listen: 0.0.0.0:8080}}` to serve the page")
    print(f"web password set ({path}, mode 600); the page asks for it at login.{where}")
    return 0


def run_sros2(args) -> int:
    cfg = _config(args.config)
    if cfg is None:
        return 2
    ns = cfg.ros.namespace.rstrip("/") or ""
    enclave = f"{ns}/autopilot"
    ks = args.keystore
    print(f"""# SROS2 for this boat (run with the system ROS 2 sourced; the sros2 package provides `ros2 security`)
ros2 security create_keystore {ks}
ros2 security create_enclave {ks} {enclave}
ros2 security create_enclave {ks} {ns}/operator
# on the boat (systemd: add these to /etc/autopilot/autopilot.env, which the unit reads):
ROS_SECURITY_KEYSTORE={ks}
ROS_SECURITY_ENCLAVE_OVERRIDE={enclave}
ROS_SECURITY_ENABLE=true
ROS_SECURITY_STRATEGY=Enforce
# on the operator's machine: copy {ks}/enclaves{ns}/operator and {ks}/public, then
#   ROS_SECURITY_ENCLAVE_OVERRIDE={ns}/operator ROS_SECURITY_ENABLE=true ROS_SECURITY_STRATEGY=Enforce
# Keep commands.auth: token as well: SROS2 decides who joins the domain, the token who may steer.""")
    return 0
