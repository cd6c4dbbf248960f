"""TL9xx: migrations, deprecated and removed APIs."""
