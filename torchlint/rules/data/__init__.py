"""TL3xx: data loading."""
