"""The typed sensor models with some of their noise groups switched off."""
from __future__ import annotations

import dataclasses


def with_sensors(vessel, **groups):
    """The vessel with some sensor settings replaced, e.g. gnss={'cep_m': 3.0}."""
    sensors = vessel.sensors
    for group, changes in groups.items():
        sensors = dataclasses.replace(sensors, **{group: dataclasses.replace(getattr(sensors, group), **changes)})
    return dataclasses.replace(vessel, sensors=sensors)
