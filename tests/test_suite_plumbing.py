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


def test_the_guide_goes_first_and_the_sites_readers_last(monkeypatch):
    started = []
    monkeypatch.setattr(conftest, "_start_site_build", lambda: started.append(True))
    monkeypatch.delenv("CHALK_SITE", raising=False)

    def item(name, *fixtures):
        return SimpleNamespace(path=Path(name), fixturenames=fixtures, name=name)

    items = [item("test_a11y.py", "built_site"), item("test_calculator.py"), item("test_instructors_guide.py"),
             item("test_site.py", "built_site", "chromium_browser"), item("test_moe.py")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["test_instructors_guide.py", "test_calculator.py", "test_moe.py",
                                       "test_a11y.py", "test_site.py"]
    assert started == [True]  # a collected test reads the site: its build starts now
    started.clear()
    conftest.pytest_collection_modifyitems(None, [item("test_moe.py")])
    assert started == []  # nothing reads it: no build
