"""`python -m autopilot.cli ARGS`: the same as the `autopilot` command."""
import sys

from autopilot.cli.main import main

sys.exit(main())
