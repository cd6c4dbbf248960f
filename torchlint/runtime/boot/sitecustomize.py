"""Put first on PYTHONPATH by `torchlint run`: every Python process the program starts imports
this, loads the runtime monitors, then runs the sitecustomize it shadows (if any)."""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before exec: pickled worker probes refer to it by name
    spec.loader.exec_module(module)
    return module


def _chain():
    """Run the sitecustomize that would have run without us (a venv's, a distro's)."""
    others = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_torchlint_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


def _start():
    try:
        monitor = _load("_torchlint_monitor", os.path.join(os.path.dirname(_HERE), "monitor.py"))
        monitor.start_from_environment()
    except Exception as exc:  # a monitor problem must never stop the user's program
        sys.stderr.write(f"torchlint run: monitors not installed in process {os.getpid()}: {exc!r}\n")


_start()
_chain()
