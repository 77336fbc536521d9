"""The lesson: a stage as a deck of steps, presenter mode, moving between stages, shared links, a
question's replies. Knows nothing of the live class (ui/live)."""
