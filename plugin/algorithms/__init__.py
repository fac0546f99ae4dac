"""ThermoCrop's Processing algorithms, one per module."""
