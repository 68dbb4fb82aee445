"""The boat's web page in a real headless browser (Debian's Chromium under Selenium) against the simulated boat
(`autopilot sim --realtime --web`), a first day as a student has it: no magnetometer calibration yet, 0.1 m/s of
current. Log in; the status shows the boat drifting; the sensors pass their checks; the ESC test runs one
thruster while its button is held; arming in AUTO is refused with the pre-arm reasons listed; the compass page
flies CALIBRATE_ON_WATER to an accepted fit; a QGC .plan is uploaded, drawn and flown to its end; HOLD is one
tap; a tap on the map sends the boat there in GUIDED; a parameter set on the page is read back over MAVLink;
the logs page hands out an earlier run. What the boat did is checked from a pymavlink ground station on
127.0.0.1, not from the page's text alone.

Set WEB_SCREENSHOTS=DIR to keep the screenshots (the manual's pictures)."""
from __future__ import annotations

import io
import math
import os
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from autopilot.vocab.geodesy import LocalFrame
from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import DATA, REPO
from tests.support.web_boat import WebSimBoat, chromium, wait_for

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

WALL_TIME_S = 240.0
HOLD, AUTO, GUIDED = 4, 10, 15       # ArduPilot Rover's custom modes
PLAN_LAST_WP = (51.1100180, 17.0600005)


def _metres(lat1, lon1, lat2, lon2) -> float:
    k = 6371000.0 * math.pi / 180.0
    return math.hypot((lat2 - lat1) * k, (lon2 - lon1) * k * math.cos(math.radians(lat1)))


def _shot(driver, name: str) -> None:
    out = os.environ.get("WEB_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(out) / f"{name}.png"))


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web")
    # an earlier run of the day, for the logs page (the real-time run below writes its own log when it ends)
    subprocess.run([sys.executable, "-m", "autopilot.cli", "sim", str(DATA / "mavlink_pond.yaml"), "--duration", "20",
                    "--log", str(tmp / "runs")], cwd=REPO, check=True, capture_output=True, timeout=300)
    port = free_udp_port()
    gcs = Gcs(port)
    boat = WebSimBoat(tmp, "--no-mag-calibration", "--current", "0.1,0", "--mavlink", f"udpout:127.0.0.1:{port}",
                      "--log", str(tmp / "runs"))
    driver = chromium(tmp)
    try:
        assert gcs.connect(timeout=60.0) is not None, boat.output()[-2000:]
        yield boat, driver, gcs
    finally:
        driver.quit()
        gcs.close()
        boat.stop()


def _text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def _click(driver, element_id: str) -> None:
    driver.find_element(By.ID, element_id).click()


def _tab(driver, name: str) -> None:
    driver.execute_script("window.scrollTo(0, 0)")
    driver.find_element(By.CSS_SELECTOR, f"nav button[data-tab='{name}']").click()


def _hb_mode(gcs) -> tuple:
    hb = gcs.wait("HEARTBEAT", lambda m: m.get_srcSystem() == 1, timeout=5.0)
    return (hb.custom_mode, bool(hb.base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED)) if hb is not None else (None, None)


def test_a_first_day_from_the_browser(rig):
    boat, driver, gcs = rig
    driver.get(boat.url)
    # --- log in
    wait_for(lambda: driver.find_element(By.ID, "login-password").is_displayed(), 20, "the login form")
    driver.find_element(By.ID, "login-password").send_keys(boat.password)
    _click(driver, "login-button")
    wait_for(lambda: _text(driver, "mode") == "HOLD", 20, "the status page showing HOLD")
    # --- the status is live: the boat drifts in the current and the page follows it
    first = wait_for(lambda: " m N" in _text(driver, "position") and _text(driver, "position"), 20, "a position")
    wait_for(lambda: _text(driver, "position") != first, 20, "the position to change")
    assert "satellites" in _text(driver, "gnss")
    _shot(driver, "status")
    # --- the sensors page: GNSS and IMU pass their checks at rest
    _tab(driver, "sensors")
    for table, check in (("checks-gnss", "satellites"), ("checks-gnss", "HDOP"), ("checks-imu", "gravity"),
                         ("checks-imu", "level"), ("checks-mag", "fresh")):
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f"#{table} tr[data-check='{check}']")
                 .get_attribute("data-ok") == "true", 15, f"{check} passing on the sensors page")
    _shot(driver, "sensors")
    # --- the ESC test: the first thruster runs while the button is held, and stops when it is let go
    neutral = driver.execute_script("return state.status.thrusters.neutral_us")
    hold = driver.find_element(By.ID, "esc-hold")
    ActionChains(driver).click_and_hold(hold).perform()
    try:
        running = wait_for(lambda: (lambda m: m is not None and m.servo1_raw > neutral[0] + 20 and m)(
            gcs.wait("SERVO_OUTPUT_RAW", timeout=1.0)), 10, "the first ESC above neutral while held")
        assert running.servo2_raw == neutral[1]                    # one thruster at a time
    finally:
        ActionChains(driver).release(hold).perform()
    wait_for(lambda: (lambda m: m is not None and (m.servo1_raw, m.servo2_raw) == tuple(neutral))(
        gcs.wait("SERVO_OUTPUT_RAW", timeout=1.0)), 5, "both ESCs back at neutral after letting go")
    _tab(driver, "status")
    # --- arming in AUTO is refused, each pre-arm reason on its own line
    Select(driver.find_element(By.ID, "mode-select")).select_by_value("AUTO")
    _click(driver, "mode-button")
    wait_for(lambda: _text(driver, "mode") == "AUTO", 10, "mode AUTO")
    _click(driver, "arm-button")
    wait_for(lambda: "refused" in _text(driver, "answer"), 10, "the arming refusal")
    reasons = wait_for(lambda: driver.execute_script(
        "return Array.from(document.querySelectorAll('#prearm li'), (li) => li.textContent)"), 10, "pre-arm reasons")
    assert any("magnetometer calibration" in r and "CALIBRATE_ON_WATER" in r for r in reasons), reasons
    assert _hb_mode(gcs)[1] is False                     # the boat really is disarmed
    # --- the compass page: CALIBRATE_ON_WATER, samples drawn live, an accepted fit
    _tab(driver, "compass")
    _click(driver, "compass-start")
    wait_for(lambda: "armed" in _text(driver, "compass-answer"), 10, "arming for the calibration")
    wait_for(lambda: driver.execute_script("return state.compass && state.compass.samples_ut.length") > 100, 60,
             "magnetometer samples on the compass plot")
    _shot(driver, "compass-running")
    accepted = wait_for(lambda: driver.execute_script(
        "return state.compass && state.compass.last && state.compass.last.figures.accepted"), 200,
        "an accepted magnetometer fit")
    assert accepted is True
    coverage = wait_for(lambda: float(driver.find_element(
        By.CSS_SELECTOR, "#compass-figures td[data-key='coverage']").text), 10, "the fit's coverage shown")
    assert coverage > 0.8
    _shot(driver, "compass")
    # the calibrated field now has the strength the vessel file expects
    _tab(driver, "sensors")
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#checks-mag tr[data-check='strength']")
             .get_attribute("data-ok") == "true", 15, "the calibrated field's strength passing")
    # --- a QGC .plan uploaded from the map page, drawn, flown to its end (the calibration hands over to AUTO)
    wait_for(lambda: _hb_mode(gcs)[0] == AUTO, 60, "AUTO after the calibration")
    _tab(driver, "map")
    driver.find_element(By.ID, "mission-file").send_keys(str(DATA / "pond.plan"))
    _click(driver, "mission-upload")
    wait_for(lambda: "loaded" in _text(driver, "map-answer"), 15, "the plan loaded")
    wait_for(lambda: driver.find_element(By.ID, "map-info").get_attribute("data-waypoints") == "2", 10,
             "the plan's two waypoints drawn")
    assert "1 fence" in _text(driver, "map-info")
    _shot(driver, "map")
    assert gcs.wait_text("mission complete", timeout=120.0), gcs.texts[-5:]
    pos = gcs.wait("GLOBAL_POSITION_INT", timeout=5.0)
    assert _metres(pos.lat / 1e7, pos.lon / 1e7, *PLAN_LAST_WP) < 6.0
    _shot(driver, "map-complete")
    # --- HOLD by one tap, in the header of every page
    _click(driver, "hold-button")
    wait_for(lambda: _hb_mode(gcs)[0] == HOLD, 10, "HOLD seen over MAVLink")
    # --- a tap on the map sends the boat there in GUIDED (Rover's 15)
    _tab(driver, "map")
    geo = driver.execute_script("return state.geometry")
    target = (geo["waypoints"][0][0] - 5.0, geo["waypoints"][0][1] + 3.0)
    css = driver.execute_script(
        "const c = $('map'), r = c.getBoundingClientRect(), [x, y] = mapView(c).xy(arguments[0], arguments[1]);"
        "return [x * r.width / c.width - r.width / 2, y * r.height / c.height - r.height / 2];", *target)
    driver.find_element(By.ID, "guided-tap").click()
    canvas = driver.find_element(By.ID, "map")
    ActionChains(driver).move_to_element_with_offset(canvas, css[0], css[1]).click().perform()
    wait_for(lambda: "GUIDED" in _text(driver, "map-answer") or "target" in _text(driver, "map-answer"), 10,
             "the GUIDED target accepted")
    wait_for(lambda: _hb_mode(gcs)[0] == GUIDED, 10, "GUIDED seen over MAVLink")
    goal = LocalFrame(geo["origin"]["lat_deg"], geo["origin"]["lon_deg"]).to_wgs84(*target)

    def near_goal():
        p = gcs.wait("GLOBAL_POSITION_INT", timeout=2.0)
        return p is not None and _metres(p.lat / 1e7, p.lon / 1e7, *goal) < 2.5
    wait_for(near_goal, 60, "the boat at the tapped point")
    _shot(driver, "map-guided")
    _click(driver, "hold-button")
    # --- a parameter set on the page, read back over MAVLink
    _tab(driver, "params")
    box = wait_for(lambda: driver.find_element(By.ID, "param-WP_RADIUS"), 10, "the parameters table")
    box.clear()
    box.send_keys("2.5")
    _click(driver, "set-WP_RADIUS")
    wait_for(lambda: "WP_RADIUS = 2.5" in _text(driver, "params-answer"), 10, "the parameter accepted")
    assert gcs.params().get("WP_RADIUS") == pytest.approx(2.5)
    # --- the logs page lists this run; its zip downloads with the page's session
    _tab(driver, "logs")
    link = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#logs-list a[href$='.zip']"), 15, "a run listed")
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in driver.get_cookies())
    req = urllib.request.Request(link.get_attribute("href"), headers={"Cookie": cookies})
    with urllib.request.urlopen(req, timeout=30) as r:
        names = zipfile.ZipFile(io.BytesIO(r.read())).namelist()
    assert any(n.endswith("state.csv") for n in names), names
    plot_url = link.get_attribute("href").replace(".zip", "/plot.png")
    with urllib.request.urlopen(urllib.request.Request(plot_url, headers={"Cookie": cookies}), timeout=120) as r:
        assert r.read(8) == b"\x89PNG\r\n\x1a\n"
    # --- disarm by one tap
    _click(driver, "disarm-button")
    wait_for(lambda: _hb_mode(gcs)[1] is False, 10, "disarmed over MAVLink")
    assert boat.alive()
    assert "Traceback" not in boat.output()
