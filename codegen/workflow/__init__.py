"""Whole commands made of the stages: upgrade, add-release, and the all-or-nothing transaction under them."""
