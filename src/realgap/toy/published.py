"""The tutorial's published tables (mean over seeds), for side-by-side comparison.

Masses 0.5, 1, 2, 3. The policy table was published to three decimals, the
width and adaptation tables to two.
"""

POLICIES = {
    "open_loop_nominal": [0.574, 0.010, 0.427, 0.601],
    "open_loop_randomized": [0.805, 0.151, 0.349, 0.548],
    "feedback_nominal": [0.005, 0.010, 0.126, 0.255],
    "feedback_randomized": [0.023, 0.007, 0.052, 0.124],
    "feedback_randomized_sees_mass": [0.040, 0.025, 0.030, 0.027],
}
WIDTH = {
    "nominal": [0.01, 0.01, 0.13, 0.26],
    "0.8-1.25": [0.00, 0.01, 0.12, 0.25],
    "0.5-2.0": [0.01, 0.01, 0.09, 0.19],
    "0.5-3.0": [0.02, 0.00, 0.06, 0.13],
    "0.3-5.0": [0.03, 0.02, 0.03, 0.09],
}
ADAPTATION = {
    "teacher": [0.04, 0.02, 0.03, 0.03],
    "adapted": [0.03, 0.02, 0.03, 0.08],
    "blind": [0.02, 0.00, 0.06, 0.13],
}
TABLES = {"policies": POLICIES, "width": WIDTH, "adaptation": ADAPTATION}
DECIMALS = {"policies": 3, "width": 2, "adaptation": 2}


def deviations(tables: dict, rounded: bool = True) -> dict[str, float]:
    """Largest |measured - published| per table.

    With ``rounded`` the measured mean is first rounded to the published digits
    (the fair comparison); without, the raw difference is returned.
    """
    worst = {}
    for name, published in TABLES.items():
        digits = DECIMALS[name] if rounded else None
        worst[name] = max(
            abs((round(measured, digits) if rounded else measured) - ref)
            for row, refs in published.items()
            for measured, ref in zip(tables[name][row]["mean"], refs)
        )
    return worst
