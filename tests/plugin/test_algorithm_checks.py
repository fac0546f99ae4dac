"""The algorithms' declared parameter checks and key constants: the base class runs ``CHECKS`` in
order and answers with the first failure; every parameter and output key is a class constant of
the same name."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.qgis


def test_the_declared_checks_run_in_order_until_one_fails(qgis_app):
    from qgis.core import QgsProcessingContext, QgsProcessingParameterString

    from thermocrop.plugin.algorithms.base import ThermoCropAlgorithm

    ran = []

    def needs_text(algorithm, parameters, context):
        ran.append("text")
        text = algorithm.parameterAsString(parameters, algorithm.TEXT, context)
        return (True, "") if text else (False, "Give a text.")

    def short_text(algorithm, parameters, context):
        ran.append("short")
        text = algorithm.parameterAsString(parameters, algorithm.TEXT, context)
        return (True, "") if len(text) <= 3 else (False, f"{text!r} is longer than 3 characters.")

    class Sample(ThermoCropAlgorithm):
        NAME = "sample"
        TEXT = "TEXT"
        CHECKS = (needs_text, short_text)

        def initAlgorithm(self, config=None):  # noqa: N802
            self.add(QgsProcessingParameterString(self.TEXT, "Text", optional=True))

        def missing_modules(self) -> list:
            return []  # the sample runs no model and reads no file

    algorithm = Sample()
    algorithm.initAlgorithm()
    context = QgsProcessingContext()
    assert algorithm.checkParameterValues({"TEXT": ""}, context) == (False, "Give a text.")
    assert ran == ["text"]  # the first failure answers; the later checks do not run
    ran.clear()
    assert algorithm.checkParameterValues({"TEXT": "wheat"}, context) == (False,
                                                                          "'wheat' is longer than 3 characters.")
    assert ran == ["text", "short"]
    ran.clear()
    assert algorithm.checkParameterValues({"TEXT": "oat"}, context) == (True, "")
    assert ran == ["text", "short"]


def test_every_key_is_a_constant_of_its_own_name(provider):
    algorithms = provider.algorithms()
    assert len(algorithms) == 8
    for algorithm in algorithms:
        keys = [p.name() for p in algorithm.parameterDefinitions()] + [o.name() for o in algorithm.outputDefinitions()]
        assert keys, algorithm.id()
        unnamed = [key for key in keys if getattr(type(algorithm), key, None) != key]
        assert unnamed == [], f"{algorithm.id()} has no constant for {unnamed}"
        assert all(callable(check) for check in algorithm.CHECKS) and algorithm.CHECKS, algorithm.id()


@pytest.mark.parametrize("name", ["calibratemodel", "inseasonaccuracy", "exporttrainingdata"])
def test_a_label_field_the_layer_lacks_is_named_before_the_run(provider, tiny_region, tmp_path, name):
    """A layer given by its path is not checked by QGIS against its field parameters: the run read
    the missing field and failed with a KeyError traceback."""
    from qgis.core import QgsProcessingContext

    algorithm = provider.algorithm(name)
    parameters = {"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "CROP_TYPE",
                  "SCENE_FOLDER": str(tiny_region / "scenes"), "WEATHER": str(tiny_region / "weather.nc"),
                  "OUTPUT": str(tmp_path / ("out.tcm" if name == "calibratemodel" else "out"))}
    ok, message = algorithm.checkParameterValues(parameters, QgsProcessingContext())
    assert not ok
    assert message.startswith("The layer parcels has no field 'CROP_TYPE' (LABEL_FIELD); its fields are ")
    assert "parcel_id" in message and "crop" in message
    parameters["LABEL_FIELD"] = "crop"
    ok, message = algorithm.checkParameterValues(parameters, QgsProcessingContext())
    assert "CROP_TYPE" not in message and "has no field" not in message
