"""Maps the design card's top-level folders to one import name, `relaylens`.

`compiler/` imports as `relaylens.compiler`, `server/` as `relaylens.server` and
`grammar/` (which holds relay.lark as package data) as `relaylens.grammar`;
`relaylens` itself is a namespace package.  Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = {"compiler": "relaylens.compiler", "server": "relaylens.server", "grammar": "relaylens.grammar"}

packages, package_dir = [], {}
for folder, name in FOLDERS.items():
    package_dir[name] = folder
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=package_dir)
