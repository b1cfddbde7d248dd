"""The suite's own plumbing (conftest): which build failure is retried, and the order of the files."""
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import conftest

RACE = """zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:35615')

Exception occurred:
  File ".../jupyter_client/client.py", line 207, in _async_wait_for_ready
    raise RuntimeError(msg)
RuntimeError: Kernel died before replying to kernel_info"""


def test_only_a_kernel_that_lost_its_port_is_built_again():
    assert conftest.PORT_RACE.search(RACE)
    assert not conftest.PORT_RACE.search("RuntimeError: Kernel died before replying to kernel_info")  # a crash
    assert not conftest.PORT_RACE.search("CellExecutionError: ZeroDivisionError")


def fake_item(name, *fixtures, **params):
    return SimpleNamespace(path=Path(name), fixturenames=fixtures, name=name, nodeid=f"tests/{name}::{params}",
                           callspec=SimpleNamespace(params=params))


def test_long_files_go_first_and_each_file_is_one_unit_unless_split(monkeypatch):
    started = []
    monkeypatch.setattr(conftest, "_start_site_build", lambda: started.append(True))
    monkeypatch.delenv("CHALK_SITE", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    items = [fake_item("test_a11y.py", "built_site", chunk=1), fake_item("test_a11y.py"), fake_item("test_calculator.py"),
             fake_item("test_site.py", "built_site"), fake_item("test_zz.py", "built_site"),
             fake_item("test_lab.py", lab="student"), fake_item("test_lab.py", lab="source"),
             fake_item("test_student_edition.py"), fake_item("test_reader.py", "built_site", "phone"),
             fake_item("test_reader.py", "desktop", viewport="phone"), fake_item("test_reader.py", "built_site")]
    conftest.pytest_collection_modifyitems(None, items)
    # the long files that need no site, the short ones, the site's long readers, the short readers
    assert [i.name for i in items] == ["test_lab.py", "test_lab.py", "test_student_edition.py", "test_calculator.py",
                                       "test_reader.py", "test_reader.py", "test_reader.py", "test_a11y.py",
                                       "test_a11y.py", "test_site.py", "test_zz.py"]
    assert [conftest.work_unit(i) for i in items] == [
        "test_lab.py[student]", "test_lab.py[source]", "test_student_edition.py", "test_calculator.py",
        "test_reader.py[phone]", "test_reader.py[phone]", "test_reader.py", "test_a11y.py[1]", "test_a11y.py",
        "test_site.py", "test_zz.py"]
    assert started == [True]  # a collected test reads the site: its build starts now
    started.clear()
    conftest.pytest_collection_modifyitems(None, [fake_item("test_moe.py")])
    assert started == []  # nothing reads it: no build


SUITE = {
    "test_lab.py": """import pytest
@pytest.fixture(scope="module", params=["source", "student"])
def lab(request):
    return request.param
""" + "".join(f"def test_{i}(lab):\n    pass\n" for i in range(4)),
    "test_moe.py": "".join(f"def test_{i}():\n    pass\n" for i in range(4)),
}


def test_two_workers_run_each_unit_whole(tmp_path):
    """End to end, under xdist with the Makefile's options: every test of a unit runs on one worker
    (xdist's own loadgroup had silently sent tests one by one, a module's costly fixture made twice)."""
    (tmp_path / "tests").mkdir()
    shutil.copy(conftest.__file__, tmp_path / "tests" / "conftest.py")
    for name, text in SUITE.items():
        (tmp_path / "tests" / name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--no-loadscope-reorder", "-v",
                          "-p", "no:cacheprovider", "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\] .*PASSED (\S+)", run.stdout)
    assert len(ran) == 12, run.stdout[-3000:]
    workers = defaultdict(set)
    for worker, test in ran:
        unit = "moe" if "test_moe" in test else re.search(r"\[(\w+)\]", test).group(1)
        workers[unit].add(worker)
    assert sorted(workers) == ["moe", "source", "student"] and all(len(w) == 1 for w in workers.values()), workers
    assert not list((tmp_path / "_build").glob(".work-units-*")), "the controller leaves its map behind"


class FakeNode:
    """A worker as xdist's scheduler sees it: the tests it was sent, in order."""
    def __init__(self, name):
        self.gateway, self.shutting_down, self.sent = SimpleNamespace(id=name), False, []

    def send_runtest_some(self, indices):
        self.sent += indices

    def shutdown(self):
        self.shutting_down = True


def test_a_node_takes_one_unit_beyond_the_one_it_runs():
    """Three one-test units (the accessibility chunks) after two long units: the node that finishes
    first holds one chunk beyond the one it runs, and the other node, once free, gets the third
    (xdist's own rule gave the first node all three)."""
    units = {**{f"t.py::{i}": "t" for i in range(4)}, **{f"u.py::{i}": "u" for i in range(6)},
             **{f"a.py::{c}": c for c in ("c0", "c1", "c2")}}
    collection = list(units)
    config = SimpleNamespace(getvalue={"numprocesses": 2, "tx": ["2*popen"]}.get,
                             option=SimpleNamespace(loadscopereorder=False, numprocesses=2, dist="loadscope"))
    sched = conftest.UnitScheduling(config)
    sched._units = units
    first, second = FakeNode("gw0"), FakeNode("gw1")
    for node in (first, second):
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    for node, tests in ((first, 4), (second, 5)):  # the first node's long unit ends first
        for index in list(node.sent[:tests]):
            sched.mark_test_complete(node, index)
    assert [collection[i] for i in first.sent[4:]] == ["a.py::c0", "a.py::c1"]
    assert [collection[i] for i in second.sent[6:]] == ["a.py::c2"]
