"""Flight modes, one small module each. A mode turns the estimate into what the controllers should do."""
from autopilot.modes.base import Mode, ModeOutput

__all__ = ["Mode", "ModeOutput"]
