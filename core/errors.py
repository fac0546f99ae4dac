"""The exceptions ThermoCrop raises: one hierarchy, messages that say what to do."""


class ThermoCropError(Exception):
    """Base class of every error ThermoCrop raises on purpose."""


class InputError(ThermoCropError):
    """A user-supplied file, layer, field or argument cannot be used as given."""


class WeatherError(InputError):
    """A temperature file cannot provide the days or places that are asked for."""


class GDDGapError(WeatherError):
    """A daily temperature record has a gap too long to fill."""


class SceneError(InputError):
    """A Sentinel-2 scene or product cannot be read or understood."""


class ExtractionError(ThermoCropError):
    """Pixel sets could not be extracted for the parcels as a whole."""


class DatasetError(InputError):
    """A pixel-set dataset on disk is missing, incomplete or of another format."""


class BundleError(InputError):
    """A model bundle is corrupt, truncated, of another version or does not fit its model."""


class DependencyError(ThermoCropError):
    """A Python package ThermoCrop needs, or the interpreter to install it with, cannot be had."""


class CancelledError(ThermoCropError):
    """The user cancelled a long-running job; nothing was written."""


class OutputError(ThermoCropError):
    """An output cannot be written where asked, or writing it failed; nothing was replaced."""


class NoUsableParcelsError(ThermoCropError):
    """A run finished without a single parcel it could process; the message counts the parcels
    by status and says what each status points to."""
