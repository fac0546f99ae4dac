"""The Classify form as a value: the user's choices read from the Classify tab's widgets into a
frozen dataclass, and the checks those choices must pass before anything is read from disk.

The checks here only look at the form and the chosen layer (milliseconds); the output and input
checks that open files (``layer_writer``'s and ``core.preflight``'s) follow in ``classify.py``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Optional

from qgis.core import QgsVectorLayer

from ...app import ClusterSpec, ResultFields
from ...core.errors import InputError
from ...core.inseason import DEFAULT_DECIDED_THRESHOLD
from ...core.model.calibration import DEFAULT_COVERAGE
from ..i18n import tr
from ..layer_writer import default_output_path, field_name_problems, layer_is_writable
from ..staged_sinks import layer_file
from .input_widgets import ClassifyInputs


@dataclass(frozen=True)
class ClassifyForm:
    """What the user chose on the Classify tab.

    Attributes:
        layer: the parcel layer of the project, or None when none is chosen.
        selected_only: classify only the layer's selected features.
        scenes: the ticked scene files and folders, or the saved item collection of a catalogue
            search (``from_catalog``).
        from_catalog: the scenes come from "Search a catalogue" (read with its credentials).
        weather: the daily temperature file; "" when a weather service is chosen.
        weather_service: ``open-meteo``, ``cds:e-obs``... or "" for the file.
        model: the model bundle, or None for the shipped one.
        label_field, confidence_field, status_field: the output field names as typed (stripped).
        probabilities: also write ``p_<class>``, margin and entropy.
        coverage: the prediction sets' coverage (``crop_set``, ``crop_set_size``), or None for none.
        output: the new layer file (the one chosen, else the default beside the parcel file; ""
            when there is neither), or None to write into the parcel layer's own fields.
        as_of: classify as of this date (None: every scene).
        decided: also write when each label was decided (``crop_decided``, ``crop_decided_gdd``).
        cluster: where the run goes, as chosen (its run folder not yet defaulted).
        class_shares: the CSV file of the crops' shares in the area, or None.
    """

    layer: Optional[QgsVectorLayer]
    selected_only: bool
    scenes: tuple
    from_catalog: bool
    weather: str
    weather_service: str
    model: Optional[str]
    label_field: str
    confidence_field: str
    status_field: str
    probabilities: bool
    output: Optional[str]
    coverage: Optional[float] = DEFAULT_COVERAGE
    as_of: Optional[datetime.date] = None
    decided: bool = False
    cluster: ClusterSpec = ClusterSpec()
    class_shares: Optional[str] = None

    @property
    def field_names(self) -> tuple:
        """The class, confidence and status field names."""
        return self.label_field, self.confidence_field, self.status_field

    def field_kinds(self) -> dict:
        """The result fields' types by name (the probabilities and the prediction sets come once the
        model is known: they depend on its classes and calibration)."""
        return ResultFields(*self.field_names, self.probabilities, coverage=None,
                            decided=DEFAULT_DECIDED_THRESHOLD if self.decided else None).kinds()

    def problem(self) -> Optional[str]:
        """The first thing the user must fix before a run, as a message, or None.

        In the order the form reads: the layer and its selection, the scenes, the weather, the
        field names, then the output (a file to write, or a writable layer whose fields can take
        the result).
        """
        layer = self.layer
        if layer is None:
            return tr("Choose a parcel layer.")
        if self.selected_only and layer.selectedFeatureCount() == 0:
            return tr("No feature of {layer} is selected; select parcels or untick 'Selected features "
                      "only'.").format(layer=layer.name())
        if not self.scenes and self.from_catalog:
            return tr("Search the catalogue first (Search), or untick 'Search a catalogue' to use scene files.")
        if not self.scenes:
            return tr("Tick or add at least one Sentinel-2 scene.")
        if not self.weather and not self.weather_service:
            return tr("Choose a daily temperature file, or a weather service under 'Weather'.")
        if not all(self.field_names) or len({name.lower() for name in self.field_names}) < 3:
            return tr("The class, confidence and status fields need three different names.")
        try:  # not the name of a prediction set or decision field either
            ResultFields(*self.field_names, self.probabilities, coverage=self.coverage,
                         decided=DEFAULT_DECIDED_THRESHOLD if self.decided else None)
        except InputError as e:
            return str(e)
        problem = self.cluster.problem()
        if problem:
            return problem
        if self.class_shares and self.cluster.partitioned:
            return tr("Class shares need every parcel at once: run in one process (Advanced) or clear the class "
                      "shares.")
        if self.cluster.resume and not self.cluster.run_folder and not self.output and not layer_file(layer):
            return tr("Resuming needs the run folder of the interrupted run: {layer} is not a file layer, so "
                      "give the run folder under 'Advanced'.").format(layer=layer.name())
        if self.output is not None:
            if not self.output:
                return tr("{layer} is not a file layer; choose the new layer file.").format(layer=layer.name())
            return None
        if not layer_is_writable(layer):
            return tr("{layer} is read-only; choose 'New layer file' to write the result.").format(
                layer=layer.name())
        problems = field_name_problems(layer, list(self.field_kinds()), self.probabilities)
        if problems:
            return tr("Cannot write into {layer}: {problems}. Choose other field names or a new layer "
                      "file.").format(layer=layer.name(), problems="; ".join(problems))
        return None


def read_form(inputs: ClassifyInputs) -> ClassifyForm:
    """The choices on ``inputs`` (the Classify tab's widgets) as a :class:`ClassifyForm`."""
    layer = inputs.layer_combo.currentLayer()
    service = inputs.weather_service()
    output = None
    if inputs.to_new_file.isChecked():
        output = inputs.output_file.filePath() or default_output_path(layer) or ""
    return ClassifyForm(
        layer=layer,
        selected_only=inputs.selected_only.isChecked(),
        scenes=tuple(inputs.scene_paths()),
        from_catalog=inputs.catalog.in_use(),
        # With a service the temperatures are fetched once the preflight knows the scene dates.
        weather="" if service else inputs.weather.filePath(),
        weather_service=service,
        model=inputs.model.filePath() or None,
        label_field=inputs.label_field.text().strip(),
        confidence_field=inputs.conf_field.text().strip(),
        status_field=inputs.status_field.text().strip(),
        probabilities=inputs.probabilities.isChecked(),
        output=output,
        coverage=inputs.set_coverage(),
        as_of=inputs.as_of.date().toPyDate() if inputs.as_of_on.isChecked() else None,
        decided=inputs.decided.isChecked(),
        cluster=inputs.cluster.spec(),
        class_shares=inputs.class_shares.filePath() or None,
    )
