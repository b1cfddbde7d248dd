"""One execution of a page, shared by the site and the student edition: a Sphinx extension.

The site's build executes each page's code as it reads the page (MyST-NB's inline execution, which
renders the prose's ``{eval}`` roles), and the student edition runs the same pages again for their
outputs and numbers (``chalk.teaching.plain.run``, cached under ``_build/edition-cache/``). This
extension, listed in ``_config.yml``, gives MyST-NB's inline client for a page the edition runs a
subclass (``SharedRun``) that uses the edition's cache:

* a page whose run is kept there (the edition, or an earlier build, ran it with the same notebook
  and library) is shown from it without a kernel: the cells' outputs and counts, the ``{eval}``
  values and what the kernel wrote into the notebook's metadata;
* any other page runs as before and its run is kept there, in the form and under the key that
  ``plain.run`` gives it, so that the edition does not run it again.

While it runs a page it holds ``plain.cache_lock``, as ``plain.run`` does: a build of the edition
at the same time leaves that page for last (``edition.build``) and then reads it, and the site's
build waits for a page the edition is running, then shows it. The edition's pages are the chapter
pages (``notebooks/*.ipynb``) and, on the class site (``chalk.teaching.class_site``), the student
problem sets, whose runs are kept but never shown (``may_show``). A page is run, not shown from the
cache, where the two could differ: a kept run with
an error the build does not allow (the site's ``-W`` build must fail on it) or a cell the site
removes before an ``{eval}`` (MyST-NB evaluates that one before the removed cell runs).
"""
import fcntl
import re
import time
from pathlib import Path

import nbformat
from myst_nb import sphinx_ as myst_nb_sphinx
from myst_nb.core.execute import NotebookClientInline
from myst_nb.core.execute.base import EvalNameError, NotebookClientBase

from . import class_site, edition, plain

REMOVED = ("remove-cell", "remove_cell")
"""Tags with which MyST-NB leaves a cell out of the page (it still executes a code cell so tagged
when it reaches a later one)."""


class _Build:
    """The build in progress: its source folder and library digest (set at ``builder-inited``)."""
    root: Path | None = None
    library: str | None = None


def edition_page(path: Path | None, root: Path):
    """``(notebook as the edition runs it, its name in the cache)`` if the page at ``path`` is one
    the edition runs, else None."""
    if path is None:
        return None
    path = Path(path).resolve()
    if path in [p.resolve() for p in edition.chapter_notebooks(root)]:
        return nbformat.read(path, as_version=4), edition.cache_name(path, root)
    if class_site.active() and path in [p.resolve() for p in edition.problem_sets(root)]:
        return edition.student_problem_set(path), edition.cache_name(path, root)
    return None


def may_show(path: Path, root: Path) -> bool:
    """Whether a kept run of the page at ``path`` may be shown instead of a live run: a chapter
    page's, yes; a problem set's, no. A run's key leaves out the answer keys and checks
    (``plain.NOT_RUN``: the edition ships a problem set without outputs), yet a problem set's check
    cells import them, so a check edited to raise would be shown from a run made before the edit
    and the class site's ``-W`` build would pass. Its run is still kept, for the edition."""
    return Path(path).resolve() in [p.resolve() for p in edition.chapter_notebooks(root)]


def _same_cells(a, b) -> bool:
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in a.cells] == \
        [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in b.cells]


def create_client(notebook, source, nb_config, logger, read_fmt=None):
    """MyST-NB's ``create_client``, with ``SharedRun`` for a page of the edition executed inline in
    its own folder by the kernel ``plain.run`` uses."""
    client = _myst_nb_create_client(notebook, source, nb_config, logger, read_fmt)
    if (type(client) is not NotebookClientInline or _Build.root is None or nb_config.execution_in_temp
            or notebook.metadata.get("kernelspec", {}).get("name") != "python3"):
        return client
    page = edition_page(client.path, _Build.root)
    if page is None or not _same_cells(page[0], notebook):
        return client
    nb, name = page
    cache = edition.cache_folder(_Build.root)
    return SharedRun(notebook, client.path, nb_config, logger, cache=cache, name=name,
                     entry=plain.cache_entry(cache, name, nb, _Build.library), show=may_show(client.path, _Build.root))


_myst_nb_create_client = myst_nb_sphinx.create_client


class SharedRun(NotebookClientInline):
    """MyST-NB's inline client for one page of the edition: shows the page's kept run, or runs it
    and keeps the run (see the module's docstring)."""

    def __init__(self, notebook, path, nb_config, logger, *, cache: Path, name: str, entry: Path, show: bool):
        super().__init__(notebook, path, nb_config, logger)
        self._cache, self._name, self._entry, self._may_show = cache, name, entry, show
        self._kept: plain.Run | None = None
        self._lock = None

    # -- both ways ----------------------------------------------------------------------------

    def start_client(self):
        self._entry.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(plain.cache_lock(self._cache, self._name), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX)  # the edition may be running this page now
            kept = plain.cached(self._entry)
            if kept is not None and self._may_show and self._shows_as_run(kept):
                self._show(kept)
            else:
                super().start_client()
                self._values: dict[int, dict] = {}
                self._unkept: str | None = None
        except BaseException:
            self._release()
            raise

    def close_client(self, exc_type, exc_val, exc_tb):
        try:
            if self._kept is None:
                super().close_client(exc_type, exc_val, exc_tb)
            else:
                self.exec_metadata = {"mtime": time.time(), "runtime": time.perf_counter() - self._time_start,
                                      "method": self.nb_config.execution_mode, "succeeded": True,
                                      "error": None, "traceback": None}
        finally:
            self._release()

    def _release(self):
        if self._lock is not None:
            self._lock.close()  # closing the file releases its lock
            self._lock = None

    def code_cell_outputs(self, cell_index: int):
        if self._kept is not None:
            self._position = cell_index
            return NotebookClientBase.code_cell_outputs(self, cell_index)
        cells = self.notebook.cells
        # One cell at a time, so that each Markdown cell's {eval} values are taken once the cells
        # above it ran and before the next one does, as plain.run takes them.
        while not self._cell_error and self._last_cell_executed < cell_index:
            following = self._last_cell_executed + 1
            cell = cells[following]
            if cell.cell_type == "markdown" and (names := plain.eval_names(cell.source)) and self._unkept is None:
                try:
                    self._values[following] = plain.evaluate(self._client, names, f"{self._name}, cell {following}")
                except plain.PlainError as err:  # the edition will report it when it runs the page
                    self._unkept = str(err)
            super().code_cell_outputs(following)
        return super().code_cell_outputs(cell_index)

    def eval_variable(self, name: str):
        if self._kept is None:
            return super().eval_variable(name)
        if not re.match(self.nb_config.eval_name_regex, name):
            raise EvalNameError(name)
        # The Markdown cells after the last code cell shown, up to the next code cell: MyST-NB
        # renders an {eval} among them, and the kernel's state is the same for all of them.
        for i in range(self._position + 1, len(self.notebook.cells)):
            cell = self.notebook.cells[i]
            if cell.cell_type == "code" and cell.source.strip():
                break
            if name in (values := self._kept.cells[i].get("values", {})):
                return [nbformat.v4.new_output("execute_result", data={"text/plain": values[name]})]
        raise RuntimeError(f"the kept run of {self._name} has no value for {{eval}}`{name}` here")

    def finalise_client(self):
        if self._kept is not None:
            return
        if not self._cell_error:
            self.code_cell_outputs(len(self.notebook.cells) - 1)  # cells after the last one shown
        super().finalise_client()
        if self._cell_error or self._unkept is not None:
            self.logger.info(f"not kept for the edition: {self._unkept or 'a cell failed'}")
            return
        plain.keep(self._entry, plain.record(self._client, self._values))
        self.logger.info(f"kept for the edition: {self._entry.name}")

    # -- a kept run ---------------------------------------------------------------------------

    def _shows_as_run(self, kept: plain.Run) -> bool:
        """Whether showing ``kept`` gives the page a live run would: a kept error only where the
        build allows one, and no cell the site removes run before an {eval} that MyST-NB would
        evaluate first."""
        cells = self.notebook.cells
        if len(kept.cells) != len(cells):
            return False
        for cell, ran in zip(cells, kept.cells):
            tags = cell.metadata.get("tags", [])
            if (any(o.get("output_type") == "error" for o in ran.get("outputs", []))
                    and not (self.nb_config.execution_allow_errors or "raises-exception" in tags)):
                return False
        removed_before = False
        for cell in cells:
            tags = cell.metadata.get("tags", [])
            if cell.cell_type == "code" and cell.source.strip():
                removed_before = any(t in tags for t in REMOVED)
            elif (cell.cell_type == "markdown" and removed_before and plain.eval_names(cell.source)
                  and not any(t in tags for t in REMOVED)):
                return False
        return True

    def _show(self, kept: plain.Run) -> None:
        self._kept, self._position, self._time_start = kept, -1, time.perf_counter()
        self.notebook.metadata.update(nbformat.from_dict(kept.metadata))
        for cell, ran in zip(self.notebook.cells, kept.cells):
            if cell.cell_type == "code":
                cell.outputs = [nbformat.from_dict(o) for o in ran["outputs"]]
                cell.execution_count = ran["execution_count"]
        self.logger.info(f"shown from the edition's run: {self._entry.name}")


def _start(app) -> None:
    _Build.root = Path(app.srcdir)
    _Build.library = plain.library_digest(_Build.root)


def _end(app, exception) -> None:
    _Build.root = _Build.library = None


def setup(app):
    myst_nb_sphinx.create_client = create_client  # the name MyST-NB's Sphinx parser calls
    app.connect("builder-inited", _start)
    app.connect("build-finished", _end)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
