"""seer-consensus: an example of a SEER plug-in env package (consensus_v0)."""
