"""Load the function under test from ``MODULE:FUNCTION`` (an importable module or a file path).

``MODULE`` is a dotted module name (``mypkg.verify``) or a path to a ``.py`` file
(``./my_verifier.py``); ``FUNCTION`` a name in it, possibly dotted (``Verifier.verify``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["load_function", "takes_coins"]


def _module_from_file(path: Path, spec_text: str) -> Any:
    name = f"_mdsd_ot_lossless_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"MODULE:FUNCTION: cannot import {path} (from {spec_text!r})")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except (Exception, SystemExit) as exc:  # sys.exit() on import: not a check that passed
        del sys.modules[name]
        raise ValueError(
            f"MODULE:FUNCTION: importing {path} raised {type(exc).__name__}: {exc}"
        ) from exc
    return mod


def load_function(spec_text: str) -> Callable[..., Any]:
    """The callable named by ``"MODULE:FUNCTION"``; a ValueError names what is wrong.

    Examples
    --------
    >>> load_function("mdsd_ot.lossless.controls:rrs_with").__name__
    'rrs_with'
    >>> load_function("mdsd_ot.lossless.controls")
    Traceback (most recent call last):
    ...
    ValueError: MODULE:FUNCTION: expected MODULE:FUNCTION (e.g. my_verifier.py:verify or mypkg.mod:verify), got 'mdsd_ot.lossless.controls'
    """
    if not isinstance(spec_text, str) or ":" not in spec_text:
        raise ValueError(
            "MODULE:FUNCTION: expected MODULE:FUNCTION (e.g. my_verifier.py:verify or "
            f"mypkg.mod:verify), got {spec_text!r}"
        )
    mod_text, func_text = spec_text.rsplit(":", 1)
    if not mod_text or not func_text:
        raise ValueError(f"MODULE:FUNCTION: empty module or function name in {spec_text!r}")
    path = Path(mod_text)
    if mod_text.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ValueError(f"MODULE:FUNCTION: file {mod_text} does not exist")
        mod = _module_from_file(path, spec_text)
    else:
        try:
            mod = importlib.import_module(mod_text)
        except ImportError as exc:
            raise ValueError(
                f"MODULE:FUNCTION: cannot import module {mod_text!r} ({exc}); give an importable "
                "module name or a path to a .py file"
            ) from exc
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the module's code failed
            raise ValueError(
                f"MODULE:FUNCTION: importing module {mod_text!r} raised {type(exc).__name__}: {exc}"
            ) from exc
    obj: Any = mod
    for part in func_text.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"MODULE:FUNCTION: {mod_text!r} has no attribute {func_text!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"MODULE:FUNCTION: {spec_text!r} is not callable")
    return obj


def takes_coins(func: Callable[..., Any]) -> bool:
    """True when ``func``'s fourth parameter is named ``coins`` (a ``verify``, not a sampler).

    Examples
    --------
    >>> takes_coins(lambda p, q, drafts, coins: None), takes_coins(lambda p, q, drafts, rng: None)
    (True, False)
    """
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return False
    return len(params) >= 4 and params[3] == "coins"
