"""The sandbox each submission's kernel runs in: bubblewrap (``bwrap``, Debian's package
``bubblewrap``), with resource limits set by a small launcher before the kernel starts.

Inside it a kernel sees the system's programs and libraries read-only (``/usr``), the Python it
runs and the libraries of the grader's environment read-only, the student package read-only, and
its own folder (``box_paths``): scratch folders (working folder, ``HOME``, temporary files) on a
tmpfs of ``SCRATCH_BYTES``, its sockets' folder on a tmpfs of ``SOCKETS_BYTES`` (the grader
reaches it through the sandbox's ``/proc/<pid>/root``, ``reach``), and the check log, the one file
of the disk it may write. Not the repository, not another submission, not the grader's output folder.
It has its own PID namespace (its ``/proc`` shows only its own processes; when the kernel ends,
everything it started ends with it), no network (Jupyter's messages go over Unix sockets in its
folder), and limits on address space, processes, file size, CPU time and core files. Run as root,
the launcher also drops to ``nobody`` before the kernel starts, so that the process limit counts.

There is no fallback: without a working ``bwrap`` the grader stops and says how to install it.
"""
import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from ..errors import ChalkError

NOBODY = 65534
"""The user a root grader's kernels run as."""
LIMITS = {"RLIMIT_AS": 4 * 2 ** 30, "RLIMIT_FSIZE": 64 * 2 ** 20, "RLIMIT_NPROC": 256, "RLIMIT_CORE": 0}
"""Per kernel: 4 GiB of address space, files of at most 64 MiB, 256 processes and threads (on top
of what the instructor's account runs, when it is not root), no core dumps. CPU time is the
notebook's time limit plus a margin (``launcher_args``)."""
SCRATCH_BYTES = 256 * 2 ** 20
"""What a kernel may write: its folders (``SCRATCH_FOLDERS``) share one tmpfs of this size, and its
/tmp is another, so a notebook that fills them gets "no space left" and the disk is untouched."""
SOCKETS_BYTES = 2 ** 20
"""The tmpfs of the kernel's sockets' folder: sockets take no space, so a notebook that writes files
there is stopped at this size instead of filling the disk."""
SCRATCH_FOLDERS = ("work", "home", "tmp", "ipython", "mpl")
"""Under ``box/scratch``: the working folder, HOME, TMPDIR, IPYTHONDIR and MPLCONFIGDIR."""
INSTALL = "apt-get install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora)"


class SandboxError(ChalkError):
    """No working bubblewrap: the message says what failed and how to install it."""


LAUNCHER = '''\
"""Set the kernel's limits, drop to {uid} when started as root, then become the kernel."""
import json, os, resource, sys
limits, rest = json.loads(sys.argv[1]), sys.argv[2:]
if os.getuid() == 0:
    os.setgroups([])
    os.setgid({uid})
    os.setuid({uid})
for name, value in limits.items():
    resource.setrlimit(getattr(resource, name), (value, value))
# the kernel's parent is PID 1 of its namespace, which ipykernel's poller takes for an orphaning;
# bwrap's --die-with-parent ends the sandbox with the grader instead
os.environ.pop("JPY_PARENT_PID", None)
# ipykernel without its debugger: importing debugpy is a quarter of a kernel's start, and no
# grading run is debugged (ipykernel runs without it when the import fails)
kernel = "import sys; sys.modules['debugpy'] = None; from ipykernel import kernelapp; kernelapp.launch_new_instance()"
os.execv(sys.executable, [sys.executable, "-c", kernel, *rest])
'''


def launcher(uid: int = NOBODY) -> str:
    """The launcher's source: it drops to ``uid`` (and that uid's group) when started as root."""
    return LAUNCHER.replace("{uid}", str(int(uid)))


def bwrap() -> str:
    """The path of a working ``bwrap``, else a ``SandboxError`` saying how to get one."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError(f"SANDBOX: bubblewrap (bwrap) is not installed, and the grader runs every "
                           f"submission in it; install it ({INSTALL}) and grade again")
    probe = subprocess.run([path, *_system(), "--unshare-pid", "--unshare-net", "--die-with-parent", "--",
                            "/bin/true" if Path("/bin/true").exists() else "/usr/bin/true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        raise SandboxError(f"SANDBOX: {path} cannot start a sandbox here ({probe.stderr.strip()[:200]}); "
                           f"it needs user namespaces, or root")
    return path


@functools.lru_cache(maxsize=None)
def sized(tool: str) -> bool:
    """Whether ``tool`` can size a tmpfs (``--size``, bubblewrap 0.7 and later)."""
    probe = subprocess.run([tool, *_system(), "--size", str(2 ** 20), "--tmpfs", "/scratch", "--",
                            "/bin/true" if Path("/bin/true").exists() else "/usr/bin/true"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def _system(size: int | None = None) -> list[str]:
    """The system's programs and libraries, read-only, and fresh /proc, /dev and /tmp (of ``size``
    bytes when given)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    args += ["--perms", "0755", "--dir", "/etc"]  # bwrap would make it 0700: closed to nobody
    for name in ("/etc/ld.so.cache", "/etc/localtime"):
        if Path(name).exists():
            args += ["--ro-bind", name, name]
    tmp = ["--size", str(size), "--tmpfs", "/tmp"] if size else ["--tmpfs", "/tmp"]
    return args + ["--proc", "/proc", "--dev", "/dev", *tmp]


def _bind(source: Path, writable: bool = False) -> list[str]:
    """Bind ``source`` at its own path, its parents created traversable (bwrap makes them 0700)."""
    parents = [str(p) for p in reversed(source.parents) if str(p) not in ("/", "/tmp")]
    made = [a for p in parents for a in ("--perms", "0755", "--dir", p)]
    return made + ["--bind" if writable else "--ro-bind", str(source), str(source)]


def python_folders() -> list[Path]:
    """What the kernel's Python needs read-only: the base interpreter and this environment's libraries."""
    folders = {Path(sys.base_prefix).resolve()}
    folders |= {Path(sysconfig.get_path(p)).resolve() for p in ("purelib", "platlib")}
    return sorted(folders)


def box_paths(box: Path) -> dict[str, Path]:
    """Where a kernel's things are in its ``box``: ``conn`` (its sockets), ``connection`` (the
    connection file, read-only to it) and ``log`` (the check log), which the grader reads from
    outside, and the ``SCRATCH_FOLDERS``."""
    return {"conn": box / "conn", "connection": box / "kernel.json", "log": box / "checks.jsonl",
            **{name: box / "scratch" / name for name in SCRATCH_FOLDERS}}


def _box(tool: str, box: Path) -> list[str]:
    """``box`` read-only but for its check log, its sockets' folder and its scratch folders: those
    two on tmpfs of ``SOCKETS_BYTES`` and ``SCRATCH_BYTES`` where this bwrap can size one, else
    bound from the disk (each file then limited by RLIMIT_FSIZE only)."""
    paths = box_paths(box)
    args = _bind(box) + ["--bind", str(paths["log"]), str(paths["log"])]
    if not sized(tool):
        return args + ["--bind", str(paths["conn"]), str(paths["conn"]), "--bind", str(box / "scratch"), str(box / "scratch")]
    args += ["--perms", "01777", "--size", str(SOCKETS_BYTES), "--tmpfs", str(paths["conn"])]
    args += ["--perms", "01777", "--size", str(SCRATCH_BYTES), "--tmpfs", str(box / "scratch")]
    for name in SCRATCH_FOLDERS:  # writable by the user the launcher drops to, whoever owns the tmpfs
        args += ["--perms", "0777", "--dir", str(paths[name])]
    return args


def command(tool: str, box: Path, package: Path, kernel_python: Path, launcher: Path, seconds: float,
            font_list: Path | None = None) -> list[str]:
    """The kernel's argv: bwrap around the launcher around ipykernel's kernel.

    ``box`` is the submission's folder (``box_paths``); ``package``, the folder holding the batch's
    student package, is bound read-only at ``box/lib`` (one copy for every kernel of a batch: none
    can change it); ``kernel_python`` is the folder of the kernel's virtual environment;
    ``font_list``, matplotlib's font list written once for the batch, is bound read-only into the
    kernel's MPLCONFIGDIR, so that its matplotlib does not scan the fonts again."""
    root = os.getuid() == 0
    args = [tool, *_system(SCRATCH_BYTES if sized(tool) else None)]
    for folder in python_folders():
        args += _bind(folder)
    args += _bind(kernel_python) + _bind(launcher.parent) + _box(tool, box) + ["--ro-bind", str(package), str(box / "lib")]
    if font_list:
        args += ["--ro-bind", str(font_list), str(box_paths(box)["mpl"] / font_list.name)]
    args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--chdir", str(box_paths(box)["work"])]
    if root:  # the launcher's setuid to nobody needs these two, and keeps neither
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    limits = dict(LIMITS, RLIMIT_CPU=int(seconds) + 30)
    if not root:
        limits["RLIMIT_NPROC"] += _own_processes()
    python = kernel_python / "bin" / "python"
    return [*args, "--", str(python), str(launcher), json.dumps(limits), "-f", "{connection_file}"]


def reach(tool: str, bwrap_pid: int, path: Path, wait: float = 30) -> str:
    """``path`` of the sandbox that the ``bwrap`` process ``bwrap_pid`` started, as the grader
    reaches it: through ``/proc/<pid>/root`` of the sandbox's first process, where the sandbox
    mounts its own tmpfs (``_box``); ``path`` itself where this bwrap binds it from the disk."""
    if not sized(tool):
        return str(path)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and _state(Path(f"/proc/{bwrap_pid}"))[0] not in ("", "Z"):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _state(entry)[1] == bwrap_pid:
                return f"/proc/{entry.name}/root{path}"
        time.sleep(0.01)
    raise SandboxError(f"SANDBOX: the sandbox of bwrap (pid {bwrap_pid}) did not start (within {wait:g} s)")


def _state(process: Path) -> tuple[str, int]:
    """(state letter, parent pid) of the ``/proc/<pid>`` folder ``process``; ("", 0) once it is gone."""
    try:
        fields = (process / "stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return "", 0


def _own_processes() -> int:
    """Processes and threads of this account now (RLIMIT_NPROC counts them all, not just the kernel's)."""
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(entry / "task"))
        except OSError:
            continue
    return count


def hand_over(box: Path, uid: int = NOBODY) -> None:
    """Make ``box`` the kernel's: owned by ``uid`` when the grader is root (the launcher drops to it)."""
    if os.getuid() != 0:
        return
    for path in [box, *box.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)
