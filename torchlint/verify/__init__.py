"""`--verify`: confirm findings by running probes under the installed torch, in a
separate, sandboxed process (runner.py). Nothing in this package imports torch, except
probes.py, which only the probe worker loads."""
