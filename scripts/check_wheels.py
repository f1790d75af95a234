"""The wheels-only install test: what `pip install langchain-argus` would give a user.

Creates a clean virtual environment in a temporary folder, installs the four wheels from
``--dist`` (argus-ir and the three adapters; their other dependencies from the package index,
through ``--constraints``), checks that every argus module is imported from that environment and
not from a source tree, then runs each framework's quickstart from a copy outside the checkout
and checks it finds the document the plain index misses. Exit status 0 only if all of that holds.

    python scripts/check_wheels.py --dist dist --constraints constraints.txt [EXTRA_REQUIREMENT ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {  # distribution name -> its import name
    "argus_ir": "argus_ir",
    "langchain_argus": "langchain_argus",
    "argus_haystack": "haystack_integrations.components.augmenters.argus",
    "argus_llamaindex": "argus_llamaindex",
}
QUICKSTARTS = ("langchain", "haystack", "llamaindex")


def _wheels(dist: Path) -> list[Path]:
    wheels = []
    for name in DISTRIBUTIONS:
        found = sorted(dist.glob(f"{name}-*.whl"))
        if len(found) != 1:
            raise SystemExit(f"{dist}: expected one {name} wheel, found {len(found)}")
        wheels += found
    return wheels


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, required=True)
    parser.add_argument("--constraints", type=Path, required=True)
    parser.add_argument("extra", nargs="*", help="more requirements the quickstarts need")
    args = parser.parse_args()
    wheels = _wheels(args.dist.resolve())
    with tempfile.TemporaryDirectory(prefix="argus-wheels-") as tmp:
        work = Path(tmp)
        env_dir = work / "venv"
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        python = str(env_dir / "bin" / "python")
        # the wheel files themselves, so that no sdist and no source folder can stand in for
        # them; the adapters' own requirement names argus-ir's extras
        _run(
            [python, "-m", "pip", "install", "--quiet", "-c", str(args.constraints)]
            + [str(w) for w in wheels]
            + list(args.extra)
        )
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        probe = (
            "import importlib, sys\n"
            f"for name in {list(DISTRIBUTIONS.values())!r}:\n"
            "    path = importlib.import_module(name).__file__\n"
            f"    assert path.startswith({str(env_dir)!r}), (name, path)\n"
            "    print(name, path)\n"
        )
        _run([python, "-c", probe], cwd=work, env=env)
        failed = []
        for name in QUICKSTARTS:
            script = work / f"{name}_quickstart.py"
            shutil.copy(ROOT / "examples" / script.name, script)
            proc = subprocess.run(
                [python, str(script)], cwd=work, env=env, capture_output=True, text=True
            )
            print(proc.stdout, end="")
            lines = {line.split(":")[0].strip(): line for line in proc.stdout.splitlines()}
            if proc.returncode != 0 or "film-1" not in lines.get("with argus", ""):
                print(proc.stderr[-3000:], file=sys.stderr)
                failed.append(name)
        if failed:
            raise SystemExit(f"quickstarts that failed from the wheels: {', '.join(failed)}")
        print(f"wheels-only install: {len(wheels)} wheels, {len(QUICKSTARTS)} quickstarts passed")


if __name__ == "__main__":
    main()
