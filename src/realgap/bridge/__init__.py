"""The sim/real bridge: one hardware contract, fake and real backends, a safety layer,
camera locking, and the env and deployment loop that run a policy on any world."""
