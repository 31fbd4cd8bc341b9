"""Entry point for ``python -m checkpoint_doctor``."""

from checkpoint_doctor.cli import main

raise SystemExit(main())
