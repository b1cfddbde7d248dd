"""The suite's own plumbing (conftest): which build failure is retried, and the order of the files."""
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
    marks = []
    return SimpleNamespace(path=Path(name), fixturenames=fixtures, name=name, marks=marks,
                           callspec=SimpleNamespace(params=params), add_marker=marks.append)


def test_long_files_go_first_and_each_file_is_one_unit_unless_split(monkeypatch):
    started = []
    monkeypatch.setattr(conftest, "_start_site_build", lambda: started.append(True))
    monkeypatch.delenv("CHALK_SITE", raising=False)
    items = [fake_item("test_a11y.py", "built_site", chunk=1), fake_item("test_a11y.py"), fake_item("test_calculator.py"),
             fake_item("test_site.py", "built_site"), fake_item("test_lab.py", lab="student"),
             fake_item("test_lab.py", lab="source"), fake_item("test_student_edition.py"),
             fake_item("test_reader.py", "built_site", "phone"), fake_item("test_reader.py", "desktop", viewport="phone")]
    conftest.pytest_collection_modifyitems(None, items)
    # no site first, then the site's readers, then the short files; a file's tests keep their order
    assert [i.name for i in items] == ["test_lab.py", "test_lab.py", "test_student_edition.py", "test_a11y.py",
                                       "test_a11y.py", "test_reader.py", "test_reader.py", "test_site.py",
                                       "test_calculator.py"]
    assert [i.marks[0].args[0] for i in items] == [
        "test_lab.py[student]", "test_lab.py[source]", "test_student_edition.py", "test_a11y.py[1]", "test_a11y.py",
        "test_reader.py[phone]", "test_reader.py[phone]", "test_site.py", "test_calculator.py"]
    assert all(i.marks[0].name == "xdist_group" for i in items)
    assert started == [True]  # a collected test reads the site: its build starts now
    started.clear()
    conftest.pytest_collection_modifyitems(None, [fake_item("test_moe.py")])
    assert started == []  # nothing reads it: no build
