"""A pass that only refills a pool's free slots, touching the changed nodes and its targets,
never every member: the pool's ledger (:mod:`mcd.model.pool.ledger`) and the hand-out of
targets to the writers."""
