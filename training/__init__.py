"""Training, evaluation, experiments, synthetic regions and the ``thermocrop`` command line."""
