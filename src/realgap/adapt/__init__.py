"""``realgap adapt``: measure an arm, build its twin, retrain, prove the gain."""
