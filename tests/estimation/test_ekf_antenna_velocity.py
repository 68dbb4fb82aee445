"""A GNSS antenna away from the reference point: its velocity is the boat's plus r x lever arm.

On a kayak the antenna often sits on the stern deck, a metre behind the point the model describes. In a turn
at 0.38 rad/s that antenna moves sideways at 0.4 m/s more than the reference point does: compared with the
reference point's velocity, the receiver's course reads as sway the model did not predict. The position was
always taken at the antenna; the velocity now is too.
"""
from __future__ import annotations

import pytest

from autopilot.vocab.config import load_vessel
from tests.support.late_fix_flight import fly_a_steady_turn
from tests.support.sim_sensors import with_sensors


def _turn_with_antenna(x_m: float, y_m: float, seed: int):
    """FOKA's own model in a steady turn, the antenna at (x_m, y_m) body FRD in both the simulated receiver
    and the file the filter reads; fixes on time."""
    vessel = with_sensors(load_vessel("foka"), gnss={"antenna_x_m": x_m, "antenna_y_m": y_m})
    return fly_a_steady_turn(0.0, seed, vessel=vessel)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_an_antenna_on_the_stern_does_not_make_a_right_model_look_wrong(seed):
    stern = _turn_with_antenna(-1.2, 0.3, seed)
    centre = _turn_with_antenna(0.0, 0.0, seed)
    h = stern.health(90.0)
    assert stern.counters["gps_accepted"] >= 85 and h.gps_vel_rejected == 0
    assert h.process_noise_scale < 1.1
    assert stern.consistency.nis["sway"] < 1.2
    assert h.model_consistency < centre.health(90.0).model_consistency + 0.2
