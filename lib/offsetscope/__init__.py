"""offsetscope."""
