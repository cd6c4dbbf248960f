"""Shared analyses that rules reuse instead of re-deriving: import aliases,
grad-disabled regions, loops, assignment tracking and tensor/module inference."""
