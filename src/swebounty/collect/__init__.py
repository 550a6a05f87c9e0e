"""Fresh tasks: mine fixes from git (and the GitHub API), split, filter, price, validate, seal."""

from swebounty.collect.pricing import estimate_value
from swebounty.collect.seal import seal, verify_seal

__all__ = ["estimate_value", "seal", "verify_seal"]
