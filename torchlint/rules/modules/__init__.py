"""TL7xx: module structure."""
