"""Link figures without DDS: latency credited to the stamp a thrust carries (not to the step it arrives in),
loss counted by stamp from the first message the far side received, the clock offset from both directions."""
from autopilot.ros.link_figures import (
    NS,
    PublishedStamps,
    StampCounts,
    StampedLatency,
    clock_offset_ms,
    lockstep_breakdown_ms,
    loss_per_topic,
)

MS = 1_000_000


def test_a_thrust_arriving_after_later_steps_is_credited_to_its_own_stamp():
    lat = StampedLatency()
    for k in range(5):                                   # 20 ms steps published at wall k*20 ms
        lat.published(k * 20 * MS, k * 20 * MS)
    assert lat.thrust_received(0, 95 * MS) == 0.095     # step 0's thrust, 95 ms late (four steps on)
    assert lat.thrust_received(0, 96 * MS) is None and lat.repeats == 1       # a cycle without news: not twice
    assert lat.thrust_received(3 * 20 * MS, 70 * MS) == 0.010
    assert lat.thrust_received(7 * 20 * MS, 200 * MS) is None and lat.unknown == 1
    s = lat.summary()
    assert (s["latency_p50_ms"], s["latency_max_ms"], s["latency_samples"]) == (10.0, 95.0, 2)
    assert lat.unanswered() == 3 and lat.unanswered(before_ns=20 * MS) == 1


def test_loss_counts_by_stamp_from_the_first_received_and_only_up_to_the_settled_stamp():
    pub = PublishedStamps()
    rx = StampCounts()
    for k in range(100):
        pub.add("imu", k * 20 * MS)
        if k >= 10 and k % 10 != 5:                     # the first 10 before the link matched; then 1 in 10 lost
            rx.add("imu", k * 20 * MS)
    upto = 79 * 20 * MS                                 # later stamps may still be in flight
    report = {"upto_ns": upto, "first_ns": dict(rx.first_ns), "rx": rx.settle(upto), "tx": {"thrust_stamped": 50}}
    loss = loss_per_topic(pub, report, {"thrust_stamped": 49})
    assert loss == {"imu": round(1 - 63 / 70, 4), "thrust_stamped": 0.02}


def test_clock_offset_is_half_the_difference_of_the_shortest_one_way_differences():
    # the far clock 7 ms ahead, 3 ms shortest delay each way: down = 7 + 3, up = -7 + 3
    assert clock_offset_ms(10 * MS, -4 * MS) == 7.0
    assert clock_offset_ms(None, 1 * NS) is None


def test_lockstep_breakdown_splits_a_step_into_our_step_and_the_wait_for_the_answer():
    # 1 ms of our own work and a 40 ms round trip per 20 ms step: half real time at best, whatever the CPU
    b = lockstep_breakdown_ms([0.001] * 99 + [0.011], [0.040] * 100, 0.02)
    assert b["steps"] == 100 and b["step_p50"] == 1.0 and b["wait_p50"] == 40.0 and b["wait_max"] == 40.0
    assert b["per_step_mean"] == 41.1 and b["realtime_factor"] == round(20 / 41.1, 2)


def test_a_stamp_several_sensors_carry_counts_from_its_last_publication():
    # the magnetometer's sample goes out 3 ms before the IMU's of the same stamp (the simulator publishing): that
    # is not the link's time
    lat = StampedLatency()
    lat.published(100 * MS, 1000 * MS)
    lat.published(100 * MS, 1003 * MS)
    assert lat.thrust_received(100 * MS, 1050 * MS) == 0.047
