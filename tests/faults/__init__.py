"""Real faults injected into perflab's clocks with libfaketime."""
