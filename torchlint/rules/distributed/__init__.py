"""TL5xx: distributed training."""
