"""Function views, one module per area (STYLE §3)."""
