"""The lab's foundations, imported by everything and importing nothing of the package:
the label encoding and the regimes (labels), the metrics, the convergence criterion,
where generated files live (paths), the numerics version of the run keys, and the
registries' module discovery.
"""
