"""``python -m lightrag_prism``: the ``lightrag-prism`` command."""

import sys

from .cli import main

sys.exit(main())
