"""Gap diagnostics and calibration: measure what differs between the twin and the arm."""
