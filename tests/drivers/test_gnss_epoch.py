"""GGA + RMC merged per epoch into GpsFix: units, validity, talkers, dates, covariance, guards."""
import math

import pytest

from autopilot.vocab.config import GnssConfig
from drivers.gnss.l76k import L76K
from drivers.gnss.l76k_epoch import EpochAssembler, pos_std_from_hdop
from drivers.gnss.nmea_stream import nmea_sentence
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import InMemorySerial


def s(body):
    return nmea_sentence(body).decode().strip()


def gga(t="055234.200", lat="4739.71890,N", lon="12219.58362,W", q=1, sats=14, hdop="0.9", alt="76.5", talker="GN"):
    return s(f"{talker}GGA,{t},{lat},{lon},{q},{sats:02d},{hdop},{alt},M,-21.6,M,,")


def rmc(t="055234.200", status="A", lat="4739.71890,N", lon="12219.58362,W", kn="10.00", cog="286.35",
        date="050826", mode="A", talker="GN"):
    return s(f"{talker}RMC,{t},{status},{lat},{lon},{kn},{cog},{date},,,{mode},V")


def run(sentences, t0=100.0):
    a = EpochAssembler()
    out = []
    for i, x in enumerate(sentences):
        out += a.feed(x, t0 + i)
    out += a.flush()
    return a, out


def test_gga_and_rmc_of_one_epoch_become_one_fix_with_si_units():
    a, fixes = run([gga(), s("GNGLL,4739.71890,N,12219.58362,W,055234.200,A,A"), rmc()])
    assert len(fixes) == 1
    f = fixes[0]
    assert f.utc == "2026-08-05T05:52:34.200Z"
    assert f.lat_deg == pytest.approx(47 + 39.71890 / 60, abs=1e-12)
    assert f.lon_deg == pytest.approx(-(122 + 19.58362 / 60), abs=1e-12)
    assert (f.alt_m, f.fix_quality, f.sats, f.hdop) == (76.5, 1, 14, 0.9)
    assert f.sog_mps == pytest.approx(10 * 0.514444)                  # knots -> m/s
    assert f.cog_rad == pytest.approx(math.radians(286.35) - 2 * math.pi)  # wrapped to [-pi, pi)
    assert f.time_s == 100.0                                           # reception of the epoch's first sentence
    assert f.valid


def test_fix_is_emitted_when_complete_not_one_epoch_late():
    a = EpochAssembler()
    assert a.feed(gga(), 1.0) == []
    done = a.feed(rmc(), 1.5)                                          # delivered with the RMC,
    assert len(done) == 1 and done[0].time_s == 1.0                     # stamped with the GGA's arrival
    assert a.feed(s("GNZDA,055234.200,05,08,2026,00,00"), 1.6) == []   # late sentence of that epoch: ignored


@pytest.mark.parametrize("talker", ["GP", "GL", "BD", "GN"])
def test_single_constellation_talkers_are_accepted(talker):
    _, fixes = run([gga(talker=talker), rmc(talker=talker)])
    assert len(fixes) == 1 and fixes[0].valid


def test_gn_sentence_wins_over_a_single_system_twin():
    _, fixes = run([gga(talker="GP", sats=6, hdop="1.8"), gga(talker="GN", sats=14), rmc()])
    assert len(fixes) == 1 and fixes[0].sats == 14


@pytest.mark.parametrize("bad", [dict(q=0), dict(status="V"), dict(mode="N")])
def test_no_position_when_receiver_says_so(bad):
    g = gga(q=bad.get("q", 1))
    r = rmc(status=bad.get("status", "A"), mode=bad.get("mode", "A"))
    _, fixes = run([g, r])
    assert len(fixes) == 1 and not fixes[0].valid


def test_pos_std_follows_cep_and_hdop():
    # CEP 2.0 m <-> sigma = 2.0 / 1.1774 = 1.699 m per axis at HDOP 1; linear in HDOP.
    assert pos_std_from_hdop(1.0) == pytest.approx(2.0 / 1.1774, rel=1e-4)
    assert pos_std_from_hdop(2.5) == pytest.approx(2.5 * 2.0 / 1.1774, rel=1e-4)
    _, fixes = run([gga(hdop="2.0"), rmc()])
    assert fixes[0].pos_std_m == pytest.approx(2 * 2.0 / 1.1774, rel=1e-4)
    # The CEP rule: half of 2-D Gaussian draws with that sigma fall within cep_m.
    import random
    rng = random.Random(3)
    sig = pos_std_from_hdop(1.0)
    inside = sum(math.hypot(rng.gauss(0, sig), rng.gauss(0, sig)) <= 2.0 for _ in range(20000))
    assert inside / 20000 == pytest.approx(0.5, abs=0.015)


def test_rmc_only_and_gga_only_epochs_still_give_what_they_have():
    _, fixes = run([rmc(t="055234.000"), gga(t="055234.200", alt="80.0")])
    assert [f.utc[11:] for f in fixes] == ["05:52:34.000Z", "05:52:34.200Z"]
    rmc_only, gga_only = fixes
    assert math.isnan(rmc_only.alt_m) and rmc_only.sog_mps == pytest.approx(5.14444)
    assert gga_only.alt_m == 80.0 and gga_only.sog_mps is None
    assert gga_only.utc.startswith("2026-08-05")                       # date carried from the RMC before


def test_disagreeing_position_sentences_give_no_fix():
    a, fixes = run([gga(lat="4739.71890,N"), rmc(lat="4739.71990,N")])
    assert fixes == [] and a.counters.conflicts == 1


def test_malformed_fields_are_counted_not_used():
    a, fixes = run([gga(lat="47X9.71890,N"), gga(t="25:00:00"), gga(lat="4779.71890,N")])
    assert fixes == [] and a.counters.parse_errors == 3


def test_date_rolls_over_at_midnight_without_rmc():
    _, fixes = run([gga(t="235959.800"), rmc(t="235959.800", date="311226"), gga(t="000000.000")])
    assert fixes[0].utc == "2026-12-31T23:59:59.800Z"
    assert fixes[1].utc == "2027-01-01T00:00:00.000Z"


def test_zda_four_digit_year_wins_over_rmc_two_digit_year():
    _, fixes = run([s("GNZDA,120000.000,05,08,1999,00,00"), gga(t="120000.000"), rmc(t="120000.000", date="050899")])
    assert fixes[0].utc == "1999-08-05T12:00:00.000Z"


def test_emitter_round_trip_gives_truth_without_noise():
    em = L76KEmitter(noise=False)
    truth = GnssTruth(lat_deg=-33.8567844, lon_deg=151.2152967, alt_m=12.0, sog_mps=2.0, cog_rad=math.radians(200))
    a = EpochAssembler()
    fixes = []
    for k in range(3):
        for seg in em.epoch(float(k), truth):
            fixes += a.feed(seg.decode().strip(), float(k))
    assert len(fixes) == 3
    f = fixes[1]
    assert f.utc == "2026-08-05T05:52:35.000Z"
    assert f.lat_deg == pytest.approx(truth.lat_deg, abs=2e-7)          # 1e-5 minute resolution
    assert f.lon_deg == pytest.approx(truth.lon_deg, abs=2e-7)
    assert f.alt_m == pytest.approx(12.0, abs=0.05)
    assert f.sog_mps == pytest.approx(2.0, abs=0.003)
    assert f.cog_rad == pytest.approx(math.radians(200) - 2 * math.pi, abs=1e-3)


def test_emitter_noise_matches_the_reported_sigma():
    cfg = GnssConfig(bias_sigma_m=1.0, bias_tau_s=5.0)
    em = L76KEmitter(cfg, seed=5, hdop=1.2)
    truth = GnssTruth(lat_deg=51.1, lon_deg=17.03)
    a = EpochAssembler(cep_m=cfg.cep_m)
    north = []
    for k in range(3000):
        for seg in em.epoch(float(k), truth):
            for f in a.feed(seg.decode().strip(), float(k)):
                north.append(math.radians(f.lat_deg - truth.lat_deg) * 6_371_008.8)
                sigma = f.pos_std_m
    std = math.sqrt(sum(x * x for x in north) / len(north))
    assert sigma == pytest.approx(2.0 / 1.1774 * 1.2, rel=1e-3)
    assert std == pytest.approx(sigma, rel=0.15)


def test_time_stamps_come_from_the_injected_clock():
    port = InMemorySerial(9600)
    now = [42.0]
    drv = L76K(port.opener, baud=9600, clock=lambda: now[0])
    drv.open()
    port.device_write((nmea_sentence(gga()[1:-3]) + nmea_sentence(rmc()[1:-3])))
    fixes = drv.poll()
    assert [f.time_s for f in fixes] == [42.0]


def test_antenna_truth_applies_the_lever_arm():
    from autopilot.vocab.geodesy import LocalFrame
    from hil.devices.gnss_emitter import antenna_truth

    frame = LocalFrame(51.0, 17.0)
    cfg = GnssConfig(antenna_x_m=1.0, antenna_y_m=0.0)
    # Heading east, antenna 1 m forward: 1 m east of the CG; turning to starboard at 0.5 rad/s while
    # still adds 0.5 m/s to the right of the bow (south).
    t = antenna_truth(frame, cfg, 0.0, 0.0, math.pi / 2, 0.0, 0.0, 0.5)
    n, e = frame.to_ned(t.lat_deg, t.lon_deg)
    assert (n, e) == (pytest.approx(0.0, abs=1e-6), pytest.approx(1.0, abs=1e-6))
    assert t.sog_mps == pytest.approx(0.5) and t.cog_rad == pytest.approx(math.pi)
