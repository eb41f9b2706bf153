"""Measurement jobs for the tuner's worker tests (module level, so spawned workers import them)."""

from __future__ import annotations

import os
import time


def job(kind: str) -> tuple[float | None, str | None]:
    if kind == "crash":
        os._exit(3)  # the worker process dies
    if kind == "hang":
        time.sleep(120)
    return 1.0, None
