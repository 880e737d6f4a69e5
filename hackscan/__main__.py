"""`python -m hackscan ...` is the `hackscan` command."""
import sys

from hackscan.cli import main

sys.exit(main())
