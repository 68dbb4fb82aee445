"""The garbage collector around a real-time loop: collect the start-up heap before the control loop runs, and
freeze what is left once the rims are up, so no collection ever rescans the objects that live for the whole run.

A full collection holds the interpreter lock for as long as it takes over every tracked object (tens of ms on a
running boat process), which a 50 Hz loop sees as a late cycle; freezing is a constant-time move of the tracked
objects into the permanent generation and never stops the loop.
"""
from __future__ import annotations

import gc


def collect_before_loop() -> None:
    """A full collection. Call only while no control loop is running (it stops every thread while it runs)."""
    gc.collect()


def freeze_startup_heap() -> None:
    """Move every object alive now out of the collector's reach for the rest of the process (gc.freeze). Safe
    while the loop runs; objects created later are collected as usual. Garbage left since the last collection
    is kept, not freed: call collect_before_loop() before the loop starts."""
    gc.freeze()
