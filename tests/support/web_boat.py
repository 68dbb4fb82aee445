"""The simulated boat with its web page, for the web tests: `autopilot sim MISSION --realtime --web
127.0.0.1:0` in its own process (any free port; the URL and this run's password read from its output), and a
headless Chromium driven by Selenium (Debian's chromium and chromium-driver)."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from tests.support.paths import DATA, REPO

URL_LINE = re.compile(r"web page: (http://\S+/)(?: \(password for this run: (\S+)\))?")


class WebSimBoat:
    """`autopilot sim MISSION --vessel foka --realtime --web 127.0.0.1:0 ...extra` in a subprocess."""

    def __init__(self, tmp: Path, *extra: str, mission: Path = DATA / "mavlink_pond.yaml", duration_s: float = 900):
        self.out_path = tmp / "web-sim.out"
        cmd = [sys.executable, "-m", "autopilot.cli", "sim", str(mission), "--vessel", "foka", "--realtime",
               "--gps-noise", "white", "--duration", str(duration_s), "--web", "127.0.0.1:0", *extra]
        self.out = open(self.out_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.out, stderr=subprocess.STDOUT)
        self.url, self.password = self._wait_url()

    def _wait_url(self, timeout_s: float = 60.0):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            m = URL_LINE.search(self.output())
            if m:
                return m.group(1), m.group(2)
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no web page came up:\n{self.output()[-3000:]}")

    def output(self) -> str:
        self.out.flush()
        return self.out_path.read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> Optional[int]:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return self.proc.returncode


def chromium(tmp: Path, width: int = 1100, height: int = 1000):
    """A headless Debian Chromium under Selenium, with a fresh profile and no background networking."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={width},{height}", f"--user-data-dir={tmp / 'chrome'}"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.2):
    """predicate()'s first truthy value within timeout_s; AssertionError naming `what` otherwise."""
    end = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < end:
        try:
            last = predicate()
        except Exception as e:           # the page may be between two renders
            last = e
        else:
            if last:
                return last
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what} (last: {last!r})")
