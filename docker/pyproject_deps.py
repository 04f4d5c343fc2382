"""Print the requirements of pyproject.toml, one a line, for the image's cached dependency layer.

    python3 pyproject_deps.py build            # [build-system] requires
    python3 pyproject_deps.py run [EXTRA ...]  # [project] dependencies (+ optional extras)

Standard library only (tomllib: Python >= 3.11), since it runs in the bare base image.
"""

import sys
import tomllib

with open("pyproject.toml", "rb") as f:
    pyproject = tomllib.load(f)
kind, extras = sys.argv[1], sys.argv[2:]
if kind == "build":
    requirements = pyproject["build-system"]["requires"]
else:
    project = pyproject["project"]
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += project.get("optional-dependencies", {})[extra]
print("\n".join(requirements))
