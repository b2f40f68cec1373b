"""``python -m mdsd_ot``: the ``mdsd-ot`` command line (:mod:`mdsd_ot.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
