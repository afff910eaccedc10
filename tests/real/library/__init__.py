"""Tests against a real MIOpen, host side only (tier `real_library`)."""
