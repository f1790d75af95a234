"""``python -m argus_ir.cli``: the ``argus`` command."""

from argus_ir.cli import main

raise SystemExit(main())
