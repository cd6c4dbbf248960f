"""TL8xx: performance and mixed precision."""
