"""Restore: plan, target checks, the per-partition producing task, and the dry-run report."""
