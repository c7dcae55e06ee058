"""Sweeps: many training runs and their matched evaluations, scheduled on Ray.

``spec`` reads a sweep file, ``jobs`` trains or evaluates one run (no Ray),
``ray_runner`` (the only module importing Ray) schedules them, ``results`` and
``report`` turn finished folders into tables, the width plot and a report.
"""
