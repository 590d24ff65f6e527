"""The rules, one module per tool (or per page): importing the package
registers them all."""
import importlib
import os

for _name in sorted(os.listdir(os.path.dirname(__file__))):
    if _name.endswith(".py") and _name != "__init__.py":
        importlib.import_module(f"{__name__}.{_name[:-3]}")
