"""ladr_lab: author, run, step through and debug LADR ladders."""
