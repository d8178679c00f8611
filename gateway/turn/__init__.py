"""A turn, whatever carries it: the driver (upstream frames → the writer), the run that owns a
turn from its opening to its end, and the checks on the answers a request brings."""
