"""TL6xx: serialization and security."""
