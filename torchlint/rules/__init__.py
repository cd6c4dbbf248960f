"""One module per rule; `registry.py` holds the table of codes."""
