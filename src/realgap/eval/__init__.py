"""Matched evaluation: the same layout of test spots, judged the same way, in every world."""
