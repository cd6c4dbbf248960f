"""TL4xx: losses and numerics."""
