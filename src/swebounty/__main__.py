"""`python -m swebounty` is the `swebounty` command."""

from swebounty.cli import main

main()
