"""Where the tests find the repository, its reference data and the helper scripts they start."""
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parents[1]
DATA = REPO / "tests" / "data"        # gpsd captures, T200 tables, gamepad sequences (see their READMEs)
