"""A compiler cache for the test suite: every runtime kernel compiled once per session.

Most of the suite's time went into compiling the same firmware/runtime/*.c
files again for every model: `mcu-plan check` builds each generated
directory twice (normal and -DMCU_PLAN_CHECK), the flash measurement and the
board Makefiles compile it again for a Cortex-M, and the runtime files are
the same bytes in all of them.  tests/conftest.py puts a directory of shims
named like the compilers (`cc`, `gcc`, `arm-none-eabi-gcc`) first on PATH;
each shim runs `main` here, which

- compiles a `-c` of one C file through the cache: the object is keyed by
  the compiler, its flags (paths of the source, the object and the include
  directories left out) and the bytes of the source and of every header it
  can include from its own or an -I directory, found the way the compiler
  finds them; a system header counts by its name (stable within a session);
- splits a compile-and-link of C files (the host build of `check`) into
  such compiles and one link of their objects;
- hands every other command (and any source whose headers it cannot
  follow: a computed #include, __has_include, -include) to the real compiler
  unchanged.

A failed compile is never stored, so a warning (-Werror) or an error is
reported by every build that meets it.  Objects land in the session's cache
directory under a temporary name and are renamed into place, so two xdist
workers may compile the same file at once.  Only the standard library is
imported here: the shims start Python with -S.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The environment variable that names the session's cache directory.
CACHE_ENV = "MCU_PLAN_TEST_COMPILER_CACHE"
# Compilers the shims stand in for (each only when installed).
SHIMMED_COMPILERS = ("cc", "gcc", "arm-none-eabi-gcc")
# A file in the shims' directory, which the search for the real compiler skips.
_SHIM_MARKER = ".compiler-shims"
# Bump when the key's recipe changes.
_KEY_VERSION = b"compiler-cache 1"

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.M)
_ANY_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include", re.M)
# Options after which the next argument is a path (not part of the key as text).
_PATH_OPTIONS = {"-o", "-I", "-iquote"}
# -ffile-prefix-map=OLD=NEW and the like: OLD is the build directory.
_PREFIX_MAPS = ("-ffile-prefix-map=", "-fdebug-prefix-map=", "-fmacro-prefix-map=")
# Options the cache does not model: such a command runs as it is.
_UNMODELLED = (
    "-E",
    "-S",
    "-M",
    "-MM",
    "-MF",
    "-MT",
    "-MQ",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iprefix",
    "-x",
    "-",
    "-save-temps",
    "-flto",
    "--version",
    "-v",
    "-###",
)


class _Uncacheable(Exception):
    pass


def real_compiler(name: str) -> str:
    """The compiler `name` on PATH past the shims (a link gains nothing from the cache)."""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or (Path(directory) / _SHIM_MARKER).exists():
            continue
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise FileNotFoundError(name)


def _tool_identity(path: str) -> bytes:
    stat = os.stat(path)
    return f"{os.path.realpath(path)} {stat.st_size} {stat.st_mtime_ns}".encode()


def _include_dirs(args: list[str]) -> tuple[list[Path], list[Path]]:
    """(-iquote dirs, -I dirs) in command-line order."""
    quote: list[Path] = []
    dirs: list[Path] = []
    i = 0
    while i < len(args):
        arg = args[i]
        for option, into in (("-iquote", quote), ("-I", dirs)):
            if arg == option:
                into.append(Path(args[i + 1]))
                i += 1
                break
            if arg.startswith(option) and len(arg) > len(option) and not arg.startswith("-include"):
                into.append(Path(arg[len(option) :]))
                break
        i += 1
    return quote, dirs


def _find(name: str, directories: list[Path]) -> Path | None:
    for directory in directories:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _dependencies(source: Path, quote: list[Path], dirs: list[Path]) -> list[bytes]:
    """Every header `source` can include, by spelling and content, found as
    the compiler finds it: a quoted name in the including file's directory,
    then -iquote, then -I; an angled one in -I.  Names found in none of
    them are system headers and count by their spelling."""
    parts: list[bytes] = []
    seen: set[Path] = set()
    pending = [source]
    while pending:
        current = pending.pop()
        text = current.read_bytes()
        if b"__has_include" in text or len(_ANY_INCLUDE.findall(text)) != len(_INCLUDE.findall(text)):
            raise _Uncacheable(f"{current}: an #include the cache cannot follow")
        for kind, spelled in _INCLUDE.findall(text):
            name = spelled.decode()
            search = ([current.parent, *quote] if kind == b'"' else []) + dirs
            found = _find(name, search)
            if found is None:
                parts.append(b"system " + kind + spelled)
                continue
            found = found.resolve()
            parts.append(b"header " + kind + spelled + b" " + hashlib.sha256(found.read_bytes()).digest())
            if found not in seen:
                seen.add(found)
                pending.append(found)
    return parts


def _object_key(tool: str, flags: list[str], source: Path) -> str:
    """Key of compiling `source` with `flags` (no source, no -o) by `tool`."""
    quote, dirs = _include_dirs(flags)
    digest = hashlib.sha256(_KEY_VERSION)
    digest.update(_tool_identity(tool))
    skip_next = False
    for flag in flags:
        if skip_next:
            skip_next = False
            continue
        if flag in _PATH_OPTIONS:
            skip_next = True
            continue
        if flag.startswith(("-I", "-iquote")):
            continue
        if flag.startswith(_PREFIX_MAPS):
            # Where the build ran is mapped away in the object: only the new prefix counts.
            flag = flag.split("=", 1)[0] + "=" + flag.rsplit("=", 1)[-1]
        digest.update(b"\0flag " + flag.encode())
    digest.update(b"\0source " + hashlib.sha256(source.read_bytes()).digest())
    for part in sorted(_dependencies(source, quote, dirs)):
        digest.update(b"\0" + part)
    return digest.hexdigest()


def _store(cache: Path, key: str, suffix: str, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=cache, prefix=f".{key}", suffix=suffix)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(temporary, cache / f"{key}{suffix}")


def _compile_one(tool: str, flags: list[str], source: str, output: str, cache: Path) -> int:
    """Compile `source` to `output` through the cache; the compiler's exit status."""
    dependency_file = "-MMD" in flags
    try:
        key = _object_key(tool, flags, Path(source))
    except (_Uncacheable, OSError):
        return subprocess.call([tool, *flags, "-c", source, "-o", output])
    cached = cache / f"{key}.o"
    if cached.is_file():
        shutil.copyfile(cached, output)
        if dependency_file:
            template = (cache / f"{key}.d").read_text()
            Path(output).with_suffix(".d").write_text(template.replace("@OBJECT@", output).replace("@SOURCE@", source))
        sys.stderr.write((cache / f"{key}.err").read_text())
        return 0
    done = subprocess.run([tool, *flags, "-c", source, "-o", output], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        return done.returncode
    if dependency_file:
        made = Path(output).with_suffix(".d").read_text()
        _store(cache, key, ".d", made.replace(output, "@OBJECT@").replace(source, "@SOURCE@").encode())
    _store(cache, key, ".err", done.stderr.encode())
    _store(cache, key, ".o", Path(output).read_bytes())
    return 0


def _split(args: list[str]) -> tuple[list[str], list[str], str | None, bool]:
    """(flags, C sources, -o path, -c given) of a command line."""
    flags: list[str] = []
    sources: list[str] = []
    output = None
    compile_only = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-o" and i + 1 < len(args):
            output = args[i + 1]
            i += 2
            continue
        if arg == "-c":
            compile_only = True
        elif arg.endswith(".c") and not arg.startswith("-"):
            sources.append(arg)
        else:
            flags.append(arg)
        i += 1
    return flags, sources, output, compile_only


def _link_only(arg: str) -> bool:
    return arg.startswith(("-l", "-L", "-Wl,", "--specs", "-nostartfiles", "-T")) or arg.endswith((".o", ".a"))


def run(name: str, args: list[str]) -> int:
    try:
        tool = real_compiler(name)
    except FileNotFoundError:
        sys.stderr.write(f"{name}: command not found\n")
        return 127
    cache_dir = os.environ.get(CACHE_ENV)
    flags, sources, output, compile_only = _split(args)
    modelled = (
        cache_dir is not None
        and output is not None
        and sources
        and not any(a in _UNMODELLED or a.startswith("@") for a in args)
    )
    if not modelled:
        os.execv(tool, [tool, *args])
    cache = Path(cache_dir) / "objects"  # type: ignore[arg-type]
    cache.mkdir(parents=True, exist_ok=True)
    assert output is not None
    if compile_only:
        if len(sources) != 1:
            os.execv(tool, [tool, *args])
        return _compile_one(tool, flags, sources[0], output, cache)
    compile_flags = [f for f in flags if not _link_only(f)]
    with tempfile.TemporaryDirectory(prefix="objects-", dir=Path(output).resolve().parent) as scratch:
        objects = []
        for index, source in enumerate(sources):
            objects.append(str(Path(scratch) / f"{index}_{Path(source).stem}.o"))
            status = _compile_one(tool, compile_flags, source, objects[-1], cache)
            if status != 0:
                return status
        linked = iter(objects)
        command = [next(linked) if a in sources else a for a in args]
        return subprocess.call([tool, *command])


def install_shims(cache_dir: Path) -> Path:
    """Write the compiler shims into `cache_dir`/bin (for the compilers on
    PATH) and return that directory, to go first on PATH."""
    bin_dir = cache_dir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / _SHIM_MARKER).touch()
    here = Path(__file__).resolve().parent.parent
    for name in SHIMMED_COMPILERS:
        if shutil.which(name) is None:
            continue
        shim = bin_dir / name
        shim.write_text(
            f"#!{sys.executable} -S\n"
            f"import sys\nsys.path.insert(0, {str(here)!r})\n"
            "from mcu_planner_testing.compiler_cache import run\n"
            f"sys.exit(run({name!r}, sys.argv[1:]))\n"
        )
        shim.chmod(0o755)
    return bin_dir
