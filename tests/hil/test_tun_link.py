"""The IP-level link's timing and loss decisions (hil/links/tun_link.py), without a device or namespace: the namespace
test (test_ros_hil_netns.py) runs it for real."""
import random

import pytest

from hil.links.tun_link import (
    LinkSchedule,
    TunLinkSpec,
    direction_key,
    draw_delay_s,
    in_outage,
    main,
    percentile_ms,
    release_time_s,
)


def test_drawn_delays_stay_within_delay_plus_minus_jitter_and_spread_over_it():
    rng = random.Random(3)
    spec = TunLinkSpec(delay_ms=20.0, jitter_ms=10.0)
    d = [draw_delay_s(rng, spec) for _ in range(5000)]
    assert min(d) >= 0.010 and max(d) <= 0.030
    assert min(d) < 0.011 and max(d) > 0.029                     # the whole +-10 ms is used
    assert abs(sorted(d)[2500] - 0.020) < 0.001
    assert draw_delay_s(rng, TunLinkSpec(delay_ms=2.0, jitter_ms=5.0)) >= 0.0    # never negative


def test_a_packet_never_overtakes_the_one_before_it_in_its_direction():
    sched = LinkSchedule(TunLinkSpec(delay_ms=20.0, jitter_ms=15.0), seed=7)
    up = ("pc", "pi")
    out_up = [sched.admit(i * 0.001, up) for i in range(300)]
    assert out_up == sorted(out_up)
    assert all(t >= i * 0.001 + 0.005 for i, t in enumerate(out_up))        # at least its own delay's floor
    assert release_time_s(1.0, 0.005, None) == pytest.approx(1.005)
    assert release_time_s(1.0, 0.005, 1.020) == 1.020
    # each direction queues on its own: a burst up does not hold packets of other address pairs
    burst = LinkSchedule(TunLinkSpec(delay_ms=50.0, jitter_ms=45.0), seed=2)
    last_up = [burst.admit(0.0, up) for _ in range(200)][-1]
    assert last_up > 0.09
    others = [burst.admit(0.0, ("pi", f"pc{i}")) for i in range(20)]
    assert min(others) < 0.05


def test_loss_drops_about_its_share_and_outages_drop_everything_inside_them():
    sched = LinkSchedule(TunLinkSpec(delay_ms=5.0, loss=0.05, outages=((2.0, 3.0),)), seed=1, start_s=100.0)
    fates = [(100.0 + i * 0.01, sched.admit(100.0 + i * 0.01, "k")) for i in range(1000)]
    in_out = [f for t, f in fates if 102.0 <= t < 105.0]
    assert in_out and all(f is None for f in in_out)
    c = sched.counts
    assert c["dropped_outage"] == len(in_out) and c["packets"] == 1000
    outside = 1000 - len(in_out)
    assert 0.02 * outside <= c["dropped_loss"] <= 0.09 * outside
    assert in_outage(2.0, ((2.0, 3.0),)) and not in_outage(5.0, ((2.0, 3.0),)) and not in_outage(1.99, ((2, 3),))


def test_directions_are_told_apart_by_ipv4_addresses_and_held_times_summarised():
    pkt = bytes([0x45]) + bytes(11) + bytes([10, 0, 0, 1]) + bytes([10, 0, 0, 2])
    assert direction_key(pkt) == (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    assert direction_key(bytes([0x60]) + bytes(39)) == bytes([0x60])           # IPv6: one queue
    assert percentile_ms([0.001 * i for i in range(1, 101)], 50) == 50.0
    assert percentile_ms([], 99) is None


def test_bad_settings_are_refused_with_a_clear_message(capsys):
    with pytest.raises(ValueError, match="loss"):
        TunLinkSpec(loss=1.5)
    with pytest.raises(ValueError, match="outage"):
        TunLinkSpec(outages=((1.0, 0.0),))
    with pytest.raises(SystemExit):
        main(["--dev", "x", "--outage", "soon"])
    assert "START_S:LENGTH_S" in capsys.readouterr().err
    for dev in ("a" * 16, "a/b", "tl 0", ""):       # the kernel would truncate or refuse these names
        with pytest.raises(SystemExit):
            main(["--dev", dev])
        assert "1 to 15 characters" in capsys.readouterr().err, dev
