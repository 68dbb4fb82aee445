#!/usr/bin/env bash
# check_aarch64.sh -- proof, without a Raspberry Pi, that the autopilot installs on one (64-bit OS, Linux
# aarch64, CPython 3.10, 3.11 and 3.12) without compiling anything.
#
# What is checked: pyproject.toml's [project].dependencies and the `pca9685` extra (the PCA9685 ESC backend).
# The kernel-PWM ESC backend needs no extra package (a few sysfs writes), so it has nothing to check. ROS 2 is
# not checked: a Pi takes rclpy and the messages from its system ROS 2 (PyPI has no aarch64 rclpy); the test,
# ros, gcs and campaign extras are for laptops and CI.
#
#   bash scripts/check_aarch64.sh              the dependencies above
#   bash scripts/check_aarch64.sh 'pkg>=1' ... these requirements instead (to try one out)
#   PYTHON=/path/to/python                     the Python whose pip is used (default: .venv, else python3)
#
# Exit 0: PASS. 1: FAIL, a dependency would have to be compiled on a Pi (named, with the Python version).
# 2: pip cannot reach the package index it is configured with (nothing was checked).
#
# How, per Python version:
#  1. `pip download --only-binary=:all:` for the aarch64 platforms (manylinux_2_17 to 2_28, so glibc 2.28 is
#     enough: Raspberry Pi OS Bookworm, Ubuntu 22.04/24.04), ABI cp3XY/abi3/none: pip resolves the whole
#     dependency tree from wheels that install on a Pi.
#  2. A requirement with no such wheel: its sdist is fetched and read. C/C++/Cython/Fortran/Rust sources or an
#     extension build (ext_modules, Extension(), cffi, a compiling build backend) mean a Pi would compile:
#     FAIL. Otherwise it is pure Python (pigpio and filterpy have been sdist-only): it is built here into a
#     wheel, which must come out py*-none-any, and the resolution goes on with it ("sdist, pure Python").
#  3. pip evaluates environment markers for the machine it runs on, not for the target. So pyproject's
#     markers are evaluated here for the Pi (python_version X.Y, platform_machine aarch64), and the resolved
#     tree is re-walked with the Pi's markers: a requirement only a Pi has is added and resolved again; a
#     wheel only this machine needs is left out of the table. (A dependency of a dependency needed only on
#     this machine, with no aarch64 wheel, would still fail the check: on the safe side.)
#  4. pip on a Pi takes the newest release, wheel or not, while step 1 may fall back to an older wheel: for
#     every compiled wheel the newest release the tree's version constraints allow must have an aarch64 wheel.
# Downloads go to a temporary directory, removed at exit; pip's own logs are shown only on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "check_aarch64.sh: $PY has no pip (run scripts/setup.sh, or set PYTHON=)" >&2
  echo "FAIL: nothing was checked"
  exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_aarch64.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HELPER=$TMP/helper.py

# The parts that need Python: reading pyproject.toml, pip's logs, wheels' metadata and sdists; markers.
cat >"$HELPER" <<'PYTHON'
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from email.parser import Parser

try:
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version
except ImportError:  # every pip carries a copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.version import InvalidVersion, Version

NETWORK = re.compile(
    r"NewConnectionError|Failed to establish a new connection|ConnectTimeout|ReadTimeout|connection broken by|"
    r"Temporary failure in name resolution|Name or service not known|Max retries exceeded|ProxyError|SSLError|"
    r"CERTIFICATE_VERIFY_FAILED|Connection refused|Network is unreachable|Could not fetch URL|HTTP error \d+")
SOURCE = re.compile(r"\.(c|cc|cpp|cxx|c\+\+|pyx|f|f77|f90|f95|rs|cu)$", re.IGNORECASE)
NOT_BUILT = {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks"}
BUILD_CODE = re.compile(r"ext_modules|\bExtension\s*\(|cythonize|cffi_modules|build_ext|Pybind11Extension|"
                        r"RustExtension|CMakeExtension")
BUILD_TOOLS = re.compile(r"^(cython|pybind11|cffi|setuptools[-_]rust|maturin|scikit[-_]build(-core)?|"
                         r"meson[-_]python|nanobind|numpy|py[-_]build[-_]cmake)\b", re.IGNORECASE)


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [s.strip() for s in f if s.strip() and not s.lstrip().startswith("#")]


# --- pyproject.toml ---------------------------------------------------------------------------------------
def toml_strings(text, i):
    """The strings of the TOML array whose '[' is text[i]; returns (strings, index after its ']')."""
    out, i = [], i + 1
    while i < len(text):
        c = text[i]
        if c == "]":
            return out, i + 1
        if c == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif c in "\"'":
            j, buf = i + 1, []
            while j < len(text) and text[j] != c:
                if c == '"' and text[j] == "\\":
                    j += 1
                buf.append(text[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            i += 1
    sys.exit("pyproject.toml: an array is not closed")


def tiny_toml(text):
    """[project].dependencies and [project.optional-dependencies] for Python 3.10, which has no tomllib."""
    deps, extras, table, skip_to = [], {}, None, 0
    pattern = (r'(?m)^[ \t]*(?:\[\[([^\]\n]+)\]\]|\[([^\[\]\n]+)\])[ \t]*(?:#.*)?$'
               r'|^[ \t]*("[^"\n]*"|[A-Za-z0-9_.-]+)[ \t]*=[ \t]*(\[)?')
    for m in re.finditer(pattern, text):
        if m.start() < skip_to:
            continue
        if m.group(1) or m.group(2):
            table = (m.group(1) or m.group(2)).strip()
            continue
        key = m.group(3).strip('"')
        if m.group(4) is None:
            continue
        if table == "project" and key == "dependencies":
            deps, skip_to = toml_strings(text, m.start(4))
        elif table == "project.optional-dependencies":
            extras[key], skip_to = toml_strings(text, m.start(4))
    return deps, extras


def cmd_reqs(pyproject, *wanted):
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib:
        with open(pyproject, "rb") as f:
            project = tomllib.load(f).get("project", {})
        deps, extras = project.get("dependencies", []), project.get("optional-dependencies", {})
    else:
        with open(pyproject, encoding="utf-8") as f:
            deps, extras = tiny_toml(f.read())
    for name in wanted:
        if name not in extras:
            sys.exit(f"{pyproject}: no extra {name!r} in [project.optional-dependencies]")
        deps = deps + extras[name]
    if not deps:
        sys.exit(f"{pyproject}: no [project].dependencies")
    print("\n".join(deps))


def cmd_name(req):
    print(norm(Requirement(req).name))


# --- pip's logs ---------------------------------------------------------------------------------------------
def cmd_network(log):
    """Prints pip's first network error in the log (exit 0), or nothing (exit 1)."""
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if NETWORK.search(line):
                print(line.strip()[:300])
                return 0
    return 1


def cmd_failed(log):
    """The requirement pip found no wheel for, from its log."""
    with open(log, encoding="utf-8", errors="replace") as f:
        found = re.findall(r"No matching distribution found for (\S[^;\n]*)", f.read())
    if found:
        print(found[-1].strip())


# --- sdists ---------------------------------------------------------------------------------------------------
def members(path):
    if path.endswith(".zip"):
        z = zipfile.ZipFile(path)
        return {n: z for n in z.namelist() if not n.endswith("/")}
    t = tarfile.open(path)
    return {m.name: t for m in t.getmembers() if m.isfile()}


def read_member(archive, name):
    if isinstance(archive, zipfile.ZipFile):
        data = archive.read(name)
    else:
        data = archive.extractfile(name).read()
    return data.decode("utf-8", "replace")


def cmd_inspect(path):
    """Exit 0 when the sdist is pure Python; else exit 3 and say what would be compiled."""
    try:
        files = members(path)
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
        print(f"cannot read {os.path.basename(path)}: {e}")
        return 3
    inner = {n.split("/", 1)[1] if "/" in n else n: n for n in files}
    why = []
    sources = [p for p in inner if SOURCE.search(p) and not set(p.lower().split("/")[:-1]) & NOT_BUILT]
    if sources:
        more = f" and {len(sources) - 5} more" if len(sources) > 5 else ""
        why.append("sources to compile: " + ", ".join(sorted(sources)[:5]) + more)
    for build_file in ("setup.py", "setup.cfg"):
        if build_file in inner:
            hits = sorted(set(BUILD_CODE.findall(read_member(files[inner[build_file]], inner[build_file]))))
            if hits:
                why.append(f"{build_file}: {', '.join(hits)}")
    if "CMakeLists.txt" in inner:
        why.append("CMakeLists.txt")
    if "pyproject.toml" in inner:
        text = read_member(files[inner["pyproject.toml"]], inner["pyproject.toml"])
        build = text.split("[build-system]", 1)[1].split("\n[", 1)[0] if "[build-system]" in text else ""
        tools = []
        for s in re.findall(r'"([^"]+)"|\'([^\']+)\'', build):
            s = s[0] or s[1]
            if BUILD_TOOLS.match(s) or re.match(r"(mesonpy|maturin|scikit_build_core|setuptools_rust)\b", s):
                tools.append(s)
        if tools:
            why.append("pyproject.toml [build-system]: " + ", ".join(tools))
    if why:
        print("; ".join(why))
        return 3
    return 0


# --- the resolved tree, with a Pi's markers -------------------------------------------------------------------
def pi_env(ver, extra=""):
    return {"python_version": ver, "python_full_version": ver + ".0", "implementation_version": ver + ".0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "platform_machine": "aarch64", "platform_system": "Linux", "sys_platform": "linux",
            "os_name": "posix", "platform_release": "", "platform_version": "", "extra": extra}


def wheels_in(dest):
    wheels = {}
    for f in sorted(os.listdir(dest)):
        if not f.endswith(".whl"):
            continue
        parts = f[:-4].split("-")
        with zipfile.ZipFile(os.path.join(dest, f)) as z:
            meta = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            msg = Parser().parsestr(z.read(meta[0]).decode("utf-8", "replace"))
        wheels[norm(parts[0])] = {"version": parts[1], "tag": "-".join(parts[-3:]),
                                  "requires": [Requirement(r) for r in msg.get_all("Requires-Dist") or []]}
    return wheels


def walk(ver, dest, reqs_file):
    """The tree a Pi installs: (wheels, needed names, version specifiers per name, requirements not met)."""
    wheels = wheels_in(dest)
    specs, missing, expanded = {}, [], {}
    pending = [(Requirement(r), "pyproject.toml", frozenset()) for r in lines(reqs_file)]
    while pending:
        req, who, asked = pending.pop()
        if req.marker is not None and not any(req.marker.evaluate(pi_env(ver, e)) for e in {""} | asked):
            continue
        name = norm(req.name)
        specs.setdefault(name, []).append((req.specifier, who))
        plain = Requirement(str(req))
        plain.marker = None
        if name not in wheels or not req.specifier.contains(wheels[name]["version"], prereleases=True):
            if str(plain) not in missing:
                missing.append(str(plain))
            continue
        extras = frozenset(norm(e) for e in req.extras)
        if name in expanded and extras <= expanded[name]:
            continue
        expanded[name] = expanded.get(name, frozenset()) | extras
        pending += [(r, name, expanded[name]) for r in wheels[name]["requires"]]
    return wheels, set(expanded), specs, missing


def cmd_active(ver, reqs_file):
    """The requirements whose markers hold on a Pi with Python ver, without their markers (pip would evaluate
    them for this machine)."""
    for line in lines(reqs_file):
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(pi_env(ver)):
            req.marker = None
            print(req)


def cmd_missing(ver, dest, reqs_file):
    """Requirements a Pi has that pip, evaluating markers for this machine, left out: one a line."""
    for req in walk(ver, dest, reqs_file)[3]:
        print(req)


def cmd_table(ver, dest, reqs_file, built_file, direct_file):
    wheels, needed, _, _ = walk(ver, dest, reqs_file)
    direct = {norm(Requirement(r).name) for r in lines(direct_file)}
    built = set(lines(built_file))
    counts = {"compiled": 0, "pure": 0, "sdist": 0}
    for name in sorted(needed):
        w = wheels[name]
        if name in built:
            source, kind = "sdist, pure Python", "sdist"
        else:
            source, kind = w["tag"], ("pure" if w["tag"].endswith("-none-any") else "compiled")
        counts[kind] += 1
        print(f"  {ver:<6} {name + (' *' if name in direct else ''):<44} {w['version']:<12} {source}")
    print(f"  {ver:<6} {len(needed)} to install: {counts['compiled']} compiled wheels for aarch64, "
          f"{counts['pure']} pure-Python wheels, {counts['sdist']} pure-Python sdists")
    host_only = sorted(set(wheels) - needed)
    if host_only:
        print(f"  {ver:<6} not installed on a Pi (markers for this machine only): {', '.join(host_only)}")


def index_versions(name, target, *extra):
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "index", "versions", *extra, *target, name]
    p = subprocess.run(cmd, capture_output=True, text=True)
    listed = re.search(r"^Available versions:(.*)$", p.stdout, re.MULTILINE)  # --json: pip >= 25 only
    if p.returncode == 0 and listed:
        found = []
        for v in listed.group(1).split(","):
            try:
                found.append(Version(v.strip()))
            except InvalidVersion:
                pass
        return found, ""
    bad = [line for line in (p.stderr + p.stdout).splitlines() if NETWORK.search(line)]
    return None, (bad[0] if bad else (p.stderr.strip().splitlines() or ["pip index failed"])[-1])[:300]


def cmd_newest(ver, dest, reqs_file, built_file, *target):
    """Exit 1 when pip on a Pi would take a newer release of a compiled package than the wheel found, and that
    release has no aarch64 wheel; 2 when the index cannot be reached."""
    wheels, needed, specs, _ = walk(ver, dest, reqs_file)
    built = set(lines(built_file))
    todo = [n for n in sorted(needed) if n not in built and not wheels[n]["tag"].endswith("-none-any")]

    def check(name):
        have = Version(wheels[name]["version"])
        versions, err = index_versions(name, target)
        if versions is None:
            return "network" if NETWORK.search(err) else "note", f"{name}: releases not listed ({err})"
        allowed = [v for v in versions if all(s.contains(v) for s, _ in specs[name])]
        newest = max(allowed, default=have)
        if newest <= have:
            return "ok", ""
        # has that release an aarch64 wheel? (`pip index versions --only-binary` is ignored by pip < 24)
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "--no-deps",
                                "--only-binary=:all:", *target, "--dest", tmp, f"{name}=={newest}"],
                               capture_output=True, text=True)
        if p.returncode == 0:
            return "ok", ""
        bad = [line for line in (p.stderr + p.stdout).splitlines() if NETWORK.search(line)]
        if bad:
            return "network", bad[0][:300]
        return "fail", (f"{name} {newest}: pip on a Pi takes this release, which has no aarch64 wheel for "
                        f"Python {ver}, and compiles it (the newest with a wheel is {have})")

    status = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        for kind, text in pool.map(check, todo):
            if kind == "network":
                print(text)
                return 2
            if kind == "fail":
                status = 1
            if text:
                print(f"  {ver:<6}  {'FAIL' if kind == 'fail' else 'note'}: {text}")
    return status


if __name__ == "__main__":
    sys.exit(globals()["cmd_" + sys.argv[1]](*sys.argv[2:]))
PYTHON

helper() { "$PY" "$HELPER" "$@"; }
pip_() { "$PY" -m pip --disable-pip-version-check --no-input "$@"; }

# exit 2 when a failed pip call's log says the index could not be reached
unreachable() {
  local line
  if line=$(helper network "$1"); then
    echo "check_aarch64.sh: pip cannot reach the package index it is configured with:" >&2
    echo "  $line" >&2
    echo "FAIL: the package index cannot be reached: nothing was checked (exit 2)"
    exit 2
  fi
}

REQS=$TMP/requirements.txt
if [ "$#" -gt 0 ]; then
  printf '%s\n' "$@" >"$REQS"
else
  helper reqs pyproject.toml pca9685 >"$REQS"
fi

# Reach every configured index first, quickly (one retry, short timeout), rather than waiting out pip's
# retries for each version; pip skips an index it cannot reach, so a partial answer would go unnoticed.
probe=$(helper name "$(head -n 1 "$REQS")")
pip_ index versions --retries 1 --timeout 20 -vv "$probe" >"$TMP/probe.log" 2>&1 || true
grep 'Could not fetch URL' "$TMP/probe.log" | grep -v ': 404 ' | head -n 1 >"$TMP/probe.err" || true
if [ -s "$TMP/probe.err" ]; then
  echo "check_aarch64.sh: pip cannot reach the package index it is configured with:" >&2
  sed 's/^/  /' "$TMP/probe.err" >&2
  echo "FAIL: the package index cannot be reached: nothing was checked (exit 2)"
  exit 2
fi

printf '%s %s; requirements: %s\n' "$("$PY" -m pip --version | cut -d' ' -f1-2)" "($PY)" \
  "$(paste -sd' ' "$REQS")"
printf '  %-6s %-44s %-12s %s\n' Python "package (* = named in pyproject.toml)" version "wheel tag, or sdist"

failed=()
check_version() {
  local ver=$1 abi=cp${1/./}
  local dest=$TMP/$abi/wheels wheelhouse=$TMP/$abi/built reqs=$TMP/$abi/requirements.txt built=$TMP/$abi/built.txt
  local log=$TMP/$abi/pip.log req name sd rc why added
  local -a target=(--platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64
                   --platform manylinux_2_28_aarch64 --platform linux_aarch64
                   --implementation cp --python-version "$ver" --abi "$abi" --abi abi3 --abi none)
  local -a files wheel
  mkdir -p "$wheelhouse"
  helper active "$ver" "$REQS" >"$reqs"
  if [ ! -s "$reqs" ]; then
    echo "  $ver    nothing to install (every requirement's marker excludes Python $ver on aarch64)"
    return 0
  fi
  : >"$built"
  for _ in $(seq 30); do
    rm -rf "$dest"
    mkdir -p "$dest"
    if pip_ download --progress-bar off --only-binary=:all: "${target[@]}" --find-links "$wheelhouse" \
         --dest "$dest" -r "$reqs" >"$log" 2>&1; then
      # markers: what a Pi needs that pip (evaluating them for this machine) left out
      added=$(helper missing "$ver" "$dest" "$reqs")
      if [ -z "$added" ]; then
        [ -n "${INDEXES:-}" ] || INDEXES=$(grep -m1 '^Looking in indexes:' "$log" || true)
        helper table "$ver" "$dest" "$reqs" "$built" "$REQS"
        rc=0
        why=$(helper newest "$ver" "$dest" "$reqs" "$built" "${target[@]}") || rc=$?
        if [ "$rc" = 2 ]; then
          echo "check_aarch64.sh: pip cannot reach the package index it is configured with:" >&2
          echo "  $why" >&2
          echo "FAIL: the package index cannot be reached: nothing was checked (exit 2)"
          exit 2
        fi
        [ -z "$why" ] || echo "$why"
        if [ "$rc" != 0 ]; then
          failed+=("Python $ver: $(sed -n 's/^ *[0-9.]* *FAIL: \([^ ]* [^ :]*\):.*/\1/p' <<<"$why" | paste -sd, -)")
        fi
        return 0
      fi
      printf '%s\n' "$added" >>"$reqs"
      continue
    fi
    unreachable "$log"
    req=$(helper failed "$log")
    if [ -z "$req" ]; then
      echo "  $ver    FAIL: pip cannot resolve the dependencies from aarch64 wheels:"
      grep -E '^(ERROR|  )' "$log" | tail -n 8 | sed 's/^/           /'
      failed+=("Python $ver: unresolvable")
      return 0
    fi
    name=$(helper name "$req")
    if grep -qx "$name" "$built"; then
      echo "  $ver    FAIL: $req: no aarch64 wheel even after building its sdist (see pip's log):"
      tail -n 5 "$log" | sed 's/^/           /'
      failed+=("Python $ver: $name")
      return 0
    fi
    # No wheel: is its sdist pure Python?
    sd=$TMP/$abi/sdist-$name
    mkdir -p "$sd"
    if ! timeout 600 "$PY" -m pip --disable-pip-version-check download --no-deps --no-binary=:all: \
           "${target[@]}" --dest "$sd" "$req" >"$sd.log" 2>&1; then
      unreachable "$sd.log"
      echo "  $ver    FAIL: $req has no aarch64 wheel for Python $ver, and no usable sdist:"
      grep -E '^ERROR' "$sd.log" | tail -n 3 | sed 's/^/           /'
      failed+=("Python $ver: $name")
      return 0
    fi
    files=("$sd"/*)
    rc=0
    why=$(helper inspect "${files[0]}") || rc=$?
    if [ "$rc" != 0 ]; then
      echo "  $ver    FAIL: $name ($(basename "${files[0]}")): no aarch64 wheel for Python $ver, and its sdist" \
           "needs compiling: ${why:-unreadable}"
      failed+=("Python $ver: $name needs compiling")
      return 0
    fi
    # pure Python: build it here into a wheel (must be py*-none-any) and resolve again with it; --use-pep517:
    # in an isolated build environment, as pip >= 25.3 always does (older ones would use this machine's)
    if ! timeout 600 "$PY" -m pip --disable-pip-version-check wheel --use-pep517 --no-deps --wheel-dir "$sd/wheel" \
           "${files[0]}" >"$sd.build.log" 2>&1; then
      unreachable "$sd.build.log"
      echo "  $ver    FAIL: $name: no aarch64 wheel, and its sdist does not build:"
      tail -n 5 "$sd.build.log" | sed 's/^/           /'
      failed+=("Python $ver: $name does not build")
      return 0
    fi
    wheel=("$sd"/wheel/*.whl)
    case ${wheel[0]} in
      *-none-any.whl) cp "${wheel[0]}" "$wheelhouse/" ;;
      *) echo "  $ver    FAIL: $name: its sdist built a compiled wheel, $(basename "${wheel[0]}")"
         failed+=("Python $ver: $name needs compiling")
         return 0 ;;
    esac
    echo "$name" >>"$built"
  done
  echo "  $ver    FAIL: gave up after 30 resolutions"
  failed+=("Python $ver: no end")
}

for ver in 3.10 3.11 3.12; do
  mkdir -p "$TMP/cp${ver/./}"
  check_version "$ver"
done

echo "${INDEXES:-Looking in indexes: as pip is configured}; took $((SECONDS - start)) s"
if [ "${#failed[@]}" -eq 0 ]; then
  echo "PASS: every runtime dependency installs from a wheel (or a pure-Python sdist) on Linux aarch64, CPython 3.10-3.12: a Pi compiles nothing"
  exit 0
fi
summary=${failed[0]}
for f in "${failed[@]:1}"; do summary="$summary; $f"; done
echo "FAIL: not installable on a Raspberry Pi (Linux aarch64) without compiling: $summary"
exit 1
