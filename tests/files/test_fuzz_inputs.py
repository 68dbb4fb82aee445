"""A bounded, seeded fuzz of the file loaders and `check` (issue 11): no input may crash them."""
import pytest

from tests.support.fuzz_inputs import cases, run_case

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def test_mutated_vessel_mission_and_qgc_files_are_loaded_or_refused_never_crash(tmp_path):
    outcomes = {}
    crashes = []
    for kind, text in cases(400, seed=20261122):
        result = run_case(kind, text, tmp_path)
        outcomes[result.split(":")[0]] = outcomes.get(result.split(":")[0], 0) + 1
        if result.startswith("crash"):
            crashes.append((kind, result, text[:200]))
    assert crashes == []
    assert outcomes.get("refused", 0) > 100 and outcomes.get("ok", 0) > 10      # the fuzz reaches both ends
