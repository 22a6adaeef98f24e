"""Map the repository's top-level folders into the single ``pimforge`` namespace.

hw/ -> pimforge.hw, sim/ -> pimforge.sim, software/ -> pimforge.software, synth/ -> pimforge.synth;
the CLI and config code live in pimforge/.  No bare ``hw`` or ``sim`` module is ever installed.
"""
from setuptools import find_packages, setup

TOPS = ["hw", "sim", "software", "synth"]
package_dir = {"pimforge": "pimforge"}
packages = ["pimforge"] + [f"pimforge.{p}" for p in find_packages("pimforge")]
for top in TOPS:
    package_dir[f"pimforge.{top}"] = top
    packages.append(f"pimforge.{top}")
    packages += [f"pimforge.{top}.{p}" for p in find_packages(top)]

setup(
    package_dir=package_dir,
    packages=packages,
    package_data={"": ["*.yaml", "*.json", "*.txt", "*.v", "*.sv"]},
    include_package_data=True,
)
