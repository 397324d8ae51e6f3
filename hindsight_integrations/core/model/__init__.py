"""What the engine takes and gives: records, inputs, results, and the bounds on what callers send."""
