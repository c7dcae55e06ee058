"""Training recipes: each a single readable file with an ``Args`` dataclass and ``main(args)``."""
