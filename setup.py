"""Maps the component folders (analysis/, compiler/, server/) to `fuselens.*` import names.

pyproject.toml holds the metadata; only the package layout needs code, because every
sub-package a component adds must be found without editing a list by hand.
"""
import os

from setuptools import setup

COMPONENTS = {
    "fuselens": "fuselens",
    "fuselens.analysis": "analysis",
    "fuselens.compiler": "compiler",
    "fuselens.server": "server",
}

packages, package_dir = [], {}
for package, folder in COMPONENTS.items():
    for root, _dirs, files in os.walk(folder):
        if "__init__.py" in files:
            name = package + root[len(folder):].replace(os.sep, ".")
            packages.append(name)
            package_dir[name] = root

setup(packages=packages, package_dir=package_dir, package_data={"fuselens.analysis": ["data/*.json"]})
