"""The student edition where a student runs it: an empty virtual environment (no system site
packages) holding only the wheel the edition ships, Jupyter's kernel (ipykernel) and a notebook
runner (nbclient), installed from the package index as a student would.

Every problem set runs there once, filled in by turns with the right answer, the first typical
mistake (both computed here from the instructor's key) and nothing: each check says right, wrong
with that mistake's hint, or not answered, so the sealed key gives the feedback the plain key
gives (one run per set covers the three verdicts). The environment must not hold the plain keys,
``myst_nb`` or the grader, and every import of the chapter notebooks must resolve in it.

The environment is made and filled by uv (``uv venv``, ``uv pip install``: the same wheels from the
same index as pip, without pip's CPU: 3 s of it against pip's 31 s for the venv and the install);
without a reachable index the test is skipped, except in CI.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import nbformat
import pytest
from uv import find_uv_bin

from chalk.teaching import edition
from chalk.teaching.exercises import problem_set
from conftest import ROOT
from key_answers import right_answer, slip, unanswered_words

PROBE = textwrap.dedent('''\
    import importlib.util, json, re, sys
    from pathlib import Path
    import nbformat
    from nbclient import NotebookClient

    def missing(module):
        try:
            return importlib.util.find_spec(module) is None
        except ModuleNotFoundError:  # a parent package is absent
            return True

    out_dir, answers, imports = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
    found = {"missing": {m: missing(m) for m in ("chalk.teaching.problems", "chalk.teaching.grading", "myst_nb")}}

    def checks(nb):
        texts = {}
        for cell in nb.cells:
            m = re.fullmatch(r'check\\("(\\w+)", \\w+\\)', cell.source.strip())
            if m:
                texts[m.group(1)] = " ".join(o.get("data", {}).get("text/plain", "") + o.get("ename", "")
                                             for o in cell.outputs)
        return texts

    found["runs"] = {}
    for path in sorted((out_dir / "exercises").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for ex_id, value in answers[path.stem].items():
                cell.source = re.sub(rf"^{ex_id} = \\.\\.\\.  # your answer$", f"{ex_id} = {value!r}",
                                     cell.source, flags=re.M)
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        found["runs"][path.stem] = checks(nb)
    from chalk.teaching.exercises import problem_set
    found["expected_attr"] = any(hasattr(e, "expected") for e in problem_set(path.stem).values())
    found["imports"] = {}
    for line in imports:
        try:
            exec(line, {})
            found["imports"][line] = "ok"
        except Exception as err:
            found["imports"][line] = f"{type(err).__name__}: {err}"
    print("PROBE" + json.dumps(found))
''')
_OFFLINE = re.compile(r"dns error|tcp connect error|network was disabled")
"""uv's words for an index it cannot reach (an unknown host, a refused connection, --offline); a
mirror that answers with an error (a 404, a bad certificate) fails the test, it is not skipped."""


PIP_SOURCES = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
               "constraint": "--constraint"}
"""pip's settings that decide which wheels a student's install gets, and uv's option for each."""


def pip_index_options(listed: str) -> list[str]:
    """uv's options for the package sources pip is configured with (``pip config list``'s lines, from
    its files and PIP_* variables): uv reads no pip.conf, and a machine whose index is a mirror named
    there (as on this project's CI machines) must give uv the same sources. uv takes a package from
    the first index that has it unless told to weigh every index's versions, as pip does."""
    sources, no_index = {}, False
    for line in listed.splitlines():
        m = re.fullmatch(r"[^.]*\.([\w-]+)='(.*)'", line.strip())
        if m and m.group(1) in PIP_SOURCES:
            sources[m.group(1)] = m.group(2).split()  # a later line (PIP_* over a file) wins, as for pip
        elif m and m.group(1) == "no-index":
            no_index = m.group(2).lower() in ("1", "true", "yes", "on")
    return (["--index-strategy", "unsafe-best-match"] + (["--no-index"] if no_index else [])
            + [arg for key, values in sources.items() for value in values for arg in (PIP_SOURCES[key], value)])


RIGHT, SLIP, BLANK = 0, 1, 2
"""What the k-th exercise of a set is given: k % 3."""


def answers_to_type():
    """{problem set: {id: value}}: the right answer, the first typical mistake or (left out, so the
    cell keeps its placeholder) nothing, by turns."""
    typed = {}
    for src in edition.problem_sets():
        exercises = list(problem_set(src.stem).values())
        typed[src.stem] = {ex.id: (right_answer(ex) if k % 3 == RIGHT else slip(ex)[0])
                           for k, ex in enumerate(exercises) if k % 3 != BLANK}
    return typed


def chapter_imports():
    lines = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                lines |= {ln.strip() for ln in cell.source.splitlines() if re.match(r"(import|from) \S", ln)}
    return sorted(lines)


@pytest.fixture(scope="module")
def student_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("student-env")
    edition.build(tmp / "student")
    wheel = next((tmp / "student").glob("*.whl"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")}
    env.update(HOME=str(tmp / "home"), JUPYTER_PATH="", JUPYTER_DATA_DIR=str(tmp / "jupyter"),
               MPLCONFIGDIR=str(tmp / "mpl"))
    venv, uv = tmp / "venv", find_uv_bin()
    subprocess.run([uv, "venv", "-q", "--no-config", "--python", sys.executable, str(venv)], check=True, env=env,
                   timeout=300)
    python = venv / "bin" / "python"
    # uv compiles no bytecode (pip's --no-compile): the modules the kernels import are compiled on
    # first import and kept (as on a student's machine: the first kernel compiles, the others reuse).
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            timeout=300).stdout
    install = subprocess.run([uv, "pip", "install", "-q", "--no-config", *pip_index_options(listed),
                              "--python", str(python), str(wheel),
                              "ipykernel", "nbclient"], env=env, capture_output=True, text=True, timeout=900)
    if install.returncode != 0:
        if _OFFLINE.search(install.stdout + install.stderr) and os.environ.get("CI") != "true":
            pytest.skip("no package index reachable to build a student's environment:\n" + install.stderr[-1000:])
        pytest.fail(f"uv could not install the student edition:\n{(install.stdout + install.stderr)[-3000:]}")
    probe = subprocess.run([str(python), "-c", PROBE, str(tmp / "student"), json.dumps(answers_to_type()),
                            json.dumps(chapter_imports())], env=env, capture_output=True, text=True, timeout=1500,
                           cwd=tmp)
    assert probe.returncode == 0, probe.stderr[-3000:]
    line = next(ln for ln in probe.stdout.splitlines() if ln.startswith("PROBE"))
    return json.loads(line[len("PROBE"):])


def test_the_environment_has_no_plain_key_no_grader_and_no_myst_nb(student_env):
    assert student_env["missing"] == {"chalk.teaching.problems": True, "chalk.teaching.grading": True, "myst_nb": True}
    assert student_env["expected_attr"] is False


@pytest.mark.parametrize("src", edition.problem_sets(), ids=lambda p: p.stem)
def test_each_check_says_right_the_mistakes_hint_or_not_answered(student_env, src):
    checks = student_env["runs"][src.stem]
    assert set(checks) == set(problem_set(src.stem))
    for k, ex in enumerate(problem_set(src.stem).values()):
        text = checks[ex.id]
        if k % 3 == RIGHT:
            assert text.startswith(f"[right] {ex.id}:"), (ex.id, text)
        elif k % 3 == SLIP:
            assert text.startswith(f"[wrong] {ex.id}:") and slip(ex)[1] in text, (ex.id, text)
        else:
            assert text.startswith(f"[unanswered] {ex.id}: {unanswered_words(ex)}"), (ex.id, text)


def test_every_import_of_the_chapters_resolves(student_env):
    failed = {line: why for line, why in student_env["imports"].items() if why != "ok"}
    assert student_env["imports"] and not failed, failed


def test_uv_is_given_the_package_sources_pip_is_configured_with():
    listed = ("global.extra-index-url='file:///opt/pypi/simple file:///opt/more/simple'\n"
              "global.find-links='/opt/wheels'\nglobal.cert='/etc/ssl/certs/ca.crt'\n"
              "global.constraint='/etc/xdg/pip/constraints.txt'\n"
              "global.index-url='https://mirror.example/simple'\n:env:.index-url='https://env.example/simple'\n")
    assert pip_index_options(listed) == [
        "--index-strategy", "unsafe-best-match",
        "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/more/simple",
        "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt",
        "--index-url", "https://env.example/simple"]
    assert pip_index_options("global.timeout='60'\n:env:.no-index='true'\n") == [
        "--index-strategy", "unsafe-best-match", "--no-index"]
