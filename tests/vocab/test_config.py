"""Config loading: the presets load, and every kind of bad file is refused naming file, key and reason."""
import textwrap

import pytest
import yaml

from autopilot.vocab.config import CONFIG_DIR, ConfigError, VesselConfig, load_mission, load_vessel
from autopilot.vocab.schema import build


@pytest.mark.parametrize("name", ["foka", "iacquabot", "wamv"])
def test_presets_load(name):
    v = load_vessel(name)
    assert v.name == name
    assert len(v.thrusters) in (2, 4)
    assert v.source_file.endswith(f"{name}.yaml")


def test_preset_values_match_published_wamv():
    h = load_vessel("wamv").hull
    assert (h.mass_kg, h.iz_kgm2, h.x_udot, h.y_vdot, h.n_rdot) == (180, 466, -9, -167, -335)
    assert (h.x_u, h.x_uu, h.y_v, h.y_vv, h.n_r, h.n_rr) == (-100, -150, -100, -100, -800, -800)


def test_iacquabot_is_paper_000_table_3_on_a_12_v_supply():
    """Saldarriaga-Mesa et al. 2025, Table 3: z1..z9 as identified for the 45.32 kg boat (mapping z1 = m - X_udot,
    z2 = m - Y_vdot, z3 = Iz - N_rdot, z4..z9 = -X_u, -X_uu, -Y_v, -Y_vv, -N_r, -N_rr)."""
    v = load_vessel("iacquabot")
    h = v.hull
    table_3 = (124.5923, 120.0275, 141.5164, 25.9335, 35.9833, 37.0247, 25.7968, 200.2944, 18.5319)
    ours = (h.mass_kg - h.x_udot, h.mass_kg - h.y_vdot, h.iz_kgm2 - h.n_rdot,
            -h.x_u, -h.x_uu, -h.y_v, -h.y_vv, -h.n_r, -h.n_rr)
    assert ours == pytest.approx(table_3, rel=1e-5)
    assert h.mass_kg == 45.32
    assert v.battery.voltage_v == 12.0          # Table 2's thrust curve is Blue Robotics' 12 V curve


@pytest.mark.parametrize("name", ["demo", "hexagon", "straight_line"])
def test_missions_load(name):
    m = load_mission(CONFIG_DIR / "missions" / f"{name}.yaml")
    assert m.waypoints


def test_demo_mission_is_a_survey_with_sharp_turns():
    import math

    from autopilot.guidance.path_following import MissionGuidance
    m = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    g = MissionGuidance(m, load_vessel("foka"))
    wps = g.waypoints_ned
    assert len(wps) >= 5 and all(p.lat_deg is not None for p in m.waypoints)
    turns = []
    for a, b, c in zip(wps, wps[1:], wps[2:]):
        h1 = math.atan2(b[1] - a[1], b[0] - a[0])
        h2 = math.atan2(c[1] - b[1], c[0] - b[0])
        turns.append(abs(math.degrees((h2 - h1 + math.pi) % (2 * math.pi) - math.pi)))
    assert min(turns) >= 60


def _foka_dict():
    return yaml.safe_load((CONFIG_DIR / "vessels" / "foka.yaml").read_text())


@pytest.mark.parametrize("mutate, key, reason", [
    (lambda d: d["hull"].update(bogus=1), "hull.bogus", "unknown key"),
    (lambda d: d["hull"].update(mass_kg="heavy"), "hull.mass_kg", "must be a number"),
    (lambda d: d["hull"].update(mass_kg=-3), "hull.mass_kg", "at least"),
    (lambda d: d["hull"].pop("mass_kg"), "hull.mass_kg", "required"),
    (lambda d: d["hull"].update(x_u=5.0), "hull.x_u", "at most 0"),
    (lambda d: d["thrusters"][0].update(type="jet"), "thrusters[0].type", "must be one of"),
    (lambda d: d["thrusters"][1].update(pulse_neutral_us=1000), "thrusters[1].pulse_neutral_us", "between"),
    (lambda d: d["thrusters"].pop(), "thrusters", "2 or 4"),
    (lambda d: d["u5_table"].update(thrust_n=[0, 1]), "u5_table.thrust_n", "entries"),
    (lambda d: d["control"]["allocation"].update(priority="speed"), "control.allocation.priority", "one of"),
    (lambda d: d["sensors"]["imu"].update(mount_rpy_deg=[0, 0]), "sensors.imu.mount_rpy_deg", "3 elements"),
    (lambda d: d["sensors"]["gnss"].update(rate_hz=True), "sensors.gnss.rate_hz", "must be a number"),
    (lambda d: d["sensors"]["mag"].update(online={"min_arc_deg": 30}), "sensors.mag.online.min_arc_deg", "at least"),
    (lambda d: d["sensors"]["mag"].update(online={"enable": True}), "sensors.mag.online.enable", "unknown key"),
])
def test_bad_vessel_names_file_key_and_reason(mutate, key, reason):
    d = _foka_dict()
    mutate(d)
    with pytest.raises(ConfigError) as e:
        build(VesselConfig, d, "foka.yaml")
    assert e.value.file == "foka.yaml"
    assert e.value.key == key
    assert reason in e.value.reason
    assert str(e.value).startswith(f"foka.yaml: {key}: ")


def _write(tmp_path, text, name="m.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_bad_mission_files(tmp_path):
    p = _write(tmp_path, """
        name: x
        waypoints: [{north_m: 1, east_m: 2}]
        cruise_speed_mps: 1
        acceptance_radius_m: 2
    """)
    with pytest.raises(ConfigError, match="anchor: required"):
        load_mission(p)
    p = _write(tmp_path, """
        name: x
        waypoints: [{lat_deg: 10, lon_deg: 20, north_m: 1}]
        cruise_speed_mps: 1
        acceptance_radius_m: 2
    """)
    with pytest.raises(ConfigError, match=r"waypoints\[0\]"):
        load_mission(p)
    p = _write(tmp_path, """
        name: x
        waypoints: [{lat_deg: 10, lon_deg: 20}]
        cruise_speed_mps: -1
        acceptance_radius_m: 2
    """)
    with pytest.raises(ConfigError, match="cruise_speed_mps: must be at least"):
        load_mission(p)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_mission(tmp_path / "missing.yaml")
    p = _write(tmp_path, "name: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML at line"):
        load_mission(p)
    p = _write(tmp_path, "- just\n- a list\n")
    with pytest.raises(ConfigError, match="mapping at the top level"):
        load_mission(p)
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="cannot read"):
        load_mission(p)
