"""What the dock's Train and Accuracy panels share: one background task at a time, started with
its Cancel button enabled, cancelled on demand, and forgotten (without calling back) when the
panel goes away."""

from __future__ import annotations

from typing import Optional

from qgis.core import Qgis, QgsApplication

from .task import ThermoCropTask


class TaskPanelMixin:
    """For a widget with a ``cancel_button``, a ``status`` label and a ``message`` signal that runs one :class:`ThermoCropTask` at a time.

    The panel starts its task with :meth:`launch` and calls :meth:`task_ended` first thing in the
    task's ``on_done``.
    """

    task: Optional[ThermoCropTask] = None

    def _refuse(self, text: str) -> None:
        """Show why the panel does not start (a warning in its status line and the dock's bar)."""
        self._show(text, Qgis.Warning)
        return None

    def _show(self, text: str, level: int) -> None:
        """``text`` in the panel's ``status`` line, coloured by ``level``, and in its ``message``."""
        colour = {Qgis.Critical: "#b71c1c", Qgis.Warning: "#8a5a00"}.get(level)
        self.status.setStyleSheet(f"color: {colour};" if colour else "")
        self.status.setText(text)
        self.message.emit(text, level)

    def reference_layer_changed(self, _layer=None) -> None:
        """Another layer was chosen: the last run's text, which was of the layer it ran on, goes (a
        run going on says its result when it ends). A bound method, so that Qt drops the
        connection when the panel is deleted."""
        if self.task is None:
            self.status.clear()

    def launch(self, task: ThermoCropTask) -> ThermoCropTask:
        """Hand ``task`` to QGIS's task manager; Cancel stops it until it ends."""
        self.task = task
        self.cancel_button.setEnabled(True)
        QgsApplication.taskManager().addTask(task)
        return task

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def task_ended(self) -> None:
        """The panel runs nothing any more (the task's ``on_done`` calls this first)."""
        self.task = None
        self.cancel_button.setEnabled(False)

    def shutdown(self) -> None:
        """Cancel a running task and forget it (the panel is going away)."""
        if self.task is not None:
            self.task.on_done = None
            self.task.cancel()
            self.task = None
