"""Root pytest configuration: skip doctest collection of modules whose optional extra is absent."""

from __future__ import annotations

import importlib.util

collect_ignore_glob: list[str] = []
if importlib.util.find_spec("torch") is None:
    collect_ignore_glob.append("mdsd_ot/torch/*")
if importlib.util.find_spec("matplotlib") is None:
    collect_ignore_glob.append("notebooks/*")
