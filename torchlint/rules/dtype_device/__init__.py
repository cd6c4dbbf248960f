"""TL2xx: dtypes and devices."""
